/**
 * What the operator should fix, computed from the topology alone (pure, no I/O), so the
 * server returns it with topology.get and the dashboard can recompute it on an optimistic
 * update. A warning disappears as soon as its cause is fixed.
 */
import { groupTopology } from "./topology";
import { isRouteInPanic } from "./panic";
import { isAvailable } from "./status";
import { computeMonitoringWarnings, type MonitoringWarning, type WarningServer } from "./config-warnings";

export interface WarningInput {
  /** Whether the cluster's active probes are on (absent = on). */
  cluster?: { probesEnabled?: boolean };
  servers: ReadonlyArray<
    WarningServer & {
      /** The agent's last report; null = never reported (absent = unknown). */
      reportedAt?: Date | string | number | null;
    }
  >;
  inbounds: ReadonlyArray<{
    id: string;
    name: string;
    serverId: string;
    routeId: string | null;
    isFallback?: boolean;
    /** Why its server does not serve it now (issue 25); null/absent = it does. */
    unavailable?: string | null;
  }>;
  routes: ReadonlyArray<{ id: string; name: string }>;
}

export type Warning =
  | { kind: "unassigned"; id: string; message: string; inbounds: Array<{ id: string; name: string }> }
  | { kind: "single-inbound"; id: string; message: string; routeId: string; routeName: string }
  | { kind: "single-server"; id: string; message: string; routeId: string; routeName: string; serverName: string }
  | { kind: "no-available"; id: string; message: string; routeId: string; routeName: string }
  | { kind: "inbound-unavailable"; id: string; message: string; inboundId: string; inboundName: string; reason: string }
  | MonitoringWarning;

/**
 * Warnings in a stable order: unassigned first, then inbounds their server does not serve,
 * then per route in the given route order, then the monitoring configuration (probes off, a
 * fallback that is itself down).
 */
export function computeWarnings(topology: WarningInput): Warning[] {
  const warnings: Warning[] = [];
  const { unassigned, inboundsByRoute: byRoute, serverById } = groupTopology(topology);
  if (unassigned.length > 0) {
    const n = unassigned.length;
    warnings.push({
      kind: "unassigned",
      id: "unassigned",
      message:
        n === 1
          ? "1 inbound is not in any route — clients can't see it"
          : `${n} inbounds are not in any route — clients can't see them`,
      inbounds: unassigned.map((i) => ({ id: i.id, name: i.name })),
    });
  }
  // Inbounds their server does not serve: never handed out, whatever the diagram's colours say.
  for (const i of topology.inbounds) {
    if (!i.unavailable) continue;
    const serverName = serverById.get(i.serverId)?.name ?? "its server";
    warnings.push({
      kind: "inbound-unavailable",
      id: `inbound-unavailable:${i.id}`,
      inboundId: i.id,
      inboundName: i.name,
      reason: i.unavailable,
      message: `${i.name} on ${serverName} is not served: ${i.unavailable} — no subscriber is given it`,
    });
  }
  for (const route of topology.routes) {
    const members = byRoute.get(route.id) ?? [];
    // An empty route is a placeholder, invisible to users: nothing to warn about.
    if (members.length === 0) continue;
    if (members.length === 1) {
      warnings.push({
        kind: "single-inbound",
        id: `single-inbound:${route.id}`,
        routeId: route.id,
        routeName: route.name,
        message: `${route.name} has a single inbound — no failover if it goes down`,
      });
    } else {
      const serverIds = new Set(members.map((m) => m.serverId));
      if (serverIds.size === 1) {
        const serverName = serverById.get(members[0]!.serverId)?.name ?? "one server";
        warnings.push({
          kind: "single-server",
          id: `single-server:${route.id}`,
          routeId: route.id,
          routeName: route.name,
          serverName,
          message: `All inbounds of ${route.name} are on ${serverName} — that server is a single point of failure`,
        });
      }
    }
    if (isRouteInPanic(members, (id) => isAvailable(serverById.get(id)?.status))) {
      warnings.push({
        kind: "no-available",
        id: `no-available:${route.id}`,
        routeId: route.id,
        routeName: route.name,
        message: members.some((m) => m.unavailable && isAvailable(serverById.get(m.serverId)?.status))
          ? `${route.name} has no available inbound — none is both on a healthy server and served by it`
          : `${route.name} has no available inbound — none of its servers is healthy`,
      });
    }
  }
  warnings.push(
    ...computeMonitoringWarnings({
      clusterProbesEnabled: topology.cluster?.probesEnabled ?? true,
      servers: topology.servers.map((s) => ({ ...s, neverReported: s.reportedAt === null })),
      inbounds: topology.inbounds.map((i) => ({ ...i, isFallback: i.isFallback ?? false })),
      routes: topology.routes,
    }),
  );
  return warnings;
}
