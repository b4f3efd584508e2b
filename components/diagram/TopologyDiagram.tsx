"use client";
import Link from "next/link";
import { ReactFlowProvider, type Edge } from "@xyflow/react";
import { useCallback, useLayoutEffect, useMemo, useRef, useState } from "react";
import { useCanEdit } from "@/components/AppShell";
import { NewRouteButton } from "@/components/routes/NewRouteButton";
import { errorMessage } from "@/lib/errors";
import { buildIndex, type DiagramIndex, type Target, type TopologyData } from "./topology-index";
import { DiagramCanvas } from "./DiagramCanvas";
import { DiagramList, listInboundDomId, listRouteDomId, useIsNarrow } from "./DiagramList";
import { buildEdges, buildNodes } from "./flow";
import { plural } from "@/core/format";
import { layoutTopology } from "./layout";
import { Legend } from "./Legend";
import { Announcer, useAnnouncer } from "./messages";
import { SaveStatus } from "./SaveStatus";
import type { DiagramNode } from "./nodes/types";
import { createDiagramStore, DiagramStoreContext, selectCarry, useDiagramStore, type DiagramActions } from "./store";
import { useKeyboardCarry } from "./useKeyboardCarry";
import { useLiveTopology } from "./useLiveTopology";
import { useRouteFocus } from "./useRouteFocus";
import { useTopologyWrites } from "./useTopologyWrites";
import { useViewportActions } from "./useViewportActions";
import { WarningsPanel } from "./WarningsPanel";
import { Skeleton } from "@/components/ui/Skeleton";

/** The cluster page: tabs, warnings, and the live diagram. */
export function TopologyDiagram({ clusterId }: { clusterId: string }) {
  const live = useLiveTopology(clusterId);
  const { topology } = live;
  return (
    <div className="flex h-[calc(100dvh-45px-var(--cluster-tabs-h))] min-h-[560px] flex-col overflow-hidden">
      {topology.error && !topology.data ? (
        <p role="alert" className="p-6 text-red-700">
          {errorMessage(topology.error)}
        </p>
      ) : !topology.data ? (
        <div role="status" aria-busy="true" aria-label="Loading diagram" data-testid="skeleton" className="grid flex-1 grid-cols-2 gap-6 p-6">
          <span className="sr-only">Loading diagram…</span>
          <div className="flex flex-col gap-3">
            <Skeleton className="h-24" />
            <Skeleton className="h-24" />
            <Skeleton className="h-24" />
          </div>
          <div className="flex flex-col gap-3">
            <Skeleton className="h-40" />
            <Skeleton className="h-40" />
          </div>
        </div>
      ) : (
        <ReactFlowProvider>
          <DiagramBody clusterId={clusterId} data={topology.data} pauseRefetch={live.pauseRefetch} resumeRefetch={live.resumeRefetch} />
        </ReactFlowProvider>
      )}
    </div>
  );
}

/** "Moving X → Y" while an inbound is carried from the keyboard; the only part of the view that reads the carry. */
function CarryBanner({ targetName, index }: { targetName(t: Target): string; index: DiagramIndex }) {
  const carry = useDiagramStore(selectCarry);
  const carried = carry ? index.inboundById.get(carry.inboundId) : undefined;
  if (!carry || !carried) return null;
  return (
    <div className="fixed-palette pointer-events-none absolute left-1/2 top-3 z-10 -translate-x-1/2 rounded-lg bg-slate-900 px-4 py-2 text-sm text-white shadow-lg" aria-hidden>
      Moving <strong>{carried.name}</strong> → <strong>{targetName(index.targets[carry.index] ?? null)}</strong>
      <span className="ml-2 text-slate-300">↑↓ choose · Enter drop · Esc cancel</span>
    </div>
  );
}

