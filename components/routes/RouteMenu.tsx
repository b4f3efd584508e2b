"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useLayoutEffect, useRef, useState } from "react";
import { createPortal } from "react-dom";
import { useCanEdit } from "@/components/AppShell";
import { ConfirmDialog } from "@/components/ui/Dialog";
import { ImpactSummary } from "@/components/ui/ImpactDialog";
import { impactOf } from "@/core/impact";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { RouteWizard } from "./RouteWizard";
import { FlagText } from "@/components/ui/Flag";

/** Two items and their padding, with room to spare. */
const MENU_HEIGHT_PX = 90;

/** Edit / delete actions of one route box; viewers don't see them. */
export function RouteMenu({ clusterId, route }: { clusterId: string; route: { id: string; name: string; flag: string | null; algorithm: string } }) {
  const canEdit = useCanEdit();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [menuOpen, setMenuOpen] = useState(false);
  // On top of everything (the diagram's boxes overlap and clip what a box holds), below the
  // button or, near the bottom of the window, above it.
  const [pos, setPos] = useState<{ right: number; top?: number; bottom?: number } | null>(null);
  const buttonRef = useRef<HTMLButtonElement>(null);
  const menuRef = useRef<HTMLDivElement>(null);
  const [dialog, setDialog] = useState<"edit" | "delete" | null>(null);
  const wrapper = useRef<HTMLDivElement>(null);
  const topology = useQuery({ ...trpc.topology.get.queryOptions({ clusterId }), enabled: dialog === "delete" });
  const remove = useMutation(
    trpc.routes.delete.mutationOptions({
      onSuccess: async () => {
        await queryClient.invalidateQueries({ queryKey: trpc.topology.get.queryKey() });
        setDialog(null);
      },
    }),
  );

  useLayoutEffect(() => {
    if (!menuOpen || !buttonRef.current) return;
    const r = buttonRef.current.getBoundingClientRect();
    const right = Math.max(8, window.innerWidth - r.right);
    setPos(r.bottom + 4 + MENU_HEIGHT_PX > window.innerHeight ? { right, bottom: window.innerHeight - r.top + 4 } : { right, top: r.bottom + 4 });
  }, [menuOpen]);

  useEffect(() => {
    if (!menuOpen) return;
    const inside = (t: EventTarget | null) => wrapper.current?.contains(t as Node) || menuRef.current?.contains(t as Node);
    const close = (e: MouseEvent | KeyboardEvent) => {
      if (e instanceof KeyboardEvent ? e.key === "Escape" : !inside(e.target)) setMenuOpen(false);
    };
    // The menu stays where it opened: panning, zooming or resizing closes it.
    const closeNow = (e: Event) => {
      if (!inside(e.target)) setMenuOpen(false);
    };
    document.addEventListener("mousedown", close);
    document.addEventListener("keydown", close);
    document.addEventListener("wheel", closeNow, { passive: true });
    window.addEventListener("resize", closeNow);
    return () => {
      document.removeEventListener("mousedown", close);
      document.removeEventListener("keydown", close);
      document.removeEventListener("wheel", closeNow);
      window.removeEventListener("resize", closeNow);
    };
  }, [menuOpen]);

  if (!canEdit) return null;
  const inboundCount = topology.data?.inbounds.filter((i) => i.routeId === route.id).length;

  const item = "block w-full px-3 py-1.5 text-left text-sm hover:bg-slate-100 focus:bg-slate-100 focus:outline-none";
  return (
    <div ref={wrapper} className="relative inline-block">
      <button
        type="button"
        aria-label={`Actions for route ${route.name}`}
        aria-haspopup="menu"
        aria-expanded={menuOpen}
        ref={buttonRef}
        onClick={() => setMenuOpen((o) => !o)}
        className="nodrag rounded px-1.5 py-0.5 text-slate-500 hover:bg-slate-100 hover:text-slate-900"
      >
        <span aria-hidden="true">⋯</span>
      </button>
      {menuOpen &&
        createPortal(
          <div
            ref={menuRef}
            role="menu"
            aria-label={`Route ${route.name}`}
            style={{ position: "fixed", right: pos?.right ?? -9999, top: pos?.top, bottom: pos?.bottom }}
            className="z-50 w-44 rounded-md border border-slate-200 bg-white py-1 shadow-lg"
          >
            <button
              role="menuitem"
              type="button"
              className={item}
              autoFocus
              onClick={() => {
                setMenuOpen(false);
                setDialog("edit");
              }}
            >
              Edit route…
            </button>
            <button
              role="menuitem"
              type="button"
              className={`${item} text-red-700`}
              onClick={() => {
                setMenuOpen(false);
                remove.reset();
                setDialog("delete");
              }}
            >
              Delete route…
            </button>
          </div>,
          document.body,
        )}
      {dialog === "edit" && <RouteWizard clusterId={clusterId} route={route} onClose={() => setDialog(null)} />}
      {dialog === "delete" && (
        <ConfirmDialog
          title={`Delete route ${route.name}?`}
          confirmLabel="Delete route"
          pending={remove.isPending}
          error={remove.error ? errorMessage(remove.error) : null}
          onClose={() => setDialog(null)}
          onConfirm={() => remove.mutate({ routeId: route.id })}
        >
          {inboundCount === 0 ? (
            <p>It has no inbounds, so users see no change.</p>
          ) : (
            <p>
              {inboundCount === undefined
                ? "Its inbounds become unassigned"
                : `Its ${inboundCount} inbound${inboundCount === 1 ? "" : "s"} become${inboundCount === 1 ? "s" : ""} unassigned`}{" "}
              and users lose the <strong>
                <FlagText text={route.name} />
              </strong> line in their server list.
            </p>
          )}
          {topology.data && <ImpactSummary impact={impactOf({ kind: "delete-route", routeId: route.id }, topology.data)} />}
          <p className="text-slate-500">The inbounds themselves are kept; you can put them in another route.</p>
        </ConfirmDialog>
      )}
    </div>
  );
}
