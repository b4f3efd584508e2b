"use client";
import { useEffect, useId, useLayoutEffect, useRef, useState } from "react";
import { createPortal } from "react-dom";
import type { Target } from "./topology-index";
import { selectActions, useDiagramStore, type DiagramState, type MoveTarget } from "./store";
import { FlagText } from "@/components/ui/Flag";

const NO_TARGETS: readonly MoveTarget[] = [];
/** The targets only while the menu is open: a closed menu does not re-render when they change. */
const selectTargetsIf = (open: boolean) => (open ? (s: DiagramState) => s.targets : () => NO_TARGETS);

/**
 * "Move <inbound> to…": the menu way of doing what a drag does (routes and Unassigned).
 * `current` is where the inbound is now (null: Unassigned).
 */
export function MoveMenu({ inbound, current }: { inbound: { id: string; name: string }; current: Target }) {
  const { move } = useDiagramStore(selectActions);
  const [open, setOpen] = useState(false);
  const targets = useDiagramStore(selectTargetsIf(open));
  const [pos, setPos] = useState<{ left: number; top: number; maxHeight: number } | null>(null);
  const buttonRef = useRef<HTMLButtonElement>(null);
  const menuRef = useRef<HTMLDivElement>(null);
  const menuId = useId();

  useLayoutEffect(() => {
    if (!open || !buttonRef.current) return;
    const r = buttonRef.current.getBoundingClientRect();
    const below = window.innerHeight - r.bottom - 8;
    const above = r.top - 8;
    const wanted = Math.min(360, (targets.length + 1) * 34 + 12);
    if (below >= wanted || below >= above) setPos({ left: Math.min(r.left, window.innerWidth - 260), top: r.bottom + 4, maxHeight: Math.max(120, below) });
    else setPos({ left: Math.min(r.left, window.innerWidth - 260), top: Math.max(8, r.top - 4 - Math.min(wanted, above)), maxHeight: above });
  }, [open, targets.length]);

  useEffect(() => {
    if (!open) return;
    const items = () => Array.from(menuRef.current?.querySelectorAll<HTMLButtonElement>("[role=menuitem]") ?? []);
    // Focus the current target first, so Enter on it is a no-op and arrows move from there.
    requestAnimationFrame(() => (items().find((el) => el.getAttribute("aria-current") === "true") ?? items()[0])?.focus());
    const onDown = (e: PointerEvent) => {
      if (!menuRef.current?.contains(e.target as Node) && !buttonRef.current?.contains(e.target as Node)) setOpen(false);
    };
    const close = () => setOpen(false);
    document.addEventListener("pointerdown", onDown, true);
    window.addEventListener("resize", close);
    return () => {
      document.removeEventListener("pointerdown", onDown, true);
      window.removeEventListener("resize", close);
    };
  }, [open]);

  const onMenuKey = (e: React.KeyboardEvent) => {
    const items = Array.from(menuRef.current?.querySelectorAll<HTMLButtonElement>("[role=menuitem]") ?? []);
    const at = items.indexOf(document.activeElement as HTMLButtonElement);
    const focus = (i: number) => items[(i + items.length) % items.length]?.focus();
    if (e.key === "ArrowDown") focus(at + 1);
    else if (e.key === "ArrowUp") focus(at - 1);
    else if (e.key === "Home") focus(0);
    else if (e.key === "End") focus(items.length - 1);
    else if (e.key === "Escape" || e.key === "Tab") {
      setOpen(false);
      buttonRef.current?.focus();
    } else return;
    e.preventDefault();
    e.stopPropagation();
  };

  const choose = (t: Target) => {
    setOpen(false);
    buttonRef.current?.focus();
    if (t !== current) move(inbound.id, t);
  };

  return (
    <>
      <button
        ref={buttonRef}
        type="button"
        aria-label={`Move ${inbound.name} to…`}
        aria-haspopup="menu"
        aria-expanded={open}
        aria-controls={open ? menuId : undefined}
        title="Move to…"
        onClick={() => setOpen((o) => !o)}
        className="nodrag nopan grid h-7 w-7 shrink-0 place-items-center rounded-md text-slate-500 hover:bg-slate-200 hover:text-slate-900 focus-visible:outline-2 focus-visible:outline-sky-600"
      >
        <svg aria-hidden viewBox="0 0 20 20" className="h-4 w-4" fill="currentColor">
          <circle cx="4" cy="10" r="1.7" />
          <circle cx="10" cy="10" r="1.7" />
          <circle cx="16" cy="10" r="1.7" />
        </svg>
      </button>
      {open &&
        createPortal(
          <div
            ref={menuRef}
            id={menuId}
            role="menu"
            aria-label={`Move ${inbound.name} to`}
            onKeyDown={onMenuKey}
            style={{ position: "fixed", left: pos?.left ?? -9999, top: pos?.top ?? -9999, maxHeight: pos?.maxHeight }}
            className="z-50 w-64 overflow-auto rounded-lg border border-slate-200 bg-white py-1 text-sm shadow-xl"
          >
            <div className="px-3 py-1.5 text-xs font-semibold uppercase tracking-wide text-slate-500" aria-hidden>
              Move to…
            </div>
            {targets.map(({ target: t, name }) => (
              <button
                key={t ?? "unassigned"}
                type="button"
                role="menuitem"
                aria-current={t === current ? "true" : undefined}
                onClick={() => choose(t)}
                className="flex w-full items-center gap-2 px-3 py-1.5 text-left hover:bg-sky-50 focus:bg-sky-100 focus:outline-none aria-[current=true]:font-semibold"
              >
                <span className="min-w-0 flex-1 truncate">
                  <FlagText text={name} />
                </span>
                {t === current && (
                  <span aria-hidden className="text-sky-600">
                    ✓
                  </span>
                )}
              </button>
            ))}
          </div>,
          document.body,
        )}
    </>
  );
}
