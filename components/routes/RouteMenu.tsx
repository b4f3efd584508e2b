"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { useCanEdit } from "@/components/AppShell";
import { ConfirmDialog } from "@/components/ui/Dialog";
import { ImpactSummary } from "@/components/ui/ImpactDialog";
import { impactOf } from "@/core/impact";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { RouteWizard } from "./RouteWizard";

/** Two items and their padding, with room to spare. */
const MENU_HEIGHT_PX = 90;

/** Edit / delete actions of one route box; viewers don't see them. */
export function RouteMenu({ clusterId, route }: { clusterId: string; route: { id: string; name: string; flag: string | null; algorithm: string } }) {
  const canEdit = useCanEdit();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [menuOpen, setMenuOpen] = useState(false);
  // Opens upwards when the box sits near the bottom of the diagram (or the window), which clips it.
  const [openUp, setOpenUp] = useState(false);
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

  useEffect(() => {
    if (!menuOpen) return;
    const close = (e: MouseEvent | KeyboardEvent) => {
      if (e instanceof KeyboardEvent ? e.key === "Escape" : !wrapper.current?.contains(e.target as Node)) setMenuOpen(false);
    };
    document.addEventListener("mousedown", close);
    document.addEventListener("keydown", close);
    return () => {
      document.removeEventListener("mousedown", close);
      document.removeEventListener("keydown", close);
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
        onClick={(e) => {
          const button = e.currentTarget.getBoundingClientRect();
          const frame = e.currentTarget.closest(".react-flow")?.getBoundingClientRect();
          const bottom = Math.min(frame?.bottom ?? window.innerHeight, window.innerHeight);
          setOpenUp(button.bottom + MENU_HEIGHT_PX > bottom);
          setMenuOpen((o) => !o);
        }}
        className="nodrag rounded px-1.5 py-0.5 text-slate-500 hover:bg-slate-100 hover:text-slate-900"
      >
        <span aria-hidden="true">⋯</span>
      </button>
      {menuOpen && (
        <div role="menu" aria-label={`Route ${route.name}`} className={`nodrag absolute right-0 z-20 ${openUp ? "bottom-full mb-1" : "mt-1"} w-44 rounded-md border border-slate-200 bg-white py-1 shadow-lg`}>
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
        </div>
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
              and users lose the <strong>{route.name}</strong> line in their server list.
            </p>
          )}
          {topology.data && <ImpactSummary impact={impactOf({ kind: "delete-route", routeId: route.id }, topology.data)} />}
          <p className="text-slate-500">The inbounds themselves are kept; you can put them in another route.</p>
        </ConfirmDialog>
      )}
    </div>
  );
}
