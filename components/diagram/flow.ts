/**
 * React Flow's nodes and edges from the pure layout and the topology. Unchanged boxes and
 * edges keep their object identity across refetches (pass the previous cache back in), so
 * React Flow only re-processes what moved: at 2,000 inbounds a full rebuild costs a
 * noticeable pause. A box's data (what it draws) keeps its identity too when its content is
 * the same, so its memoised node component does not re-render.
 */
import { replaceEqualDeep } from "@tanstack/react-query";
import { Position, type Edge, type NodeHandle } from "@xyflow/react";
import { effectiveRouteId } from "@/core/topology";
import { protocolSummary } from "@/core/inbound-protocols";
import { routeColor } from "@/core/format";
import { routePanic, type RoutePanic } from "@/core/panic";
import { isAvailable } from "@/core/status";
import { CHIP_HEIGHT, chipTop, DISTRIBUTION_NODE_ID, routeNodeId, serverNodeId, UNASSIGNED_MAX_ITEMS, type Box, type Layout } from "./layout";
import type { DiagramNode, DistributionBox, RouteBox, ServerBox, UnassignedBox } from "./nodes/types";

export interface FlowTopology {
  /** With their status (DESIGN §3); without servers every edge is drawn as available. */
  servers?: ReadonlyArray<{ id: string; status: string }>;
  /** `unavailable`: why its server does not serve it (issue 25); its edge is dashed like a down server's. */
  inbounds: ReadonlyArray<{ id: string; name: string; serverId: string; routeId: string | null; unavailable?: string | null }>;
  /** In position order. */
  routes: ReadonlyArray<{ id: string; name: string }>;
}

/** A route in panic: its border, header and pipe (the legend uses the same). */
export const PANIC_COLOR = "#dc2626";
/** The dash of an edge whose inbound's server is out of rotation. */
export const DOWN_DASH = "6 5";
/** A pipe that carries no line (every server of the route disabled): thin and dotted. */
export const NO_LINE_DASH = "2 6";

/** Dozens of animated pipes keep the page repainting: animate only a readable few. */
export const MAX_ANIMATED_ROUTES = 24;

/** What a box's handles depend on besides its size: the chips of a server, whether a route has members. */
export interface FlowGroups {
  /** In chip order. */
  inboundsByServer: ReadonlyMap<string, ReadonlyArray<{ id: string }>>;
  /** Only routes with members have an entry. */
  inboundsByRoute: ReadonlyMap<string, ReadonlyArray<unknown>>;
}

/** Border of the server boxes (border-2): chips start below it. */
const BOX_BORDER = 2;
/** Sizes of the handles (the nodes' !h-2 / !h-2.5 / !h-3 classes). */
const CHIP_HANDLE = 8;
const ROUTE_HANDLE = 10;
const DIST_HANDLE = 12;
/** A chip's handle sits this far inside the server box's right edge (the chip's `right: -13`). */
const CHIP_HANDLE_INSET = 2;

function handle(id: string, type: "source" | "target", position: Position, cx: number, cy: number, size: number): NodeHandle {
  return { id, type, position, x: cx - size / 2, y: cy - size / 2, width: size, height: size };
}

/**
 * A box's handles where React Flow would measure them once the box is drawn (centred on the
 * box's edge; a chip's at the chip's middle). Given with the node, React Flow can draw
 * edges to boxes it never rendered; without them it mounts every box once to measure it,
 * even with onlyRenderVisibleElements (600 boxes and ~50,000 elements at 500 servers, then
 * drops all but the few on screen), which made the diagram's first render slow.
 */
