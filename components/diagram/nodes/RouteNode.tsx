"use client";
import { useDraggable, useDroppable } from "@dnd-kit/core";
import { Handle, Position, type NodeProps } from "@xyflow/react";
import { memo } from "react";
import { RouteMenu } from "@/components/routes/RouteMenu";
import { routeDomId } from "../topology-index";
import { selectActions, selectCanEdit, selectClusterId, selectIsCarryTarget, selectIsRouteHighlighted, useDiagramStore } from "../store";
import { algorithmLabel, formatBps, plural, routeFlagPrefix, statusStyle } from "@/core/format";
import { PANIC_COLOR } from "../flow";
import { ITEM_HEIGHT, ROUTE_HEADER } from "../layout";
import { useZoomLevel } from "../useZoomLevel";
import { COMPACT_FONT_PX } from "../viewport";
import styles from "../diagram.module.css";
import type { RouteBox, RouteRowData } from "./types";
import { useRowDrag } from "./useRowDrag";
import { FlagText } from "@/components/ui/Flag";
import { RouteTitle } from "../RouteTitle";

export const routeDropId = (id: string) => `route-drop:${id}`;
export const routeDragId = (id: string) => `route-drag:${id}`;

/** One inbound of a route: its server's status, the users the balancer gave it, its traffic now. */
function InboundRow({ row: i }: { row: RouteRowData }) {
  const { server, traffic } = i;
  const st = statusStyle(server?.status ?? "pending");
  const serverName = server?.name ?? "an unknown server";
  // An inbound its server does not serve (issue 25) is red whatever its server's status.
  const label = i.unavailable ? `${i.name} unavailable: ${i.unavailable}` : `${serverName}: ${st.label}`;
  const drag = useRowDrag("route", i.id, i.name);
  return (
    <li ref={drag.ref} {...drag.listeners} className={`flex items-center gap-1 ${drag.className}`} style={{ height: ITEM_HEIGHT }} data-row-inbound={i.id}>
      <span
        role="img"
        aria-label={label}
        title={i.unavailable ? label : `${label}${server?.statusReason ? ` — ${server.statusReason}` : ""}`}
        className={`mr-0.5 h-2.5 w-2.5 shrink-0 rounded-full ${i.unavailable ? "bg-red-600" : st.dot}`}
        data-testid="inbound-status"
        data-status={i.unavailable ? "inbound-unavailable" : server?.status}
      />
      <span className={`min-w-0 flex-1 truncate ${i.unavailable ? "text-red-800 line-through decoration-red-400" : "text-slate-800"}`} title={`${i.name} on ${serverName}`}>
        <FlagText text={i.name} />
      </span>
      {i.isFallback && <span className="shrink-0 rounded bg-amber-100 px-1 text-xs font-semibold uppercase text-amber-800">fallback</span>}
      <span className="shrink-0 text-xs tabular-nums text-slate-600" title={`${plural(i.users, "user")} assigned here`} data-testid="inbound-users">
        <svg aria-hidden viewBox="0 0 20 20" className="mr-0.5 inline h-3 w-3 -translate-y-px" fill="currentColor">
          <path d="M10 10a4 4 0 1 0 0-8 4 4 0 0 0 0 8Zm-7 8a7 7 0 0 1 14 0H3Z" />
        </svg>
        <span className="sr-only">Users: </span>
        {i.users}
      </span>
      <span
        className="w-[86px] shrink-0 truncate text-right text-xs tabular-nums text-slate-500"
        title={
          i.unavailable
            ? "Carries nothing: its server does not serve it"
            : traffic.estimated
            ? `About ${formatBps(traffic.bps)}: ${serverName}'s ${formatBps(server?.trafficBps ?? 0)} split by assigned users (agents report traffic per server)`
            : `${formatBps(traffic.bps)} now (${serverName}'s traffic)`
        }
        data-testid="inbound-traffic"
      >
        {traffic.estimated ? "≈" : ""}
        {formatBps(traffic.bps)}
      </span>
    </li>
  );
}

