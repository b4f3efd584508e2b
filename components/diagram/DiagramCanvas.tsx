"use client";
import {
  DndContext,
  DragOverlay,
  PointerSensor,
  pointerWithin,
  useDndContext,
  useSensor,
  useSensors,
  type CollisionDetection,
  type DragEndEvent,
} from "@dnd-kit/core";
import { Background, ControlButton, Controls, MiniMap, ReactFlow, type Edge } from "@xyflow/react";
import { useCallback, useState } from "react";
import type { DiagramIndex, Target } from "./topology-index";
import { nodeTypes } from "./nodes";
import type { DiagramNode } from "./nodes/types";
import { FIT_ALL_MAX_ROUTES, FIT_ALL_MAX_SERVERS } from "./viewport";

const DEFAULT_VIEWPORT = { x: 24, y: 24, zoom: 0.8 };
const PRO_OPTIONS = { hideAttribution: true };
/**
 * One object for the diagram's life: dnd-kit rebuilds its sensors when the options object
 * changes, and with them the context every chip and drop target reads, so a new object on
 * each render (each refetch) re-rendered all of them.
 */
const POINTER_OPTIONS = { activationConstraint: { distance: 5 } };
const miniMapColor = (n: { type?: string }) =>
  n.type === "server" ? "#cbd5e1" : n.type === "route" ? "#7dd3fc" : n.type === "distribution" ? "#0f172a" : "#fcd34d";

/** Drops only onto targets that accept what is dragged; the pointer decides. */
const collisionDetection: CollisionDetection = (args) => {
  const type = args.active.data.current?.type as string | undefined;
  const droppableContainers = args.droppableContainers.filter((c) => (c.data.current?.accepts as string[] | undefined)?.includes(type ?? ""));
  return pointerWithin({ ...args, droppableContainers });
};

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

type Over = { type: string; routeId?: string };

/** The drop target of a drag that ended: dnd-kit's, or the box under the pointer. */
function dropTarget(e: DragEndEvent, activeType: string | undefined): Over | undefined {
  const over = e.over?.data.current as Over | undefined;
  if (over || !(e.activatorEvent instanceof PointerEvent)) return over;
  // Released before the collision state caught up with the last pointer move (a quick
  // drop on a busy page): find the box under the pointer ourselves.
  const x = e.activatorEvent.clientX + e.delta.x;
  const y = e.activatorEvent.clientY + e.delta.y;
  for (const el of document.elementsFromPoint(x, y)) {
    const box = el.closest<HTMLElement>("[data-route-id], [data-unassigned-zone]");
    if (!box) continue;
    if (box.dataset.routeId) return { type: "route", routeId: box.dataset.routeId };
    if (activeType === "inbound") return { type: "unassigned" };
    return undefined;
  }
  return undefined;
}

/** React Flow inside dnd-kit: pan and zoom from the one, dragging chips and routes from the other. */
export function DiagramCanvas(props: {
  nodes: DiagramNode[];
  edges: Edge[];
  index: DiagramIndex;
  onInit(): void;
  onFit(): void;
  onDragStart(): void;
  onDragFinish(): void;
  move(inboundId: string, to: Target): void;
  reorderTo(routeId: string, toIndex: number): void;
  targetName(t: Target): string;
}) {
  const { index, move, reorderTo, targetName, onDragStart, onDragFinish } = props;
  const sensors = useSensors(useSensor(PointerSensor, POINTER_OPTIONS));
  // The overview map helps only where the first view cannot show everything; elsewhere it
  // would cover boxes (the subscription box sits bottom right). A button shows or hides it.
  const big = index.data.servers.length > FIT_ALL_MAX_SERVERS || index.data.routes.length > FIT_ALL_MAX_ROUTES;
  const [mapShown, setMapShown] = useState(big);
  const onDragEnd = useCallback(
    (e: DragEndEvent) => {
      onDragFinish();
      const a = e.active.data.current as { type: string; inboundId?: string; routeId?: string } | undefined;
      const o = dropTarget(e, a?.type);
      if (!a || !o) return;
      if (a.type === "inbound" && a.inboundId) {
        move(a.inboundId, o.type === "unassigned" ? null : (o.routeId ?? null));
      } else if (a.type === "route" && a.routeId && o.type === "route" && o.routeId && o.routeId !== a.routeId) {
        reorderTo(a.routeId, index.routeIndex.get(o.routeId) ?? 0);
      }
    },
    [index, move, onDragFinish, reorderTo],
  );
  return (
    <DndContext
      sensors={sensors}
      collisionDetection={collisionDetection}
      onDragStart={onDragStart}
      onDragEnd={onDragEnd}
      onDragCancel={onDragFinish}
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
        colorMode="system"
        nodes={props.nodes}
        edges={props.edges}
        nodeTypes={nodeTypes}
        onInit={props.onInit}
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
        <Background gap={24} color="var(--color-slate-300)" />
        <Controls showInteractive={false} showFitView={false} position="bottom-left">
          <ControlButton onClick={props.onFit} aria-label="Fit view" title="Fit view">
            <svg aria-hidden viewBox="0 0 20 20" fill="none" stroke="currentColor" strokeWidth="2">
              <path d="M3 7V3h4M13 3h4v4M17 13v4h-4M7 17H3v-4" />
            </svg>
          </ControlButton>
          <ControlButton
            onClick={() => setMapShown((v) => !v)}
            aria-label={mapShown ? "Hide overview map" : "Show overview map"}
            title={mapShown ? "Hide overview map" : "Show overview map"}
            aria-pressed={mapShown}
          >
            <svg aria-hidden viewBox="0 0 20 20" fill="none" stroke="currentColor" strokeWidth="2">
              <path d="M2 5l5-2 6 2 5-2v12l-5 2-6-2-5 2zM7 3v12M13 5v12" />
            </svg>
          </ControlButton>
        </Controls>
        {mapShown && <MiniMap pannable zoomable position="bottom-right" nodeColor={miniMapColor} nodeStrokeWidth={0} ariaLabel="Overview of the diagram" />}
      </ReactFlow>
      <DragOverlay dropAnimation={null}>
        <DragPreview />
      </DragOverlay>
    </DndContext>
  );
}