export function boxHandles(b: Box, groups: FlowGroups): NodeHandle[] {
  switch (b.kind) {
    case "server":
      return (groups.inboundsByServer.get(b.refId ?? "") ?? []).map((i, k) =>
        handle(`ib:${i.id}`, "source", Position.Right, b.width - CHIP_HANDLE_INSET, BOX_BORDER + chipTop(k) + CHIP_HEIGHT / 2, CHIP_HANDLE),
      );
    case "route": {
      const hs = [handle("in", "target", Position.Left, 0, b.height / 2, ROUTE_HANDLE)];
      if (groups.inboundsByRoute.has(b.refId ?? "")) hs.push(handle("out", "source", Position.Right, b.width, b.height / 2, ROUTE_HANDLE));
      return hs;
    }
    case "distribution":
      return [handle("in", "target", Position.Left, 0, b.height / 2, DIST_HANDLE)];
    case "unassigned":
      return [];
  }
}

/** What a box's handles are made of, to tell whether a cached node still fits. */
function handlesKey(b: Box, groups: FlowGroups): string {
  if (b.kind === "server") return (groups.inboundsByServer.get(b.refId ?? "") ?? []).map((i) => i.id).join(",");
  if (b.kind === "route") return String(groups.inboundsByRoute.has(b.refId ?? ""));
  return "";
}
const nodeHandlesKey = new WeakMap<DiagramNode, string>();

/** The rows of the topology that the boxes draw (the diagram's index has them with more). */
export type FlowServer = {
  id: string;
  name: string;
  address: string;
  status: string;
  statusReason: string | null;
  usersOnline: number;
  trafficBps: number;
};
export interface FlowInbound {
  id: string;
  name: string;
  serverId: string;
  routeId: string | null;
  port: number;
  users: number;
  isFallback: boolean;
  /** Why its server does not serve it now (issue 25); null = it does. */
  unavailable: string | null;
  /** Protocol, transport and security (issue 26): the chip's "VMess·ws·TLS"; absent in old snapshots. */
  protocol?: string;
  transport?: string;
  security?: "reality" | "tls" | "none";
}
export interface FlowRoute {
  id: string;
  name: string;
  flag: string | null;
  algorithm: string;
}

/** The lookups the boxes' data is built from: the diagram's index (./topology-index). */
export interface FlowIndex extends FlowGroups {
  serverById: ReadonlyMap<string, FlowServer>;
  routeById: ReadonlyMap<string, FlowRoute>;
  /** A route's place in the order, from 0. */
  routeIndex: ReadonlyMap<string, number>;
  inboundsByServer: ReadonlyMap<string, readonly FlowInbound[]>;
  inboundsByRoute: ReadonlyMap<string, readonly FlowInbound[]>;
  unassigned: readonly FlowInbound[];
  panicByRoute: ReadonlyMap<string, RoutePanic>;
  trafficByInbound: ReadonlyMap<string, InboundTraffic>;
}

type BoxContent = Pick<ServerBox, "type" | "data"> | Pick<RouteBox, "type" | "data"> | Pick<UnassignedBox, "type" | "data"> | Pick<DistributionBox, "type" | "data">;

function lookup<T>(map: ReadonlyMap<string, T>, id: string | null, box: Box): T {
  const found = map.get(id ?? "");
  // The layout and the index come from the same topology: a box always has its row.
  if (found === undefined) throw new Error(`box ${box.id} has no row in the topology`);
  return found;
}

