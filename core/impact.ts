/**
 * What a risky change takes away from users, before it is made: the routes it leaves with
 * no available inbound (or deletes), and how many users get those routes. The dashboard
 * asks for confirmation when the answer is not empty. Pure and browser-safe.
 *
 * "Available" is the balancer's rule: the inbound's server is enabled and its status is
 * `healthy` (core/status.ts isAvailable). Every subscriber who may connect gets one line per
 * non-empty route, so a route's users are those subscribers; the same people use every
 * route, so the users of several routes are not added up.
 */
import { isAvailable } from "./status";
import { effectiveRouteId } from "./topology";

export type Change =
  | { kind: "disable-server"; serverId: string }
  | { kind: "delete-server"; serverId: string }
  | { kind: "move-inbound"; inboundId: string; toRouteId: string | null }
  | { kind: "delete-inbound"; inboundId: string }
  | { kind: "delete-route"; routeId: string };

export interface ImpactTopology {
  servers: readonly { id: string; enabled: boolean; status: string }[];
  inbounds: readonly { id: string; serverId: string; routeId: string | null }[];
  /** In position order. */
  routes: readonly { id: string; name: string }[];
  /** Subscribers who may connect now: each gets every non-empty route. */
  routeUsers: number;
}

export interface AffectedRoute {
  id: string;
  name: string;
  /** `no-available-inbound`: the route stays but nothing in it works; `deleted`: it goes. */
  reason: "no-available-inbound" | "deleted";
}

export interface Impact {
  routes: AffectedRoute[];
  /** Users who lose a working line (0 when no route is affected). */
  users: number;
}

type Inbound = ImpactTopology["inbounds"][number];

/** The routes that lose their last available inbound (or are deleted) through `change`. */
export function impactOf(change: Change, t: ImpactTopology): Impact {
  const routeIds = new Set(t.routes.map((r) => r.id));
  const serverById = new Map(t.servers.map((s) => [s.id, s]));
  const available = (i: Inbound, disabledServer?: string) => {
    const s = serverById.get(i.serverId);
    return !!s && s.enabled && s.id !== disabledServer && isAvailable(s.status);
  };

  // The inbounds after the change, and which servers count as off.
  let after: readonly Inbound[] = t.inbounds;
  let offServer: string | undefined;
  const deleted: AffectedRoute[] = [];
  switch (change.kind) {
    case "disable-server":
      offServer = change.serverId;
      break;
    case "delete-server":
      after = t.inbounds.filter((i) => i.serverId !== change.serverId);
      break;
    case "delete-inbound":
      after = t.inbounds.filter((i) => i.id !== change.inboundId);
      break;
    case "move-inbound":
      after = t.inbounds.map((i) => (i.id === change.inboundId ? { ...i, routeId: change.toRouteId } : i));
      break;
    case "delete-route": {
      const route = t.routes.find((r) => r.id === change.routeId);
      // Users lose the route only if it gave them a line (an empty route gives none).
      if (route && t.inbounds.some((i) => effectiveRouteId(i, routeIds) === route.id)) deleted.push({ id: route.id, name: route.name, reason: "deleted" });
      after = t.inbounds.filter((i) => effectiveRouteId(i, routeIds) !== change.routeId);
      break;
    }
  }

  const countAvailable = (list: readonly Inbound[], off?: string) => {
    const n = new Map<string, number>();
    for (const i of list) {
      const r = effectiveRouteId(i, routeIds);
      if (r !== null && available(i, off)) n.set(r, (n.get(r) ?? 0) + 1);
    }
    return n;
  };
  const before = countAvailable(t.inbounds);
  const afterCounts = countAvailable(after, offServer);

  const emptied: AffectedRoute[] = t.routes
    .filter((r) => (before.get(r.id) ?? 0) > 0 && (afterCounts.get(r.id) ?? 0) === 0 && !deleted.some((d) => d.id === r.id))
    .map((r) => ({ id: r.id, name: r.name, reason: "no-available-inbound" as const }));
  const routes = [...deleted, ...emptied];
  return { routes, users: routes.length > 0 ? Math.max(0, t.routeUsers) : 0 };
}
