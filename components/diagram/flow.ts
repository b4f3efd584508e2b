/**
 * React Flow's nodes and edges from the pure layout and the topology. Unchanged boxes and
 * edges keep their object identity across refetches (pass the previous cache back in), so
 * React Flow only re-processes what moved: at 2,000 inbounds a full rebuild costs a
 * noticeable pause.
 */
import type { Edge } from "@xyflow/react";
import { effectiveRouteId } from "@/core/topology";
import { routeColor } from "@/core/format";
import { DISTRIBUTION_NODE_ID, routeNodeId, serverNodeId, type Layout } from "./layout";
import type { DiagramNode } from "./nodes/types";

export interface FlowTopology {
  inbounds: ReadonlyArray<{ id: string; name: string; serverId: string; routeId: string | null }>;
  /** In position order. */
  routes: ReadonlyArray<{ id: string; name: string }>;
}

/** Dozens of animated pipes keep the page repainting: animate only a readable few. */
export const MAX_ANIMATED_ROUTES = 24;

export function buildNodes(layout: Layout, previous: ReadonlyMap<string, DiagramNode>): { nodes: DiagramNode[]; cache: Map<string, DiagramNode> } {
  const cache = new Map<string, DiagramNode>();
  const nodes = layout.boxes.map((b) => {
    const prev = previous.get(b.id);
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
    cache.set(b.id, node);
    return node;
  });
  return { nodes, cache };
}

/** One edge per inbound in a route (chip → route), one pipe per non-empty route (route → subscription). */
export function buildEdges(topology: FlowTopology, previous: ReadonlyMap<string, Edge>): { edges: Edge[]; cache: Map<string, Edge> } {
  const routeById = new Map(topology.routes.map((r) => [r.id, r]));
  const position = new Map(topology.routes.map((r, i) => [r.id, i]));
  const members = new Map<string, number>();
  const cache = new Map<string, Edge>();
  const edges: Edge[] = [];
  const keep = (e: Edge, key: string) => {
    const prev = previous.get(e.id);
    const edge = prev && prev.data?.key === key ? prev : { ...e, data: { key } };
    cache.set(e.id, edge);
    edges.push(edge);
  };
  for (const i of topology.inbounds) {
    const routeId = effectiveRouteId(i, routeById);
    if (routeId === null) continue;
    members.set(routeId, (members.get(routeId) ?? 0) + 1);
    const color = routeColor(position.get(routeId) ?? 0);
    const routeName = routeById.get(routeId)?.name;
    keep(
      {
        id: `ib:${i.id}`,
        source: serverNodeId(i.serverId),
        sourceHandle: `ib:${i.id}`,
        target: routeNodeId(routeId),
        targetHandle: "in",
        ariaLabel: `${i.name} is in ${routeName}`,
        style: { stroke: color, strokeWidth: 1.6, opacity: 0.75 },
        focusable: false,
        selectable: false,
      },
      `${i.serverId}|${routeId}|${color}|${i.name}|${routeName}`,
    );
  }
  for (const r of topology.routes) {
    if ((members.get(r.id) ?? 0) === 0) continue;
    const color = routeColor(position.get(r.id) ?? 0);
    keep(
      {
        id: `pipe:${r.id}`,
        source: routeNodeId(r.id),
        sourceHandle: "out",
        target: DISTRIBUTION_NODE_ID,
        targetHandle: "in",
        animated: topology.routes.length <= MAX_ANIMATED_ROUTES,
        ariaLabel: `Pipe from ${r.name} to the subscription`,
        style: { stroke: color, strokeWidth: 3.5 },
        focusable: false,
        selectable: false,
      },
      `${color}|${r.name}`,
    );
  }
  return { edges, cache };
}
