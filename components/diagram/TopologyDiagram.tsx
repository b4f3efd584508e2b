"use client";
import Link from "next/link";
import {
  DndContext,
  DragOverlay,
  PointerSensor,
  useDndContext,
  pointerWithin,
  useSensor,
  useSensors,
  type CollisionDetection,
  type DragEndEvent,
  type DragStartEvent,
} from "@dnd-kit/core";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useSubscription } from "@trpc/tanstack-react-query";
import { Background, ControlButton, Controls, MiniMap, ReactFlow, ReactFlowProvider, useReactFlow, type Edge } from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { useCanEdit } from "@/components/AppShell";
import { ClusterNav } from "@/components/ClusterNav";
import { NewRouteButton } from "@/components/routes/NewRouteButton";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { computeWarnings } from "@/core/warnings";
import { buildIndex, chipDomId, DiagramContext, type Carry, type DiagramApi, type Target, type TopologyData } from "./context";
import { plural, routeColor } from "@/core/format";
import { CHIP_HEIGHT, chipTop, DISTRIBUTION_NODE_ID, layoutTopology, routeNodeId, serverNodeId, type Box } from "./layout";
import { nodeTypes } from "./nodes";
import type { DiagramNode } from "./nodes/types";
import { WarningsPanel } from "./WarningsPanel";

/** Above this size the diagram opens at a readable zoom at the top instead of fitting all. */
const FIT_ALL_MAX_SERVERS = 16;
const FIT_ALL_MAX_ROUTES = 16;

/** The cluster page: tabs, warnings, and the live diagram. */
export function TopologyDiagram({ clusterId }: { clusterId: string }) {
  const trpc = useTRPC();
  const topology = useQuery(trpc.topology.get.queryOptions({ clusterId }));
  return (
    <div className="flex h-[calc(100dvh-45px)] min-h-[560px] flex-col overflow-hidden">
      <ClusterNav clusterId={clusterId} clusterName={topology.data?.cluster.name} />
      {topology.error && !topology.data ? (
        <p role="alert" className="p-6 text-red-700">
          {errorMessage(topology.error)}
        </p>
      ) : !topology.data ? (
        <p className="p-6 text-slate-500">Loading diagram…</p>
      ) : (
        <ReactFlowProvider>
          <DiagramBody clusterId={clusterId} data={topology.data} />
        </ReactFlowProvider>
      )}
    </div>
  );
}

/** What follows the pointer during a drag; reads the drag from dnd-kit, so a drag does
 * not re-render the whole diagram. */
function DragPreview() {
  const { active } = useDndContext();
  const d = active?.data.current as { type?: string; name?: string } | undefined;
  if (!d?.type) return null;
  return (
    <div
      className={`pointer-events-none rounded-md border-2 border-sky-500 bg-white px-3 py-1.5 text-sm font-semibold text-slate-900 shadow-xl ${
        d.type === "route" ? "w-64" : "max-w-64 truncate"
      }`}
    >
      {d.type === "route" ? `Route ${d.name ?? ""}` : (d.name ?? "")}
    </div>
  );
}

/** The polite live region; its own state, so an announcement re-renders nothing else. */
function Announcer({ bind }: { bind: React.RefObject<(text: string) => void> }) {
  const [text, setText] = useState("");
  useEffect(() => {
    bind.current = setText;
  }, [bind]);
  return (
    <div role="status" aria-live="polite" className="sr-only" data-testid="diagram-announcer">
      {text}
    </div>
  );
}

const DEFAULT_VIEWPORT = { x: 24, y: 24, zoom: 0.8 };
const PRO_OPTIONS = { hideAttribution: true };
const miniMapColor = (n: { type?: string }) =>
  n.type === "server" ? "#cbd5e1" : n.type === "route" ? "#7dd3fc" : n.type === "distribution" ? "#0f172a" : "#fcd34d";

