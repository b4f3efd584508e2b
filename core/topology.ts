/**
 * The rules of a cluster's shape, shared by the server (warnings, moves, route deletion)
 * and the dashboard (diagram, optimistic updates): which route an inbound is really in,
 * what a move changes, and the inbounds grouped by server and by route.
 * Browser-safe: no I/O, no imports beyond types.
 */

/** A drop target: a route id, or null for Unassigned. */
export type Target = string | null;

interface HasRouteId {
  routeId: string | null;
}

/** Anything that can answer "is there a route with this id?" (a Set or a Map). */
export interface RouteLookup {
  has(routeId: string): boolean;
}

/**
 * The route an inbound is in as users see it: an inbound whose route is gone (or that
 * has none) counts as unassigned, null.
 */
export function effectiveRouteId(inbound: HasRouteId, routes: RouteLookup): Target {
  return inbound.routeId !== null && routes.has(inbound.routeId) ? inbound.routeId : null;
}

/**
 * The fields a move to `toRouteId` sets. Leaving a route clears the fallback mark: a
 * fallback belongs to its route.
 */
export function moveChanges(toRouteId: Target): { routeId: Target; isFallback: false } {
  return { routeId: toRouteId, isFallback: false };
}

/**
 * The inbound after moving it to `toRouteId` (null = Unassigned). A move to the route it
 * is already in changes nothing (and keeps the fallback mark); the input is never mutated.
 */
export function applyMove<I extends HasRouteId & { isFallback: boolean }>(inbound: I, toRouteId: Target): I {
  if (inbound.routeId === toRouteId) return inbound;
  return { ...inbound, ...moveChanges(toRouteId) };
}

export interface TopologyShape<S extends { id: string }, I extends { id: string; serverId: string } & HasRouteId, R extends { id: string }> {
  servers: readonly S[];
  inbounds: readonly I[];
  /** In position order. */
  routes: readonly R[];
}

/** A topology's lookups, built once per change. Lists keep the input's order. */
export interface TopologyGroups<S, I, R> {
  serverById: Map<string, S>;
  inboundById: Map<string, I>;
  routeById: Map<string, R>;
  inboundsByServer: Map<string, I[]>;
  /** Only routes with members have an entry. */
  inboundsByRoute: Map<string, I[]>;
  /** Inbounds in no route, or in one that is gone. */
  unassigned: I[];
  /** A route's place in the order, from 0. */
  routeIndex: Map<string, number>;
  /** Every place an inbound can go: Unassigned (null) first, then route ids in order. */
  targets: Target[];
}

export function groupTopology<S extends { id: string }, I extends { id: string; serverId: string } & HasRouteId, R extends { id: string }>(
  t: TopologyShape<S, I, R>,
): TopologyGroups<S, I, R> {
  const routeById = new Map(t.routes.map((r) => [r.id, r]));
  const inboundsByServer = new Map<string, I[]>();
  const inboundsByRoute = new Map<string, I[]>();
  const unassigned: I[] = [];
  for (const i of t.inbounds) {
    push(inboundsByServer, i.serverId, i);
    const routeId = effectiveRouteId(i, routeById);
    if (routeId === null) unassigned.push(i);
    else push(inboundsByRoute, routeId, i);
  }
  return {
    serverById: new Map(t.servers.map((s) => [s.id, s])),
    inboundById: new Map(t.inbounds.map((i) => [i.id, i])),
    routeById,
    inboundsByServer,
    inboundsByRoute,
    unassigned,
    routeIndex: new Map(t.routes.map((r, i) => [r.id, i])),
    targets: [null, ...t.routes.map((r) => r.id)],
  };
}

function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