/**
 * One route: a drop target for inbound chips and for other routes (reorder). An empty
 * route is dashed, has no pipe to the subscription and says so. A route in panic (no
 * inbound on an available server) is red and says why. Zoomed out, it shows its name and
 * state in large type only.
 */
export const RouteNode = memo(function RouteNode({ data: route }: NodeProps<RouteBox>) {
  const canEdit = useDiagramStore(selectCanEdit);
  const clusterId = useDiagramStore(selectClusterId);
  const { moveRoute } = useDiagramStore(selectActions);
  const routeId = route.id;
  const carriedHere = useDiagramStore(selectIsCarryTarget(routeId));
  const flashing = useDiagramStore(selectIsRouteHighlighted(routeId));
  const level = useZoomLevel();
  const { setNodeRef: setDropRef, isOver, active } = useDroppable({
    id: routeDropId(routeId),
    data: { type: "route", routeId, accepts: ["inbound", "route"] },
    disabled: !canEdit,
  });
  const drag = useDraggable({ id: routeDragId(routeId), data: { type: "route", routeId, name: route.name }, disabled: !canEdit });
  const { members, position, color, panic } = route;
  const empty = members.length === 0;
  const dropping = (isOver && active?.id !== routeDragId(route.id)) || carriedHere;
  const flag = routeFlagPrefix(route.name, route.flag);
  const borderColor = panic ? PANIC_COLOR : color;
  return (
    <section
      ref={setDropRef}
      id={routeDomId(route.id)}
      aria-label={`Route ${route.name}`}
      aria-describedby={panic ? `${routeDomId(route.id)}-panic` : undefined}
      data-route-id={route.id}
      data-empty={empty}
      data-has-pipe={!empty}
      data-panic={panic ? true : undefined}
      data-flash={flashing || undefined}
      data-zoom-level={level}
      data-drop-target={dropping || undefined}
      className={`pointer-events-auto h-full w-full overflow-hidden rounded-xl border-2 bg-white shadow-sm transition-colors ${
        empty ? "border-dashed border-slate-400 bg-slate-50" : ""
      } ${dropping ? "!border-sky-500 !bg-sky-50 ring-4 ring-sky-200" : ""} ${drag.isDragging ? "opacity-50" : ""} ${flashing ? styles.flash : ""}`}
      style={empty || dropping ? undefined : { borderColor }}
    >
      <Handle type="target" id="in" position={Position.Left} isConnectable={false} className="!pointer-events-none !h-2.5 !w-2.5 !border-0" style={{ background: color }} />
      {!empty && (
        <Handle type="source" id="out" position={Position.Right} isConnectable={false} className="!pointer-events-none !h-2.5 !w-2.5 !border-0" style={{ background: borderColor }} />
      )}
      {level !== "full" ? (
        level === "compact" && (
          <div className="flex h-full flex-col justify-center gap-1 px-3" style={{ fontSize: COMPACT_FONT_PX, lineHeight: 1.2 }} data-testid="route-compact">
            <div className={`truncate font-semibold ${panic ? "text-red-800" : "text-slate-900"}`} title={route.name}>
              {flag && (
                <span aria-hidden>
                  <FlagText text={flag} />{" "}
                </span>
              )}
              <FlagText text={route.name} />
            </div>
            <div className={`truncate ${panic ? "font-semibold text-red-700" : "text-slate-500"}`} title={panic ? `${panic.reason}. ${panic.consequence}` : undefined}>
              {panic ? "⚠ Panic" : empty ? "Empty" : plural(members.length, "inbound")}
            </div>
            {panic && (
              <span id={`${routeDomId(route.id)}-panic`} className="sr-only">
                {panic.reason}. {panic.consequence}
              </span>
            )}
          </div>
        )
      ) : (
        <>
          <header
            className={`flex flex-col border-b px-2 pt-1 ${panic ? "border-red-300 bg-red-100" : "border-slate-100"}`}
            style={{ height: ROUTE_HEADER - 6 }}
          >
            <div className="flex items-center gap-1.5">
              {canEdit && (
                <button
                  ref={drag.setNodeRef}
                  type="button"
                  aria-label={`Drag to reorder ${route.name}`}
                  title="Drag to reorder"
                  {...drag.listeners}
                  className="nodrag nopan grid h-7 w-5 shrink-0 cursor-grab touch-none place-items-center rounded text-slate-400 hover:bg-slate-100 hover:text-slate-700 active:cursor-grabbing"
                >
                  <svg aria-hidden viewBox="0 0 10 16" className="h-4 w-2.5" fill="currentColor">
                    {[2, 7, 12].flatMap((y) => [<circle key={`a${y}`} cx="2.5" cy={y} r="1.4" />, <circle key={`b${y}`} cx="7.5" cy={y} r="1.4" />])}
                  </svg>
                </button>
              )}
              <h3 className={`flex min-w-0 flex-1 items-center gap-1.5 truncate text-[15px] font-semibold ${panic ? "text-red-900" : "text-slate-900"}`} title={route.name}>
                <RouteTitle route={route} position={position} panic={!!panic} />
              </h3>
              <div className="flex shrink-0 items-start gap-0.5">
                {canEdit && (
                  <>
                    <button
                      type="button"
                      aria-label={`Move ${route.name} up`}
                      title="Move up"
                      disabled={position === 0}
                      onClick={() => moveRoute(route.id, -1)}
                      className="nodrag nopan grid h-7 w-7 place-items-center rounded-md text-slate-500 hover:bg-slate-100 hover:text-slate-900 disabled:opacity-30"
                    >
                      <svg aria-hidden viewBox="0 0 20 20" className="h-4 w-4" fill="none" stroke="currentColor" strokeWidth="2">
                        <path d="M5 12l5-5 5 5" />
                      </svg>
                    </button>
                    <button
                      type="button"
                      aria-label={`Move ${route.name} down`}
                      title="Move down"
                      disabled={route.last}
                      onClick={() => moveRoute(route.id, 1)}
                      className="nodrag nopan grid h-7 w-7 place-items-center rounded-md text-slate-500 hover:bg-slate-100 hover:text-slate-900 disabled:opacity-30"
                    >
                      <svg aria-hidden viewBox="0 0 20 20" className="h-4 w-4" fill="none" stroke="currentColor" strokeWidth="2">
                        <path d="M5 8l5 5 5-5" />
                      </svg>
                    </button>
                  </>
                )}
                <div className="nodrag nopan">
                  <RouteMenu clusterId={clusterId} route={{ id: route.id, name: route.name, flag: route.flag, algorithm: route.algorithm }} />
                </div>
            </div>
            </div>
            {panic ? (
              <p
                id={`${routeDomId(route.id)}-panic`}
                className="line-clamp-2 pl-1 text-xs font-semibold leading-4 text-red-700"
                title={`${panic.reason}. ${panic.consequence}`}
                data-testid="route-panic"
              >
                {panic.reason}
              </p>
            ) : (
              <div className="pl-1 text-xs leading-4 text-slate-500">
                <div className="truncate">{algorithmLabel(route.algorithm)}</div>
                <div>{empty ? "Empty" : plural(members.length, "inbound")}</div>
              </div>
            )}
          </header>
          {empty ? (
            <p className="flex items-center gap-1.5 px-3 pt-1.5 text-xs font-medium text-slate-500" style={{ height: ITEM_HEIGHT + 6 }}>
              <svg aria-hidden viewBox="0 0 20 20" className="h-3.5 w-3.5" fill="none" stroke="currentColor" strokeWidth="1.8">
                <path d="M3 3l14 14M8.5 8.6A2 2 0 0 0 11.4 11.5M6.3 6.4C4.6 7.4 3.4 8.8 2.5 10c1.8 2.6 4.4 5 7.5 5 1.3 0 2.5-.4 3.6-1M9 5.1c.3 0 .7-.1 1-.1 3.1 0 5.7 2.4 7.5 5-.5.7-1.1 1.5-1.8 2.2" />
              </svg>
              Hidden from users (empty)
            </p>
          ) : (
            <ul className="px-3 pt-1.5 text-[13px]">
              {members.map((i) => (
                <InboundRow key={i.id} row={i} />
              ))}
            </ul>
          )}
        </>
      )}
    </section>
  );
});