function DiagramBody(props: { clusterId: string; data: TopologyData; pauseRefetch(): void; resumeRefetch(): void }) {
  const { clusterId, data, pauseRefetch, resumeRefetch } = props;
  const canEdit = useCanEdit();
  const containerRef = useRef<HTMLDivElement>(null);

  const index = useMemo(() => buildIndex(data), [data]);
  // The previous server order is the next layout's starting point: a move reorders only
  // the servers it changed. Recomputed only when the topology object changes.
  const serverOrder = useRef<readonly string[]>([]);
  const layout = useMemo(() => {
    const next = layoutTopology(data, { previousOrder: serverOrder.current });
    serverOrder.current = next.serverOrder;
    return next;
  }, [data]);
  const targetName = useCallback(
    (t: Target) => (t === null ? "Unassigned" : (index.routeById.get(t)?.name ?? "a route that is gone")),
    [index],
  );
  const targets = useMemo(() => index.targets.map((target) => ({ target, name: targetName(target) })), [index, targetName]);

  // The boxes' store: what they share besides their own data. Its actions stay the same
  // objects while the handlers behind them change with every refetch, so no box re-renders
  // for them; the handlers are set below, once they exist.
  const handlers = useRef<DiagramActions | null>(null);
  const [store] = useState(() =>
    createDiagramStore({
      clusterId,
      canEdit,
      targets,
      actions: {
        move: (inboundId, to) => handlers.current?.move(inboundId, to),
        moveRoute: (routeId, delta) => handlers.current?.moveRoute(routeId, delta),
        startCarry: (inboundId) => handlers.current?.startCarry(inboundId),
      },
    }),
  );
  useLayoutEffect(() => store.setState({ clusterId, canEdit, targets }), [store, clusterId, canEdit, targets]);

  const { announce, bind } = useAnnouncer();
  const view = useViewportActions({ container: containerRef, layout, index, store });
  useRouteFocus({ container: containerRef, layout, store });
  const { move, reorderTo, moveRoute, confirmDialog } = useTopologyWrites({ clusterId, index, announce, targetName });
  const { startCarry, cancelCarry } = useKeyboardCarry({ store, index, canEdit, move, targetName, announce, reveal: view.reveal });

  useLayoutEffect(() => {
    handlers.current = { move, moveRoute, startCarry };
  }, [move, moveRoute, startCarry]);

  const onDragStart = useCallback(() => {
    // A refetch landing mid-drag would move the boxes under the pointer: hold it back.
    pauseRefetch();
    cancelCarry();
  }, [cancelCarry, pauseRefetch]);

  const nodeCache = useRef(new Map<string, DiagramNode>());
  const nodes = useMemo(() => {
    const built = buildNodes(layout, index, nodeCache.current);
    nodeCache.current = built.cache;
    return built.nodes;
  }, [layout, index]);
  const edgeCache = useRef(new Map<string, Edge>());
  const edges = useMemo(() => {
    const built = buildEdges(data, edgeCache.current);
    edgeCache.current = built.cache;
    return built.edges;
  }, [data]);

  // The list by default on a narrow screen, the diagram on a wide one; the toggle overrides either.
  const narrow = useIsNarrow();
  const [chosenView, setChosenView] = useState<"diagram" | "list" | null>(null);
  const listView = (chosenView ?? (narrow ? "list" : "diagram")) === "list";
  const showInList = (id: string) => {
    const el = document.getElementById(id);
    el?.scrollIntoView({ block: "center", behavior: "smooth" });
    el?.focus({ preventScroll: true });
  };
  const onShowInbound = listView ? (id: string) => showInList(listInboundDomId(id)) : view.showInbound;
  const onShowRoute = listView ? (id: string) => showInList(listRouteDomId(id)) : view.showRoute;

  const { fitToLayout } = view;
  const onInit = useCallback(() => fitToLayout(), [fitToLayout]);
  // The first view keeps every label readable; the Fit button shows everything (compact if need be).
  const onFit = useCallback(() => fitToLayout(250, "all"), [fitToLayout]);

  return (
    <DiagramStoreContext.Provider value={store}>
      <WarningsPanel clusterId={clusterId} warnings={data.warnings} onShowInbound={onShowInbound} onShowRoute={onShowRoute} />
      <div className="flex flex-wrap items-center gap-x-4 gap-y-1 border-b border-slate-200 bg-white px-4 py-1.5 text-sm sm:px-5">
        <span className="text-slate-500">
          {plural(data.servers.length, "server")} · {plural(data.inbounds.length, "inbound")} · {plural(data.routes.length, "route")}
        </span>
        {!canEdit && <span className="rounded bg-slate-100 px-2 py-0.5 text-xs text-slate-600">Read-only: viewers can look but not change</span>}
        <SaveStatus />
        <div className="ml-auto flex items-center gap-3">
          <div role="group" aria-label="View" className="flex rounded-md border border-slate-300 text-xs">
            {(["diagram", "list"] as const).map((v) => (
              <button
                key={v}
                type="button"
                aria-pressed={listView === (v === "list")}
                onClick={() => setChosenView(v)}
                className="px-2.5 py-1 capitalize first:rounded-l-md last:rounded-r-md aria-pressed:bg-sky-600 aria-pressed:text-white"
              >
                {v}
              </button>
            ))}
          </div>
          <h2 className="hidden font-semibold text-slate-700 sm:block">Routes</h2>
          <NewRouteButton clusterId={clusterId} />
        </div>
      </div>
      {data.servers.length === 0 && (
        <p role="status" className="border-b border-sky-200 bg-sky-50 px-5 py-2 text-sm text-sky-900">
          This cluster has no server yet.{" "}
          <Link href={`/clusters/${clusterId}/servers`} className="font-medium underline">
            Add your first server and its inbounds
          </Link>
          ; the first inbound lands in a default route, so users see it at once.
        </p>
      )}
      <div ref={containerRef} className="relative min-h-0 flex-1 bg-slate-100" data-testid={listView ? undefined : "diagram"}>
        {listView ? (
          <DiagramList index={index} />
        ) : (
          <DiagramCanvas
            nodes={nodes}
            edges={edges}
            index={index}
            onInit={onInit}
            onFit={onFit}
            onDragStart={onDragStart}
            onDragFinish={resumeRefetch}
            move={move}
            reorderTo={reorderTo}
            targetName={targetName}
          />
        )}
        {!listView && <Legend />}
        {!listView && <CarryBanner index={index} targetName={targetName} />}
        <Announcer bind={bind} />
        {confirmDialog}
      </div>
    </DiagramStoreContext.Provider>
  );
}
