/**
 * Test and fleet tooling: synthetic clusters (bench, bench-ui), simulated fleets (fleet, demo,
 * soak) and the assignment counts they poll. Reached through the tooling router, which exists
 * only when ROUTEBOARD_DEVTOOLS=1, and by the app's live demo (server/demo/live.ts), which
 * takes over only the demo cluster's servers.
 */
import { TRPCError } from "@trpc/server";
import { and, asc, count, eq, inArray, sql } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { clusters, inbounds, routes, serverHealth, serverMetrics, servers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { uniqueViolation } from "@/server/db-errors";
import { written, type Actor, type Written } from "@/server/changes";
import { clusterOr404 } from "@/server/monitoring/cluster-health";
import { newAgentToken } from "@/server/auth/tokens";
import { countAssignmentsByInbound } from "@/server/assignments/store";
import { freeLocalPorts } from "./local-ports";

export const MAX_FLEET_SERVERS = 200;

export interface PlanServer {
  serverId: string;
  name: string;
  token: string;
  inboundPorts: number[];
  healthPort: number;
}

/**
 * Moves the given servers to 127.0.0.1 with fresh agent tokens, and every inbound of theirs
 * to a distinct free local port. Returns the fleet plan (tokens are shown only here).
 */
export async function localiseServers(tx: DbOrTx, serverIds: string[]): Promise<PlanServer[]> {
  if (serverIds.length === 0) return [];
  const rows = await tx.select().from(servers).where(inArray(servers.id, serverIds)).orderBy(asc(servers.name));
  const ibs = await tx
    .select({ id: inbounds.id, serverId: inbounds.serverId, port: inbounds.port })
    .from(inbounds)
    .where(inArray(inbounds.serverId, serverIds))
    .orderBy(asc(inbounds.createdAt), asc(inbounds.port));
  // New ports never equal a current port of these inbounds, so renumbering one by one
  // cannot trip the per-server unique index.
  const ports = await freeLocalPorts(ibs.length, new Set(ibs.map((i) => i.port)));
  const byServer = new Map<string, number[]>();
  for (const [k, ib] of ibs.entries()) {
    const port = ports[k]!;
    await tx.update(inbounds).set({ port, updatedAt: new Date(), version: sql`${inbounds.version} + 1` }).where(eq(inbounds.id, ib.id));
    const list = byServer.get(ib.serverId) ?? [];
    list.push(port);
    byServer.set(ib.serverId, list);
  }
  const plan: PlanServer[] = [];
  for (const s of rows) {
    const { token, hash } = newAgentToken();
    await tx
      .update(servers)
      .set({ address: "127.0.0.1", agentTokenHash: hash, updatedAt: new Date(), version: sql`${servers.version} + 1` })
      .where(eq(servers.id, s.id));
    await tx.insert(serverHealth).values({ serverId: s.id }).onConflictDoNothing();
    plan.push({ serverId: s.id, name: s.name, token, inboundPorts: byServer.get(s.id) ?? [], healthPort: 0 });
  }
  return plan.filter((p) => p.inboundPorts.length > 0);
}

/**
 * A synthetic cluster of any size (benchmarks, load tests, trying the diagram at scale):
 * servers with a mix of statuses and load, inbounds spread round-robin over routes, a few
 * left unassigned.
 */
export async function createSyntheticCluster(
  db: Db,
  actor: Actor,
  input: { name: string; servers: number; inboundsPerServer: number; routes: number },
): Promise<Written<{ id: string; name: string }>> {
  const statuses = ["healthy", "healthy", "healthy", "healthy", "healthy", "healthy", "pending", "no-data", "probe-failing", "unreachable"];
  try {
    const clusterId = await db.transaction(async (tx) => {
      const [cluster] = await tx.insert(clusters).values({ name: input.name }).returning();
      const clusterId = cluster!.id;
      const routeRows =
        input.routes === 0
          ? []
          : await tx
              .insert(routes)
              .values(Array.from({ length: input.routes }, (_, i) => ({ clusterId, name: `Route ${String(i + 1).padStart(3, "0")}`, position: i })))
              .returning({ id: routes.id });
      const serverRows: Array<{ id: string }> = [];
      for (let start = 0; start < input.servers; start += 500) {
        const n = Math.min(500, input.servers - start);
        serverRows.push(
          ...(await tx
            .insert(servers)
            .values(
              Array.from({ length: n }, (_, k) => ({
                clusterId,
                name: `srv-${String(start + k + 1).padStart(4, "0")}`,
                // Loopback: the prober runs against these too, and must never leave the machine in a benchmark.
                address: `127.2.${Math.floor((start + k) / 250) % 250}.${((start + k) % 250) + 1}`,
                agentTokenHash: newAgentToken().hash,
              })),
            )
            .returning({ id: servers.id })),
        );
      }
      const now = new Date();
      for (let start = 0; start < serverRows.length; start += 500) {
        const chunk = serverRows.slice(start, start + 500);
        await tx.insert(serverHealth).values(chunk.map((s, k) => ({ serverId: s.id, status: statuses[(start + k) % statuses.length]!, everSucceeded: true })));
        await tx.insert(serverMetrics).values(
          chunk.map((s, k) => ({
            serverId: s.id,
            reportedAt: now,
            listenerAlive: true,
            serviceRunning: true,
            usersOnline: ((start + k) * 37) % 400,
            rxBps: (((start + k) * 7919) % 900) * 1e6,
            txBps: (((start + k) * 104729) % 800) * 1e6,
            cpu: 0.3,
            memory: 0.5,
          })),
        );
      }
      const inboundValues = serverRows.flatMap((s, si) =>
        Array.from({ length: input.inboundsPerServer }, (_, k) => {
          const n = si * input.inboundsPerServer + k;
          // Every 50th inbound is left unassigned, so the warnings have something to say.
          const routeId = routeRows.length > 0 && n % 50 !== 49 ? routeRows[n % routeRows.length]!.id : null;
          return { clusterId, serverId: s.id, routeId, name: `inbound ${String(n + 1).padStart(5, "0")}`, port: 10_000 + k, sni: "www.example.com" };
        }),
      );
      for (let start = 0; start < inboundValues.length; start += 1000) {
        await tx.insert(inbounds).values(inboundValues.slice(start, start + 1000));
      }
      await recordAudit(tx, actor, {
        clusterId,
        action: "cluster.create",
        entityType: "cluster",
        entityId: clusterId,
        summary: `Created synthetic cluster ${input.name} (${input.servers} servers, ${inboundValues.length} inbounds, ${input.routes} routes)`,
      });
      return clusterId;
    });
    return written({ id: clusterId, name: input.name }, { kind: "topology", clusterId });
  } catch (err) {
    if (uniqueViolation(err)) throw new TRPCError({ code: "CONFLICT", message: `A cluster named "${input.name}" already exists` });
    throw err;
  }
}

export interface FleetPlan {
  clusterId: string;
  clusterName: string;
  reportIntervalS: number;
  plan: { servers: PlanServer[] };
}

/**
 * Servers for a simulated fleet: `servers` servers named sim-01… on 127.0.0.1, each with
 * `inboundsPerServer` inbounds on free local ports, in the given cluster (or the cluster
 * named `clusterName`, created when missing). Existing sim-NN servers are reused (new
 * token, new ports). A cluster without routes gets a "Fleet" route holding the inbounds.
 */
export async function enrolFleet(
  db: Db,
  actor: Actor,
  input: { clusterId?: string; clusterName?: string; servers: number; inboundsPerServer: number },
): Promise<Written<FleetPlan>> {
  const result = await db.transaction(async (tx) => {
    let clusterId = input.clusterId;
    if (!clusterId) {
      const name = input.clusterName ?? "Fleet";
      const [found] = await tx.select().from(clusters).where(eq(sql`lower(${clusters.name})`, name.toLowerCase()));
      clusterId = found?.id ?? (await tx.insert(clusters).values({ name }).returning())[0]!.id;
    }
    const cluster = await clusterOr404(tx, clusterId);
    const [{ n: routeCount } = { n: 0 }] = await tx.select({ n: count() }).from(routes).where(eq(routes.clusterId, clusterId));
    let routeId: string | null = null;
    if (routeCount === 0) routeId = (await tx.insert(routes).values({ clusterId, name: "Fleet" }).returning())[0]!.id;
    const ids: string[] = [];
    for (let i = 1; i <= input.servers; i++) {
      const name = `sim-${String(i).padStart(2, "0")}`;
      const [existing] = await tx
        .select({ id: servers.id })
        .from(servers)
        .where(and(eq(servers.clusterId, clusterId), eq(sql`lower(${servers.name})`, name)));
      let id = existing?.id;
      if (!id) {
        id = (await tx.insert(servers).values({ clusterId, name, address: "127.0.0.1", agentTokenHash: newAgentToken().hash }).returning())[0]!.id;
        await tx.insert(serverHealth).values({ serverId: id }).onConflictDoNothing();
      }
      const [{ n } = { n: 0 }] = await tx.select({ n: count() }).from(inbounds).where(eq(inbounds.serverId, id));
      // placeholder ports (distinct, high); localiseServers moves them to free ports
      for (let k = n; k < input.inboundsPerServer; k++) {
        await tx.insert(inbounds).values({ clusterId, serverId: id, routeId, name: `${name} in${k + 1}`, port: 65535 - k, security: "none" });
      }
      ids.push(id);
    }
    const plan = await localiseServers(tx, ids);
    await recordAudit(tx, actor, {
      clusterId,
      action: "fleet.enrol",
      entityType: "cluster",
      entityId: clusterId,
      summary: `Enrolled a simulated fleet of ${input.servers} servers in ${cluster.name}`,
    });
    return { clusterId, clusterName: cluster.name, reportIntervalS: cluster.reportIntervalS, plan: { servers: plan } };
  });
  return written(result, { kind: "topology", clusterId: result.clusterId });
}

/**
 * Takes over the cluster's existing servers for a local simulated fleet: every server
 * moves to 127.0.0.1 with a fresh agent token, and every inbound to a distinct free local
 * port. Returns the fleet plan (tokens are shown only here).
 */
export async function takeOverFleet(db: Db, actor: Actor, input: { clusterId: string }): Promise<Written<FleetPlan>> {
  const result = await db.transaction(async (tx) => {
    const cluster = await clusterOr404(tx, input.clusterId);
    const ids = (await tx.select({ id: servers.id }).from(servers).where(eq(servers.clusterId, input.clusterId))).map((s) => s.id);
    const plan = await localiseServers(tx, ids);
    await recordAudit(tx, actor, {
      clusterId: input.clusterId,
      action: "fleet.takeover",
      entityType: "cluster",
      entityId: input.clusterId,
      summary: `Moved ${plan.length} servers of ${cluster.name} to a local simulated fleet (new agent tokens)`,
    });
    return { clusterId: cluster.id, clusterName: cluster.name, reportIntervalS: cluster.reportIntervalS, plan: { servers: plan } };
  });
  return written(result, { kind: "topology", clusterId: input.clusterId });
}

/** Subscribers assigned per server (the balancer's stored choices), for the fleet's load. */
/** Per server, the subscribers assigned to one of its inbounds (the live demo's simulated users). */
export { assignedSubscribersByServer } from "@/server/assignments/store";

export async function assignmentCountsByServer(db: Db, clusterId: string): Promise<Record<string, number>> {
  const perServer: Record<string, number> = {};
  for (const r of await countAssignmentsByInbound(db, clusterId)) perServer[r.serverId] = (perServer[r.serverId] ?? 0) + r.n;
  return perServer;
}