/** Drops only onto targets that accept what is dragged; the pointer decides. */
const collisionDetection: CollisionDetection = (args) => {
  const type = args.active.data.current?.type as string | undefined;
  const droppableContainers = args.droppableContainers.filter((c) => (c.data.current?.accepts as string[] | undefined)?.includes(type ?? ""));
  return pointerWithin({ ...args, droppableContainers });
};

function withWarnings(data: TopologyData): TopologyData {
  return { ...data, warnings: computeWarnings(data) };
}

function DiagramBody({ clusterId, data }: { clusterId: string; data: TopologyData }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const canEdit = useCanEdit();
  const rf = useReactFlow<DiagramNode>();
  const queryKey = trpc.topology.get.queryKey({ clusterId });
  const containerRef = useRef<HTMLDivElement>(null);

  const index = useMemo(() => buildIndex(data), [data]);
  const layout = useMemo(() => layoutTopology(data), [data]);
  const boxById = useMemo(() => new Map(layout.boxes.map((b) => [b.id, b])), [layout]);

  // ---- messages: errors as alerts, moves announced politely ----
  const [alert, setAlert] = useState<{ id: number; text: string } | null>(null);
  const announcer = useRef<(text: string) => void>(() => {});
  const setAnnouncement = useCallback((text: string) => announcer.current(text), []);
  const showAlert = useCallback((text: string) => setAlert({ id: Date.now(), text }), []);
  useEffect(() => {
    if (!alert) return;
    const t = setTimeout(() => setAlert(null), 12_000);
    return () => clearTimeout(t);
  }, [alert]);

  // ---- live: refetch on every change of this cluster, coalesced ----
  // Topology changes (moves, new routes) show within ~0.1 s; health and load figures, which
  // a big fleet's monitor reports constantly, at most about once a second. Nothing is
  // refetched in the middle of a drag or a move: the boxes must not shift under the pointer.
  const refetchTimer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const refetchDue = useRef(Infinity);
  const busy = useRef(false);
  const scheduleRefetch = useCallback(
    (kinds: readonly string[]) => {
      const due = Date.now() + (kinds.includes("topology") || kinds.includes("settings") ? 100 : 1000);
      if (refetchTimer.current && refetchDue.current <= due) return;
      if (refetchTimer.current) clearTimeout(refetchTimer.current);
      refetchDue.current = due;
      refetchTimer.current = setTimeout(function fire() {
        if (busy.current || queryClient.isMutating() > 0) {
          refetchTimer.current = setTimeout(fire, 150);
          return;
        }
        refetchTimer.current = null;
        refetchDue.current = Infinity;
        void queryClient.invalidateQueries({ queryKey });
      }, due - Date.now());
    },
    [queryClient, queryKey],
  );
  useEffect(() => () => void (refetchTimer.current && clearTimeout(refetchTimer.current)), []);
  const started = useRef(false);
  useSubscription(
    trpc.topology.onChange.subscriptionOptions(
      { clusterId },
      {
        onData: (e) => scheduleRefetch(e.kinds),
        onStarted: () => {
          // After a reconnect, catch up on whatever changed while we were away.
          if (started.current) scheduleRefetch(["topology"]);
          started.current = true;
        },
      },
    ),
  );

  // ---- writes: optimistic, rolled back with a message on failure ----
  const moveMutation = useMutation(
    trpc.topology.moveInbound.mutationOptions({
      onMutate: async (vars) => {
        const previous = queryClient.getQueryData(queryKey);
        void queryClient.cancelQueries({ queryKey });
        // Redraw a task later, once the request is on its way (the batch link sends it from
        // a zero timeout): on a big diagram the redraw takes a while and must not delay it.
        setTimeout(() =>
          setTimeout(() =>
            queryClient.setQueryData(queryKey, (old) =>
              old ? withWarnings({ ...old, inbounds: old.inbounds.map((i) => (i.id === vars.inboundId ? { ...i, routeId: vars.toRouteId, isFallback: false } : i)) }) : old,
            ),
          ),
        );
        return { previous };
      },
      onError: (err, vars, ctx) => {
        // After the optimistic redraw (two tasks after the drop), never before it.
        if (ctx?.previous) setTimeout(() => setTimeout(() => queryClient.setQueryData(queryKey, ctx.previous)));
        const name = ctx?.previous?.inbounds.find((i) => i.id === vars.inboundId)?.name ?? "the inbound";
        showAlert(`Could not move ${name}: ${errorMessage(err)}`);
      },
      onSuccess: (res) => {
        queryClient.setQueryData(queryKey, (old) =>
          old ? { ...old, inbounds: old.inbounds.map((i) => (i.id === res.inboundId ? { ...i, version: res.version } : i)) } : old,
        );
      },
      onSettled: () => queryClient.invalidateQueries({ queryKey }),
    }),
  );
  const reorderMutation = useMutation(
    trpc.topology.reorderRoutes.mutationOptions({
      onMutate: async (vars) => {
        await queryClient.cancelQueries({ queryKey });
        const previous = queryClient.getQueryData(queryKey);
        queryClient.setQueryData(queryKey, (old) => {
          if (!old) return old;
          const byId = new Map(old.routes.map((r) => [r.id, r]));
          const routes = vars.orderedRouteIds.flatMap((id, position) => {
            const r = byId.get(id);
            return r ? [{ ...r, position }] : [];
          });
          return withWarnings({ ...old, routes });
        });
        return { previous };
      },
      onError: (err, _vars, ctx) => {
        if (ctx?.previous) queryClient.setQueryData(queryKey, ctx.previous);
        showAlert(`Could not reorder the routes: ${errorMessage(err)}`);
      },
      onSettled: () => queryClient.invalidateQueries({ queryKey }),
    }),
  );

  const targetName = useCallback(
    (t: Target) => (t === null ? "Unassigned" : (index.routeById.get(t)?.name ?? "a route that is gone")),
    [index],
  );

  const move = useCallback(
    (inboundId: string, to: Target) => {
      const inbound = index.inboundById.get(inboundId);
      if (!inbound) return;
      const from = inbound.routeId && index.routeById.has(inbound.routeId) ? inbound.routeId : null;
      if (from === to) return;
      setAnnouncement(`Moved ${inbound.name} to ${to === null ? "Unassigned" : `route ${targetName(to)}`}.`);
      moveMutation.mutate({ inboundId, toRouteId: to, expectedVersion: inbound.version });
    },
    [index, moveMutation, targetName],
  );

  const reorderTo = useCallback(
    (routeId: string, toIndex: number) => {
      const ids = data.routes.map((r) => r.id);
      const from = ids.indexOf(routeId);
      if (from < 0 || toIndex < 0 || toIndex >= ids.length || from === toIndex) return;
      ids.splice(from, 1);
      ids.splice(toIndex, 0, routeId);
      setAnnouncement(`${index.routeById.get(routeId)?.name ?? "Route"} is now number ${toIndex + 1} of ${ids.length}.`);
      reorderMutation.mutate({ clusterId, orderedRouteIds: ids });
    },
    [clusterId, data.routes, index, reorderMutation],
  );
  const moveRoute = useCallback(
    (routeId: string, delta: number) => reorderTo(routeId, (index.routeIndex.get(routeId) ?? 0) + delta),
    [index, reorderTo],
  );

  // ---- viewport helpers ----
  const ensureVisible = useCallback(
    (box: Box, focusY?: number) => {
      const el = containerRef.current;
      if (!el) return;
      const { x, y, zoom } = rf.getViewport();
      const w = el.clientWidth;
      const h = el.clientHeight;
      const cy = focusY ?? box.y + Math.min(box.height, h / zoom) / 2;
      const left = box.x * zoom + x;
      const top = (focusY !== undefined ? focusY - 20 : box.y) * zoom + y;
      const right = (box.x + box.width) * zoom + x;
      const bottom = (focusY !== undefined ? focusY + 20 : box.y + Math.min(box.height, h / zoom)) * zoom + y;
      if (left >= 0 && top >= 0 && right <= w && bottom <= h) return;
      void rf.setCenter(box.x + box.width / 2, cy, { zoom: Math.max(zoom, 0.6), duration: 250 });
    },
    [rf],
  );

  const [highlight, setHighlight] = useState<string | null>(null);
  const showInbound = useCallback(
    (inboundId: string) => {
      const inbound = index.inboundById.get(inboundId);
      const box = inbound && boxById.get(serverNodeId(inbound.serverId));
      if (!inbound || !box) return;
      const pos = (index.inboundsByServer.get(inbound.serverId) ?? []).findIndex((i) => i.id === inboundId);
      const cy = box.y + chipTop(Math.max(0, pos)) + CHIP_HEIGHT / 2;
      void rf.setCenter(box.x + box.width / 2, cy, { zoom: Math.max(rf.getZoom(), 0.9), duration: 300 });
      setHighlight(inboundId);
      const started = performance.now();
      const tryFocus = () => {
        const el = document.getElementById(chipDomId(inboundId));
        if (el) el.focus({ preventScroll: true });
        else if (performance.now() - started < 1500) requestAnimationFrame(tryFocus);
      };
      setTimeout(tryFocus, 320);
      setTimeout(() => setHighlight((h) => (h === inboundId ? null : h)), 2500);
    },
    [boxById, index, rf],
  );
  const showRoute = useCallback(
    (routeId: string) => {
      const box = boxById.get(routeNodeId(routeId));
      if (!box) return;
      void rf.setCenter(box.x + box.width / 2, box.y + box.height / 2, { zoom: Math.max(rf.getZoom(), 0.9), duration: 300 });
    },
    [boxById, rf],
  );

  // ---- keyboard: Space/Enter picks a chip up, arrows choose the target, Enter drops ----
  const [carry, setCarry] = useState<Carry | null>(null);
  const startCarry = useCallback(
    (inboundId: string) => {
      const inbound = index.inboundById.get(inboundId);
      if (!inbound || !canEdit) return;
      const current = inbound.routeId && index.routeById.has(inbound.routeId) ? inbound.routeId : null;
      const at = Math.max(0, index.targets.indexOf(current));
      setCarry({ inboundId, index: at });
      setAnnouncement(
        `Picked up ${inbound.name}, now in ${targetName(current)}. Use the arrow keys to choose a route, Enter or Space to drop, Escape to cancel.`,
      );
    },
    [canEdit, index, targetName],
  );
  useEffect(() => {
    if (!carry) return;
    const inbound = index.inboundById.get(carry.inboundId);
    if (!inbound) {
      setCarry(null);
      return;
    }
    const onKey = (e: KeyboardEvent) => {
      const n = index.targets.length;
      let next: number | null = null;
      if (e.key === "ArrowDown" || e.key === "ArrowRight") next = (carry.index + 1) % n;
      else if (e.key === "ArrowUp" || e.key === "ArrowLeft") next = (carry.index - 1 + n) % n;
      else if (e.key === "Home") next = 0;
      else if (e.key === "End") next = n - 1;
      else if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        e.stopPropagation();
        setCarry(null);
        const to = index.targets[carry.index] ?? null;
        const from = inbound.routeId && index.routeById.has(inbound.routeId) ? inbound.routeId : null;
        if (to === from) setAnnouncement(`${inbound.name} stays in ${targetName(to)}.`);
        else move(inbound.id, to);
        return;
      } else if (e.key === "Escape" || e.key === "Tab") {
        if (e.key === "Escape") {
          e.preventDefault();
          e.stopPropagation();
        }
        setCarry(null);
        setAnnouncement(`Cancelled: ${inbound.name} stays where it was.`);
        return;
      } else return;
      e.preventDefault();
      e.stopPropagation();
      const t = index.targets[next] ?? null;
      setCarry({ inboundId: carry.inboundId, index: next });
      setAnnouncement(`Over ${t === null ? "Unassigned" : `route ${targetName(t)}`}.`);
      const box = boxById.get(t === null ? "unassigned" : routeNodeId(t));
      if (box) ensureVisible(box);
    };
    window.addEventListener("keydown", onKey, true);
    return () => window.removeEventListener("keydown", onKey, true);
  }, [boxById, carry, ensureVisible, index, move, targetName]);

  // ---- pointer drag and drop ----
  const sensors = useSensors(useSensor(PointerSensor, { activationConstraint: { distance: 5 } }));
  const interrupted = useRef(false);
  const onDragStart = useCallback((e: DragStartEvent) => {
    busy.current = true;
    // A refetch landing mid-drag would move the boxes under the pointer: hold it back and
    // catch up when the drag ends.
    if (queryClient.isFetching({ queryKey }) > 0) {
      interrupted.current = true;
      void queryClient.cancelQueries({ queryKey });
    }
    void e;
    setCarry((c) => (c ? null : c));
  }, [queryClient, queryKey]);
  const endDrag = useCallback(() => {
    busy.current = false;
    if (interrupted.current) {
      interrupted.current = false;
      scheduleRefetch(["topology"]);
    }
  }, [scheduleRefetch]);
  const onDragEnd = useCallback(
    (e: DragEndEvent) => {
      endDrag();
      const a = e.active.data.current as { type: string; inboundId?: string; routeId?: string } | undefined;
      let o = e.over?.data.current as { type: string; routeId?: string } | undefined;
      if (!o && e.activatorEvent instanceof PointerEvent) {
        // Released before the collision state caught up with the last pointer move (a quick
        // drop on a busy page): find the box under the pointer ourselves.
        const x = e.activatorEvent.clientX + e.delta.x;
        const y = e.activatorEvent.clientY + e.delta.y;
        for (const el of document.elementsFromPoint(x, y)) {
          const box = el.closest<HTMLElement>("[data-route-id], [data-unassigned-zone]");
          if (!box) continue;
          if (box.dataset.routeId) o = { type: "route", routeId: box.dataset.routeId };
          else if (a?.type === "inbound") o = { type: "unassigned" };
          break;
        }
      }
      if (!a || !o) return;
      if (a.type === "inbound" && a.inboundId) {
        move(a.inboundId, o.type === "unassigned" ? null : (o.routeId ?? null));
      } else if (a.type === "route" && a.routeId && o.type === "route" && o.routeId && o.routeId !== a.routeId) {
        reorderTo(a.routeId, index.routeIndex.get(o.routeId) ?? 0);
      }
    },
    [endDrag, index, move, reorderTo],
  );

  // ---- React Flow nodes and edges from the pure layout ----
  // Unchanged boxes and edges keep their object identity across refetches, so React Flow
  // only re-processes what moved (at 2,000 inbounds a full rebuild costs a noticeable pause).
  const nodeCache = useRef(new Map<string, DiagramNode>());
  const nodes = useMemo<DiagramNode[]>(() => {
    const next = new Map<string, DiagramNode>();
    const out = layout.boxes.map((b) => {
      const prev = nodeCache.current.get(b.id);
      const node: DiagramNode =
        prev && prev.position.x === b.x && prev.position.y === b.y && prev.width === b.width && prev.height === b.height
          ? prev
          : {
              id: b.id,
              type: b.kind,
              position: { x: b.x, y: b.y },
              width: b.width,
              height: b.height,
              data: { refId: b.refId },
              draggable: false,
              selectable: false,
              connectable: false,
              focusable: false,
            };
      next.set(b.id, node);
      return node;
    });
    nodeCache.current = next;
    return out;
  }, [layout]);
  const edgeCache = useRef(new Map<string, Edge>());
  const edges = useMemo<Edge[]>(() => {
    const next = new Map<string, Edge>();
    const out: Edge[] = [];
    const keep = (e: Edge, key: string) => {
      const prev = edgeCache.current.get(e.id);
      const edge = prev && prev.data?.key === key ? prev : { ...e, data: { key } };
      next.set(e.id, edge);
      out.push(edge);
    };
    for (const i of data.inbounds) {
      if (!i.routeId || !index.routeById.has(i.routeId)) continue;
      const color = routeColor(index.routeIndex.get(i.routeId) ?? 0);
      const routeName = index.routeById.get(i.routeId)?.name;
      keep(
        {
          id: `ib:${i.id}`,
          source: serverNodeId(i.serverId),
          sourceHandle: `ib:${i.id}`,
          target: routeNodeId(i.routeId),
          targetHandle: "in",
          ariaLabel: `${i.name} is in ${routeName}`,
          style: { stroke: color, strokeWidth: 1.6, opacity: 0.75 },
          focusable: false,
          selectable: false,
        },
        `${i.serverId}|${i.routeId}|${color}|${i.name}|${routeName}`,
      );
    }
    for (const r of data.routes) {
      if ((index.inboundsByRoute.get(r.id)?.length ?? 0) === 0) continue;
      const color = routeColor(index.routeIndex.get(r.id) ?? 0);
      keep(
        {
          id: `pipe:${r.id}`,
          source: routeNodeId(r.id),
          sourceHandle: "out",
          target: DISTRIBUTION_NODE_ID,
          targetHandle: "in",
          // Dozens of animated pipes keep the page repainting: animate only a readable few.
          animated: data.routes.length <= 24,
          ariaLabel: `Pipe from ${r.name} to the subscription`,
          style: { stroke: color, strokeWidth: 3.5 },
          focusable: false,
          selectable: false,
        },
        `${color}|${r.name}`,
      );
    }
    edgeCache.current = next;
    return out;
  }, [data, index]);

  // The first view: the whole diagram when small; for a big cluster, its top at a readable
  // zoom (React Flow's own fitView cannot be used: with onlyRenderVisibleElements, boxes
  // off-screen are never measured; our layout knows every box's size already).
  const fitToLayout = useCallback(
    (duration = 0) => {
      const el = containerRef.current;
      if (!el) return;
      const w = el.clientWidth;
      const h = el.clientHeight;
      const pad = 24;
      const small = data.servers.length <= FIT_ALL_MAX_SERVERS && data.routes.length <= FIT_ALL_MAX_ROUTES;
      const byWidth = (w - 2 * pad) / Math.max(1, layout.width);
      const byHeight = (h - 2 * pad) / Math.max(1, layout.height);
      const zoom = small ? Math.max(0.3, Math.min(1, byWidth, byHeight)) : Math.max(0.45, Math.min(0.85, byWidth));
      const x = Math.max(pad, (w - layout.width * zoom) / 2);
      const y = small ? Math.max(pad, (h - layout.height * zoom) / 2) : pad;
      void rf.setViewport({ x, y, zoom }, { duration });
    },
    [data.servers.length, data.routes.length, layout, rf],
  );

  const onInit = useCallback(() => fitToLayout(), [fitToLayout]);

  const api = useMemo<DiagramApi>(
    () => ({ clusterId, index, canEdit, carry, highlight, move, moveRoute, startCarry, targetName }),
    [clusterId, index, canEdit, carry, highlight, move, moveRoute, startCarry, targetName],
  );

  const carried = carry ? index.inboundById.get(carry.inboundId) : undefined;
  const carryTarget = carry ? (index.targets[carry.index] ?? null) : null;

  return (
    <DiagramContext.Provider value={api}>
      <WarningsPanel clusterId={clusterId} warnings={data.warnings} onShowInbound={showInbound} onShowRoute={showRoute} />
      <div className="flex items-center gap-4 border-b border-slate-200 bg-white px-5 py-1.5 text-sm">
        <span className="text-slate-500">
          {plural(data.servers.length, "server")} · {plural(data.inbounds.length, "inbound")} · {plural(data.routes.length, "route")}
        </span>
        {!canEdit && <span className="rounded bg-slate-100 px-2 py-0.5 text-xs text-slate-600">Read-only: viewers can look but not change</span>}
        <div className="ml-auto flex items-center gap-3">
          <h2 className="font-semibold text-slate-700">Routes</h2>
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
      <div ref={containerRef} className="relative min-h-0 flex-1 bg-slate-100" data-testid="diagram">
        <DndContext
          sensors={sensors}
          collisionDetection={collisionDetection}
          onDragStart={onDragStart}
          onDragEnd={onDragEnd}
          onDragCancel={endDrag}
          autoScroll={false}
          accessibility={{
            screenReaderInstructions: { draggable: "Press Space or Enter to pick up, arrow keys to choose a route, Enter to drop." },
            announcements: {
              onDragStart: ({ active }) => `Picked up ${String(active.data.current?.name ?? "")}.`,
              onDragOver: ({ over }) => (over ? `Over ${over.id === "unassigned-drop" ? "Unassigned" : String(targetName(over.data.current?.routeId ?? null))}.` : "Not over a drop target."),
              onDragEnd: ({ over }) => (over ? "Dropped." : "Dropped outside any route: nothing changed."),
              onDragCancel: () => "Cancelled: nothing changed.",
            },
          }}
        >
          <ReactFlow<DiagramNode>
            nodes={nodes}
            edges={edges}
            nodeTypes={nodeTypes}
            onInit={onInit}
            defaultViewport={DEFAULT_VIEWPORT}
            minZoom={0.05}
            maxZoom={2}
            onlyRenderVisibleElements
            nodesDraggable={false}
            nodesConnectable={false}
            nodesFocusable={false}
            edgesFocusable={false}
            elementsSelectable={false}
            panOnScroll
            zoomOnDoubleClick={false}
            panActivationKeyCode={null}
            deleteKeyCode={null}
            selectionKeyCode={null}
            multiSelectionKeyCode={null}
            proOptions={PRO_OPTIONS}
          >
            <Background gap={24} color="#cbd5e1" />
            <Controls showInteractive={false} showFitView={false} position="bottom-left">
              <ControlButton onClick={() => fitToLayout(250)} aria-label="Fit view" title="Fit view">
                <svg aria-hidden viewBox="0 0 20 20" fill="none" stroke="currentColor" strokeWidth="2">
                  <path d="M3 7V3h4M13 3h4v4M17 13v4h-4M7 17H3v-4" />
                </svg>
              </ControlButton>
            </Controls>
            <MiniMap
              pannable
              zoomable
              position="bottom-right"
              nodeColor={miniMapColor}
              nodeStrokeWidth={0}
              ariaLabel="Overview of the diagram"
            />
          </ReactFlow>
          <DragOverlay dropAnimation={null}>
            <DragPreview />
          </DragOverlay>
        </DndContext>
        {carried && (
          <div className="pointer-events-none absolute left-1/2 top-3 z-10 -translate-x-1/2 rounded-lg bg-slate-900 px-4 py-2 text-sm text-white shadow-lg" aria-hidden>
            Moving <strong>{carried.name}</strong> → <strong>{targetName(carryTarget)}</strong>
            <span className="ml-2 text-slate-300">↑↓ choose · Enter drop · Esc cancel</span>
          </div>
        )}
        <Announcer bind={announcer} />
        {alert && (
          <div
            key={alert.id}
            role="alert"
            className="absolute bottom-4 left-1/2 z-20 flex max-w-xl -translate-x-1/2 items-start gap-3 rounded-lg border border-red-200 bg-red-50 px-4 py-3 text-sm text-red-800 shadow-lg"
          >
            <span>{alert.text}</span>
            <button type="button" onClick={() => setAlert(null)} className="shrink-0 font-semibold text-red-700 hover:text-red-900" aria-label="Dismiss message">
              ✕
            </button>
          </div>
        )}
      </div>
    </DiagramContext.Provider>
  );
}
