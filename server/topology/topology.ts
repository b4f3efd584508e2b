/**
 * The cluster as the dashboard sees it: servers with status and load, their inbounds, and
 * routes in position order. One read, shaped for the diagram.
 */
import { TRPCError } from "@trpc/server";
import { asc, eq } from "drizzle-orm";
import type { DbOrTx } from "@/db/client";
import { clusters, inbounds, routes, serverAgentState, serverHealth, serverMetrics, servers } from "@/db/schema";
import { computeWarnings } from "@/core/warnings";
import { effectiveProbeConfig } from "@/core/monitoring-contract";
import { effectiveStatus } from "@/core/status";
import type { LineName } from "@/core/format";
import { countAssignmentsByInbound } from "@/server/assignments/store";
import { countRouteUsers } from "@/server/usage/route-users";

export async function loadTopology(db: DbOrTx, clusterId: string) {
  const [cluster] = await db.select().from(clusters).where(eq(clusters.id, clusterId));
  if (!cluster) return null;
  // Only the columns the diagram shows: at 2,000 inbounds the rest (keys, arrays,
  // timestamps) were most of what the database had to encode and the driver to parse.
  const [serverRows, inboundRows, routeRows, userCounts, routeUsers] = await Promise.all([
    db
      .select({
        server: {
          id: servers.id,
          name: servers.name,
          address: servers.address,
          role: servers.role,
          coefficient: servers.coefficient,
          capacityMbps: servers.capacityMbps,
          enabled: servers.enabled,
          probeOverride: servers.probeOverride,
          version: servers.version,
        },
        health: { status: serverHealth.status, statusReason: serverHealth.statusReason, statusSince: serverHealth.statusSince },
        metrics: { usersOnline: serverMetrics.usersOnline, rxBps: serverMetrics.rxBps, txBps: serverMetrics.txBps, reportedAt: serverMetrics.reportedAt },
        notServed: serverAgentState.unservedInbounds,
      })
      .from(servers)
      .leftJoin(serverHealth, eq(serverHealth.serverId, servers.id))
      .leftJoin(serverMetrics, eq(serverMetrics.serverId, servers.id))
      .leftJoin(serverAgentState, eq(serverAgentState.serverId, servers.id))
      .where(eq(servers.clusterId, clusterId))
      .orderBy(asc(servers.name)),
    db
      .select({
        id: inbounds.id,
        serverId: inbounds.serverId,
        routeId: inbounds.routeId,
        name: inbounds.name,
        port: inbounds.port,
        protocol: inbounds.protocol,
        transport: inbounds.transport,
        security: inbounds.security,
        sni: inbounds.sni,
        isFallback: inbounds.isFallback,
        version: inbounds.version,
      })
      .from(inbounds)
      .where(eq(inbounds.clusterId, clusterId))
      .orderBy(asc(inbounds.name)),
    db
      .select({
        id: routes.id,
        name: routes.name,
        flag: routes.flag,
        algorithm: routes.algorithm,
        lineName: routes.lineName,
        hysteresis: routes.hysteresis,
        position: routes.position,
        version: routes.version,
      })
      .from(routes)
      .where(eq(routes.clusterId, clusterId))
      .orderBy(asc(routes.position), asc(routes.createdAt)),
    // Users per inbound = the balancer's stored assignments pointing at it.
    countAssignmentsByInbound(db, clusterId),
    countRouteUsers(db, clusterId),
  ]);
  const usersByInbound = new Map(userCounts.map((r) => [r.inboundId, Number(r.n)]));
  // What each server's agent said it does not serve, keyed by server then inbound: an inbound
  // is only ever judged by its own server's word.
  const notServed = new Map(serverRows.map((r) => [r.server.id, new Map((r.notServed ?? []).map((u) => [u.inboundId, u.reason]))]));
  return {
    cluster: {
      id: cluster.id,
      name: cluster.name,
      reportIntervalS: cluster.reportIntervalS,
      probesEnabled: effectiveProbeConfig(cluster.probeConfig, null).enabled,
    },
    /** Users of each non-empty route (core/impact.ts asks before a change costs them one). */
    routeUsers,
    servers: serverRows.map(({ server, health, metrics }) => ({
      id: server.id,
      name: server.name,
      address: server.address,
      role: server.role,
      coefficient: server.coefficient,
      capacityMbps: server.capacityMbps,
      enabled: server.enabled,
      probesEnabled: effectiveProbeConfig(cluster.probeConfig, server.probeOverride).enabled,
      version: server.version,
      status: effectiveStatus(server.enabled, health?.status),
      statusReason: health?.statusReason ?? null,
      statusSince: health?.statusSince ?? null,
      usersOnline: metrics?.usersOnline ?? 0,
      trafficBps: metrics ? Math.max(metrics.rxBps, metrics.txBps) : 0,
      reportedAt: metrics?.reportedAt ?? null,
    })),
    inbounds: inboundRows.map((i) => ({
      id: i.id,
      serverId: i.serverId,
      routeId: i.routeId,
      name: i.name,
      port: i.port,
      protocol: i.protocol,
      transport: i.transport,
      security: i.security,
      sni: i.sni,
      isFallback: i.isFallback,
      version: i.version,
      users: usersByInbound.get(i.id) ?? 0,
      /** Why the balancer never hands it out although its server may be up (issue 25); null = it may. */
      unavailable: notServed.get(i.serverId)?.get(i.id) ?? null,
    })),
    routes: routeRows.map((r) => ({
      id: r.id,
      name: r.name,
      flag: r.flag,
      algorithm: r.algorithm,
      lineName: r.lineName as LineName,
      hysteresis: r.hysteresis,
      position: r.position,
      version: r.version,
    })),
  };
}

/** One cluster as the dashboard draws it (the answer of topology.get). */
export type ClusterTopology = NonNullable<Awaited<ReturnType<typeof loadTopology>>>;

/** The topology with its warnings, as the diagram shows it; NOT_FOUND for a missing cluster. */
export async function topologyWithWarnings(db: DbOrTx, clusterId: string) {
  const topology = await loadTopology(db, clusterId);
  if (!topology) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
  return { ...topology, warnings: computeWarnings(topology) };
}