/** What a box draws: only the fields it shows, so a change elsewhere leaves it equal. */
export function boxContent(b: Box, index: FlowIndex): BoxContent {
  switch (b.kind) {
    case "server": {
      const s = lookup(index.serverById, b.refId, b);
      const chips = (index.inboundsByServer.get(s.id) ?? []).map((i) => {
        const routeId = effectiveRouteId(i, index.routeById);
        const route = routeId === null ? null : lookup(index.routeById, routeId, b);
        return {
          id: i.id,
          name: i.name,
          port: i.port,
          users: i.users,
          isFallback: i.isFallback,
          unavailable: i.unavailable,
          kind: i.protocol && i.security ? protocolSummary({ protocol: i.protocol, transport: i.transport, security: i.security }) : null,
          route: route && { id: route.id, name: route.name, color: routeColor(index.routeIndex.get(route.id) ?? 0) },
        };
      });
      const { id, name, address, status, statusReason, usersOnline, trafficBps } = s;
      return { type: "server", data: { id, name, address, status, statusReason, usersOnline, trafficBps, chips } };
    }
    case "route": {
      const r = lookup(index.routeById, b.refId, b);
      const position = index.routeIndex.get(r.id) ?? 0;
      const members = (index.inboundsByRoute.get(r.id) ?? []).map((i) => {
        const server = index.serverById.get(i.serverId);
        return {
          id: i.id,
          name: i.name,
          isFallback: i.isFallback,
          unavailable: i.unavailable,
          users: i.users,
          traffic: index.trafficByInbound.get(i.id) ?? { bps: 0, estimated: false },
          server: server ? { name: server.name, status: server.status, statusReason: server.statusReason, trafficBps: server.trafficBps } : null,
        };
      });
      return {
        type: "route",
        data: {
          id: r.id,
          name: r.name,
          flag: r.flag,
          algorithm: r.algorithm,
          position,
          last: position === index.routeIndex.size - 1,
          color: routeColor(position),
          panic: index.panicByRoute.get(r.id) ?? null,
          members,
        },
      };
    }
    case "unassigned":
      return {
        type: "unassigned",
        data: {
          count: index.unassigned.length,
          shown: index.unassigned.slice(0, UNASSIGNED_MAX_ITEMS).map((i) => ({ id: i.id, name: i.name, serverName: index.serverById.get(i.serverId)?.name ?? null })),
        },
      };
    case "distribution":
      return { type: "distribution", data: { lines: index.inboundsByRoute.size } };
  }
}

/**
 * Structural sharing: the previous data object when equal, and its equal parts (chips,
 * rows) when not, so the memoised parts of a box that changed keep theirs too.
 */
function sharePrevious<C extends BoxContent>(content: C, previous: unknown): C {
  return { ...content, data: replaceEqualDeep(previous, content.data) };
}

export function buildNodes(
  layout: Layout,
  index: FlowIndex,
  previous: ReadonlyMap<string, DiagramNode>,
): { nodes: DiagramNode[]; cache: Map<string, DiagramNode> } {
  const cache = new Map<string, DiagramNode>();
  const nodes = layout.boxes.map((b) => {
    const prev = previous.get(b.id);
    const key = handlesKey(b, index);
    const content = sharePrevious(boxContent(b, index), prev?.data);
    let node: DiagramNode;
    if (
      prev &&
      content.data === prev.data &&
      prev.position.x === b.x &&
      prev.position.y === b.y &&
      prev.width === b.width &&
      prev.height === b.height &&
      nodeHandlesKey.get(prev) === key
    ) {
      node = prev;
    } else {
      node = {
        id: b.id,
        ...content,
        position: { x: b.x, y: b.y },
        width: b.width,
        height: b.height,
        handles: boxHandles(b, index),
        draggable: false,
        selectable: false,
        connectable: false,
        focusable: false,
      };
      nodeHandlesKey.set(node, key);
    }
    cache.set(b.id, node);
    return node;
  });
  return { nodes, cache };
}

/**
 * One edge per inbound in a route (chip → route), one pipe per non-empty route (route →
 * subscription). An inbound whose server is not available, or that its server does not serve,
 * has a dashed edge; the pipe of
 * a route in panic is red (thin and dotted when every server is disabled: no line at all).
 */
