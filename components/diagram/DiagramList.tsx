"use client";
import { PANIC_COLOR } from "./flow";
import { useSyncExternalStore } from "react";
import { RouteMenu } from "@/components/routes/RouteMenu";
import { algorithmLabel, plural, routeColor, statusStyle } from "@/core/format";
import { effectiveRouteId } from "@/core/topology";
import { protocolSummary } from "@/core/inbound-protocols";
import type { DiagramIndex, InboundData } from "./topology-index";
import { MoveMenu } from "./MoveMenu";
import { selectCanEdit, selectClusterId, useDiagramStore } from "./store";
import { FlagText } from "@/components/ui/Flag";
import { RouteTitle } from "./RouteTitle";

/** Below this width the diagram's boxes are too small to read or drag: the list is the default. */
export const NARROW_QUERY = "(max-width: 639.98px)";

const subscribeNarrow = (onChange: () => void) => {
  const mq = window.matchMedia(NARROW_QUERY);
  mq.addEventListener("change", onChange);
  return () => mq.removeEventListener("change", onChange);
};

/** Whether the screen is narrow now (false while rendering on the server). */
export function useIsNarrow(): boolean {
  return useSyncExternalStore(
    subscribeNarrow,
    () => window.matchMedia(NARROW_QUERY).matches,
    () => false,
  );
}

export const listInboundDomId = (inboundId: string) => `list-inbound-${inboundId}`;
export const listRouteDomId = (routeId: string) => `list-route-${routeId}`;

/**
 * The topology as a list, for screens too narrow for the diagram: each route in order
 * with its inbounds, then the Unassigned ones. Moving goes through the same "Move to…"
 * menu the diagram's chips have, so no drag is needed.
 */
export function DiagramList({ index }: { index: DiagramIndex }) {
  const clusterId = useDiagramStore(selectClusterId);
  const routes = index.data.routes;
  return (
    <div className="h-full overflow-y-auto p-3 sm:p-5" data-testid="diagram-list">
      <ol className="mx-auto flex max-w-3xl flex-col gap-3" aria-label="Routes">
        {routes.map((route, position) => {
          const members = index.inboundsByRoute.get(route.id) ?? [];
          const panic = index.panicByRoute.get(route.id);
          return (
            <li key={route.id}>
              <section
                id={listRouteDomId(route.id)}
                aria-label={`Route ${route.name}`}
                data-route-id={route.id}
                data-panic={panic ? true : undefined}
                className={`rounded-xl border-2 bg-white shadow-sm ${members.length === 0 ? "border-dashed border-slate-400" : ""}`}
                style={members.length === 0 ? undefined : { borderColor: panic ? PANIC_COLOR : routeColor(position) }}
              >
                <header className="flex items-start gap-2 border-b border-slate-100 px-3 py-2">
                  <div className="min-w-0 flex-1">
                    <h3 className="flex items-center gap-1.5 font-semibold text-slate-900">
                      <RouteTitle route={route} position={position} />
                    </h3>
                    {panic && <p className="text-xs font-medium text-red-700">{panic.reason}</p>}
                    <p className="text-xs text-slate-500">
                      {algorithmLabel(route.algorithm)} · {members.length === 0 ? "Empty, hidden from users" : plural(members.length, "inbound")}
                    </p>
                  </div>
                  <RouteMenu clusterId={clusterId} route={{ id: route.id, name: route.name, flag: route.flag, algorithm: route.algorithm }} />
                </header>
                <InboundRows inbounds={members} index={index} empty="No inbounds" />
              </section>
            </li>
          );
        })}
        <li>
          <section aria-label="Unassigned inbounds" data-testid="list-unassigned" className="rounded-xl border-2 border-dashed border-slate-300 bg-slate-50">
            <header className="border-b border-slate-200 px-3 py-2">
              <h3 className="font-semibold text-slate-700">Unassigned</h3>
              <p className="text-xs text-slate-500">In no route: no user gets these.</p>
            </header>
            <InboundRows inbounds={index.unassigned} index={index} empty="None" />
          </section>
        </li>
      </ol>
    </div>
  );
}

function InboundRows({ inbounds, index, empty }: { inbounds: readonly InboundData[]; index: DiagramIndex; empty: string }) {
  const canEdit = useDiagramStore(selectCanEdit);
  if (inbounds.length === 0) return <p className="px-3 py-2 text-sm italic text-slate-500">{empty}</p>;
  return (
    <ul className="divide-y divide-slate-100">
      {inbounds.map((inbound) => {
        const server = index.serverById.get(inbound.serverId);
        const st = statusStyle(server?.status ?? "pending");
        return (
          <li key={inbound.id} id={listInboundDomId(inbound.id)} tabIndex={-1} data-inbound-id={inbound.id} className="flex items-center gap-2 px-3 py-2 focus:bg-sky-50 focus:outline-none">
            <span aria-hidden className={`h-2.5 w-2.5 shrink-0 rounded-full ${inbound.unavailable ? "bg-red-600" : st.dot}`} title={inbound.unavailable ? `Unavailable: ${inbound.unavailable}` : st.label} />
            <div className="min-w-0 flex-1">
              <div className="truncate text-sm font-medium text-slate-900">
                <FlagText text={inbound.name} />
              </div>
              <div className="truncate text-xs text-slate-600">
                {server?.name ?? "?"} · <span className={st.text}>{st.label}</span>
                {/* Its server does not serve it (issue 25): handed to no one, whatever the server's status. */}
                {inbound.unavailable && <span className="font-medium text-red-700" title={inbound.unavailable}> · Unavailable: {inbound.unavailable}</span>}
              </div>
              <div className="truncate text-xs text-slate-600">
                {protocolSummary(inbound)} :{inbound.port} · {plural(inbound.users, "user")}
                {inbound.isFallback ? " · fallback" : ""}
              </div>
            </div>
            {canEdit && <MoveMenu inbound={inbound} current={effectiveRouteId(inbound, index.routeById)} />}
          </li>
        );
      })}
    </ul>
  );
}
