"use client";
import { usePathname } from "next/navigation";
import { useEffect, useId, useRef, useState } from "react";
import { NavLinks, OperatorLabel } from "./NavLinks";
import type { CurrentOperator } from "./operator";

/**
 * Below the md breakpoint the header's links and account buttons fold into one "Menu"
 * button: a disclosure that opens a panel under the header. Escape or a click outside
 * closes it and gives focus back to the button; following a link closes it too.
 */
export function MobileMenu(props: { operator: CurrentOperator; onChangePassword(): void; onTwoFactor(): void; onLogout(): void; loggingOut: boolean }) {
  const { operator } = props;
  const [open, setOpen] = useState(false);
  const buttonRef = useRef<HTMLButtonElement>(null);
  const panelRef = useRef<HTMLDivElement>(null);
  const panelId = useId();
  const pathname = usePathname();
  const [openedAt, setOpenedAt] = useState(pathname);
  // A navigation (a link in the panel, or back/forward) closes the menu.
  if (open && openedAt !== pathname) {
    setOpen(false);
    setOpenedAt(pathname);
  }

  useEffect(() => {
    if (!open) return;
    panelRef.current?.querySelector<HTMLElement>("a, button")?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      setOpen(false);
      buttonRef.current?.focus();
    };
    const onDown = (e: PointerEvent) => {
      const t = e.target as Node;
      if (!panelRef.current?.contains(t) && !buttonRef.current?.contains(t)) setOpen(false);
    };
    document.addEventListener("keydown", onKey);
    document.addEventListener("pointerdown", onDown, true);
    return () => {
      document.removeEventListener("keydown", onKey);
      document.removeEventListener("pointerdown", onDown, true);
    };
  }, [open]);

  const close = () => setOpen(false);
  const item = "block rounded-md px-3 py-2.5 text-left text-slate-200 hover:bg-slate-800 hover:text-white";
  return (
    <div className="ml-auto md:hidden">
      <button
        ref={buttonRef}
        type="button"
        aria-expanded={open}
        aria-controls={panelId}
        onClick={() => {
          setOpenedAt(pathname);
          setOpen((o) => !o);
        }}
        className="flex items-center gap-2 rounded-md border border-slate-600 px-3 py-1.5 text-sm hover:bg-slate-800"
      >
        <svg aria-hidden viewBox="0 0 20 20" className="h-4 w-4" fill="none" stroke="currentColor" strokeWidth="2" strokeLinecap="round">
          {open ? <path d="M5 5l10 10M15 5L5 15" /> : <path d="M3 5h14M3 10h14M3 15h14" />}
        </svg>
        Menu
      </button>
      {open && (
        <div
          ref={panelRef}
          id={panelId}
          // Tabbing out of the panel closes it, as a click outside does.
          onBlur={(e) => {
            const to = e.relatedTarget as Node | null;
            if (to && !panelRef.current?.contains(to) && !buttonRef.current?.contains(to)) setOpen(false);
          }}
          className="absolute inset-x-0 top-full z-40 border-b border-slate-800 bg-slate-900 px-4 pb-4 pt-2 text-sm shadow-xl"
        >
          <nav aria-label="Main" className="flex flex-col">
            <NavLinks role={operator.role} linkClass={item} onNavigate={close} />
          </nav>
          <div className="mt-2 flex flex-col border-t border-slate-700 pt-3">
            <div className="px-3 pb-2 text-slate-300">
              <OperatorLabel operator={operator} />
            </div>
            <button
              type="button"
              className={item}
              onClick={() => {
                close();
                props.onChangePassword();
              }}
            >
              Change password
            </button>
            <button
              type="button"
              className={item}
              onClick={() => {
                close();
                props.onTwoFactor();
              }}
            >
              Two-factor
            </button>
            <button type="button" className={item} onClick={props.onLogout} disabled={props.loggingOut}>
              Log out
            </button>
          </div>
        </div>
      )}
    </div>
  );
}