export function buildEdges(topology: FlowTopology, previous: ReadonlyMap<string, Edge>): { edges: Edge[]; cache: Map<string, Edge> } {
  const routeById = new Map(topology.routes.map((r) => [r.id, r]));
  const position = new Map(topology.routes.map((r, i) => [r.id, i]));
  const status = topology.servers ? new Map(topology.servers.map((s) => [s.id, s.status])) : null;
  const up = (serverId: string) => status === null || isAvailable(status.get(serverId));
  const members = new Map<string, Array<{ serverId: string }>>();
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
    const list = members.get(routeId);
    if (list) list.push(i);
    else members.set(routeId, [i]);
    const color = routeColor(position.get(routeId) ?? 0);
    const routeName = routeById.get(routeId)?.name;
    const down = !up(i.serverId) || !!i.unavailable;
    keep(
      {
        id: `ib:${i.id}`,
        source: serverNodeId(i.serverId),
        sourceHandle: `ib:${i.id}`,
        target: routeNodeId(routeId),
        targetHandle: "in",
        // Tests and screen readers find edges by these names: the state is in the style, not the name.
        ariaLabel: `${i.name} is in ${routeName}`,
        style: down ? { stroke: color, strokeWidth: 1.6, opacity: 0.6, strokeDasharray: DOWN_DASH } : { stroke: color, strokeWidth: 1.6, opacity: 0.75 },
        focusable: false,
        selectable: false,
      },
      `${i.serverId}|${routeId}|${color}|${i.name}|${routeName}|${down}`,
    );
  }
  for (const r of topology.routes) {
    const list = members.get(r.id);
    if (!list) continue;
    const panic = status === null ? null : routePanic(list, (id) => status.get(id));
    const color = panic ? PANIC_COLOR : routeColor(position.get(r.id) ?? 0);
    const noLine = panic !== null && !panic.serving;
    keep(
      {
        id: `pipe:${r.id}`,
        source: routeNodeId(r.id),
        sourceHandle: "out",
        target: DISTRIBUTION_NODE_ID,
        targetHandle: "in",
        animated: !noLine && topology.routes.length <= MAX_ANIMATED_ROUTES,
        ariaLabel: `Pipe from ${r.name} to the subscription`,
        style: noLine ? { stroke: color, strokeWidth: 2, strokeDasharray: NO_LINE_DASH } : { stroke: color, strokeWidth: 3.5 },
        focusable: false,
        selectable: false,
      },
      `${color}|${r.name}|${noLine}`,
    );
  }
  return { edges, cache };
}

export interface InboundTraffic {
  bps: number;
  /** True when the server's traffic was split between several inbounds (agents report per server). */
  estimated: boolean;
}

/**
 * The traffic each inbound carries now. Agents report traffic per server, so a server's
 * traffic is split between its inbounds by the users the balancer assigned to each (evenly
 * when none has any); a server's only inbound carries all of it, exactly. An inbound its
 * server does not serve (issue 25) carries nothing: it is left out of the split.
 */
export function inboundTraffic(
  servers: ReadonlyArray<{ id: string; trafficBps: number }>,
  inbounds: ReadonlyArray<{ id: string; serverId: string; users: number; unavailable?: string | null }>,
): Map<string, InboundTraffic> {
  const byServer = new Map<string, { count: number; users: number }>();
  const out = new Map<string, InboundTraffic>();
  const served = inbounds.filter((i) => {
    if (!i.unavailable) return true;
    out.set(i.id, { bps: 0, estimated: false });
    return false;
  });
  for (const i of served) {
    const t = byServer.get(i.serverId);
    const users = Math.max(0, i.users || 0);
    if (t) {
      t.count++;
      t.users += users;
    } else byServer.set(i.serverId, { count: 1, users });
  }
  const traffic = new Map(servers.map((s) => [s.id, Number.isFinite(s.trafficBps) && s.trafficBps > 0 ? s.trafficBps : 0]));
  for (const i of served) {
    const total = traffic.get(i.serverId) ?? 0;
    const t = byServer.get(i.serverId)!;
    if (t.count === 1) out.set(i.id, { bps: total, estimated: false });
    else out.set(i.id, { bps: t.users > 0 ? (total * Math.max(0, i.users || 0)) / t.users : total / t.count, estimated: true });
  }
  return out;
}
