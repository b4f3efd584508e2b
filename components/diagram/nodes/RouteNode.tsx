"use client";
import { useDraggable, useDroppable } from "@dnd-kit/core";
import { Handle, Position, type NodeProps } from "@xyflow/react";
import { memo } from "react";
import { RouteMenu } from "@/components/routes/RouteMenu";
import { routeDomId, useDiagram } from "../context";
import { selectIsCarryTarget, selectIsRouteHighlighted, useDiagramStore } from "../store";
import { algorithmLabel, routeColor, routeFlagPrefix } from "@/core/format";
import { ITEM_HEIGHT, ROUTE_HEADER } from "../layout";
import type { DiagramNode } from "./types";

export const routeDropId = (id: string) => `route-drop:${id}`;
export const routeDragId = (id: string) => `route-drag:${id}`;

/**
 * One route: a drop target for inbound chips and for other routes (reorder). An empty
 * route is dashed, has no pipe to the subscription and says so.
 */
export const RouteNode = memo(function RouteNode({ data }: NodeProps<DiagramNode>) {
  const { index, canEdit, clusterId, moveRoute } = useDiagram();
  const route = index.routeById.get(data.refId ?? "");
  const routeId = route?.id ?? "";
  const carriedHere = useDiagramStore(selectIsCarryTarget(index.targets, routeId));
  const highlighted = useDiagramStore(selectIsRouteHighlighted(routeId));
  const { setNodeRef: setDropRef, isOver, active } = useDroppable({
    id: routeDropId(routeId),
    data: { type: "route", routeId, accepts: ["inbound", "route"] },
    disabled: !route || !canEdit,
  });
  const drag = useDraggable({ id: routeDragId(routeId), data: { type: "route", routeId, name: route?.name }, disabled: !route || !canEdit });
  if (!route) return null;
  const members = index.inboundsByRoute.get(route.id) ?? [];
  const position = index.routeIndex.get(route.id) ?? 0;
  const color = routeColor(position);
  const empty = members.length === 0;
  const dropping = (isOver && active?.id !== routeDragId(route.id)) || carriedHere;
  const flag = routeFlagPrefix(route.name, route.flag);
  return (
    <section
      ref={setDropRef}
      id={routeDomId(route.id)}
      aria-label={`Route ${route.name}`}
      data-route-id={route.id}
      data-empty={empty}
      data-has-pipe={!empty}
      data-drop-target={dropping || undefined}
      data-flash={highlighted || undefined}
      className={`pointer-events-auto h-full w-full overflow-hidden rounded-xl border-2 bg-white shadow-sm transition-colors ${highlighted ? "ring-4 ring-amber-300" : ""} ${
        empty ? "border-dashed border-slate-400 bg-slate-50" : ""
      } ${dropping ? "!border-sky-500 !bg-sky-50 ring-4 ring-sky-200" : ""} ${drag.isDragging ? "opacity-50" : ""}`}
      style={empty || dropping ? undefined : { borderColor: color }}
    >
      <Handle type="target" id="in" position={Position.Left} isConnectable={false} className="!pointer-events-none !h-2.5 !w-2.5 !border-0" style={{ background: color }} />
      {!empty && (
        <Handle type="source" id="out" position={Position.Right} isConnectable={false} className="!pointer-events-none !h-2.5 !w-2.5 !border-0" style={{ background: color }} />
      )}
      <header className="flex gap-1.5 border-b border-slate-100 px-2 pt-2" style={{ height: ROUTE_HEADER - 6 }}>
        {canEdit && (
          <button
            ref={drag.setNodeRef}
            type="button"
            aria-label={`Drag to reorder ${route.name}`}
            title="Drag to reorder"
            {...drag.listeners}
            className="nodrag nopan grid h-8 w-5 shrink-0 cursor-grab touch-none place-items-center rounded text-slate-400 hover:bg-slate-100 hover:text-slate-700 active:cursor-grabbing"
          >
            <svg aria-hidden viewBox="0 0 10 16" className="h-4 w-2.5" fill="currentColor">
              {[2, 7, 12].flatMap((y) => [<circle key={`a${y}`} cx="2.5" cy={y} r="1.4" />, <circle key={`b${y}`} cx="7.5" cy={y} r="1.4" />])}
            </svg>
          </button>
        )}
        <div className="min-w-0 flex-1">
          <h3 className="flex items-center gap-1.5 truncate text-[15px] font-semibold text-slate-900" title={route.name}>
            <span aria-hidden className="tabular-nums text-xs font-normal text-slate-400">
              {position + 1}.
            </span>
            {flag && <span aria-hidden>{flag}</span>}
            <span className="truncate">{route.name}</span>
          </h3>
          <div className="truncate text-xs text-slate-500">{algorithmLabel(route.algorithm)}</div>
          <div className="text-xs text-slate-500">{empty ? "Empty" : members.length === 1 ? "1 inbound" : `${members.length} inbounds`}</div>
        </div>
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
                disabled={position === index.data.routes.length - 1}
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
            <li key={i.id} className="flex items-center gap-2 truncate" style={{ height: ITEM_HEIGHT }}>
              <span aria-hidden className="h-1.5 w-1.5 shrink-0 rounded-full" style={{ background: color }} />
              <span className="truncate text-slate-800">{i.name}</span>
              {i.isFallback && <span className="rounded bg-amber-100 px-1 text-[10px] font-semibold uppercase text-amber-800">fallback</span>}
              <span className="ml-auto shrink-0 truncate text-[11px] text-slate-400">{index.serverById.get(i.serverId)?.name}</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
});
