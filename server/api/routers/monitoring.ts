/**
 * Health of the servers (DESIGN §3) for the dashboard, the probe configuration, and the
 * fleet helpers used by `npm run fleet` / `npm run demo` (enrolFleet, rotateAgentTokens,
 * assignmentCounts).
 */
import net from "node:net";
import { TRPCError } from "@trpc/server";
import { and, asc, count, eq, inArray, sql } from "drizzle-orm";
import { z } from "zod";
import type { DbOrTx } from "@/db/client";
import { clusters, inbounds, meshChecks, routes, serverHealth, serverMetrics, servers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { publishChange } from "@/server/bus";
import { newAgentToken } from "@/server/domain/tokens";
import { idSchema, nameSchema } from "@/server/validation";
import { computeMonitoringWarnings } from "@/server/monitoring/config-warnings";
import { DEFAULT_PROBE_CONFIG, probeConfigSchema, probeOverrideSchema, type ProbeConfig } from "@/server/monitoring/contract";
import { isUnreliableWitness, type ObserverLinks } from "@/server/monitoring/mesh";
import { STATUS_LABELS, type ServerStatus } from "@/server/monitoring/status";
import { effectiveProbeConfig } from "@/server/monitoring/store";
import { countAssignmentsByInbound } from "@/server/subscription/snapshot";
import { adminProcedure, createTRPCRouter, protectedProcedure } from "../trpc";

export const MAX_FLEET_SERVERS = 200;

/** `n` distinct free TCP ports on 127.0.0.1 (held open together, so never the same twice). */
export async function freeLocalPorts(n: number, exclude: ReadonlySet<number> = new Set()): Promise<number[]> {
  const held: net.Server[] = [];
  try {
    const ports: number[] = [];
    while (ports.length < n) {
      const srv = net.createServer();
      held.push(srv);
      const port = await new Promise<number>((resolve, reject) => {
        srv.once("error", reject);
        srv.listen(0, "127.0.0.1", () => resolve((srv.address() as net.AddressInfo).port));
      });
      if (!exclude.has(port)) ports.push(port);
    }
    return ports;
  } finally {
    await Promise.all(held.map((s) => new Promise<void>((r) => (s.listening ? s.close(() => r()) : r()))));
  }
}

async function clusterOr404(db: DbOrTx, clusterId: string) {
  const [c] = await db.select().from(clusters).where(eq(clusters.id, clusterId));
  if (!c) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
  return c;
}

function clusterProbeConfig(raw: unknown): ProbeConfig {
  const p = probeConfigSchema.safeParse(raw ?? {});
  return p.success ? p.data : DEFAULT_PROBE_CONFIG;
}

interface PlanServer {
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
async function localiseServers(tx: DbOrTx, serverIds: string[]): Promise<PlanServer[]> {
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

const reportIntervalSchema = z
  .number({ error: "Report interval must be a number of seconds" })
  .int("Report interval must be a whole number of seconds")
  .min(1, "Report interval must be between 1 and 3600 seconds")
  .max(3600, "Report interval must be between 1 and 3600 seconds");

export const monitoringRouter = createTRPCRouter({
  /** Everything the health page shows, in one read. */
  health: protectedProcedure.input(z.object({ clusterId: idSchema })).query(async ({ ctx, input }) => {
    const cluster = await clusterOr404(ctx.db, input.clusterId);
    const [rows, ibs, routeRows] = await Promise.all([
      ctx.db
        .select({ server: servers, health: serverHealth, metrics: serverMetrics })
        .from(servers)
        .leftJoin(serverHealth, eq(serverHealth.serverId, servers.id))
        .leftJoin(serverMetrics, eq(serverMetrics.serverId, servers.id))
        .where(eq(servers.clusterId, input.clusterId))
        .orderBy(asc(servers.name)),
      ctx.db
        .select({ id: inbounds.id, name: inbounds.name, serverId: inbounds.serverId, routeId: inbounds.routeId, isFallback: inbounds.isFallback, port: inbounds.port, createdAt: inbounds.createdAt })
        .from(inbounds)
        .where(eq(inbounds.clusterId, input.clusterId))
        .orderBy(asc(inbounds.createdAt), asc(inbounds.port)),
      ctx.db.select({ id: routes.id, name: routes.name }).from(routes).where(eq(routes.clusterId, input.clusterId)).orderBy(asc(routes.position)),
    ]);
    const ids = rows.map((r) => r.server.id);
    const links = ids.length === 0 ? [] : await ctx.db.select().from(meshChecks).where(inArray(meshChecks.observerId, ids));
    const clusterCfg = clusterProbeConfig(cluster.probeConfig);
    const firstPort = new Map<string, number>();
    for (const ib of ibs) if (!firstPort.has(ib.serverId)) firstPort.set(ib.serverId, ib.port);
    const byObserver = new Map<string, ObserverLinks>();
    for (const l of links) {
      const o = byObserver.get(l.observerId) ?? {};
      o[l.targetId] = { failStreak: l.failStreak, lastOk: l.lastOk };
      byObserver.set(l.observerId, o);
    }
    const serversOut = rows.map(({ server: s, health: h, metrics: m }) => {
      const status = (s.enabled ? (h?.status ?? "pending") : "disabled") as ServerStatus;
      const cfg = effectiveProbeConfig(cluster.probeConfig, s.probeOverride);
      return {
        id: s.id,
        name: s.name,
        address: s.address,
        enabled: s.enabled,
        status,
        label: STATUS_LABELS[status] ?? status,
        since: h?.statusSince ?? null,
        reason: s.enabled ? (h?.statusReason ?? null) : "The operator disabled this server; it gets no new users.",
        report: m
          ? {
              at: m.reportedAt,
              listenerAlive: m.listenerAlive,
              serviceRunning: m.serviceRunning,
              usersOnline: m.usersOnline,
              rxBps: m.rxBps,
              txBps: m.txBps,
              cpu: m.cpu,
              memory: m.memory,
              peakBps: m.peakBps,
            }
          : null,
        probe: h?.lastProbeAt
          ? {
              at: h.lastProbeAt,
              ok: h.lastProbeOk,
              code: h.lastProbeCode,
              latencyMs: h.lastProbeLatencyMs,
              reason: h.lastProbeReason,
            }
          : null,
        probeHealthy: h?.probeHealthy ?? null,
        failStreak: h?.probeFailStreak ?? 0,
        okStreak: h?.probeOkStreak ?? 0,
        meshUnreachable: h?.meshUnreachable ?? false,
        meshReason: h?.meshReason ?? null,
        probesEnabled: cfg.enabled,
        probeTarget: cfg.port ?? firstPort.get(s.id) ?? null,
        override: (s.probeOverride ?? null) as z.infer<typeof probeOverrideSchema> | null,
        unreliableWitness: isUnreliableWitness(byObserver.get(s.id) ?? {}),
      };
    });
    return {
      cluster: { id: cluster.id, name: cluster.name, reportIntervalS: cluster.reportIntervalS, probeConfig: clusterCfg },
      servers: serversOut,
      mesh: links.map((l) => ({ observerId: l.observerId, targetId: l.targetId, lastOk: l.lastOk, failStreak: l.failStreak, rttMs: l.rttMs, checkedAt: l.checkedAt })),
      warnings: computeMonitoringWarnings({
        clusterProbesEnabled: clusterCfg.enabled,
        servers: serversOut.map((s) => ({ id: s.id, name: s.name, status: s.status, enabled: s.enabled, probesEnabled: s.probesEnabled })),
        inbounds: ibs,
        routes: routeRows,
      }),
    };
  }),

  getProbeConfig: protectedProcedure.input(z.object({ clusterId: idSchema })).query(async ({ ctx, input }) => {
    const cluster = await clusterOr404(ctx.db, input.clusterId);
    const rows = await ctx.db
      .select({ id: servers.id, name: servers.name, override: servers.probeOverride })
      .from(servers)
      .where(eq(servers.clusterId, input.clusterId))
      .orderBy(asc(servers.name));
    return {
      config: clusterProbeConfig(cluster.probeConfig),
      overrides: rows.map((r) => ({ serverId: r.id, name: r.name, override: (r.override ?? null) as z.infer<typeof probeOverrideSchema> | null })),
    };
  }),

  setProbeConfig: adminProcedure
    .input(z.object({ clusterId: idSchema, config: probeConfigSchema }))
    .mutation(async ({ ctx, input }) => {
      await ctx.db.transaction(async (tx) => {
        const before = await clusterOr404(tx, input.clusterId);
        await tx.update(clusters).set({ probeConfig: input.config, updatedAt: new Date() }).where(eq(clusters.id, input.clusterId));
        await recordAudit(tx, ctx.operator, {
          clusterId: input.clusterId,
          action: "probe.config",
          entityType: "cluster",
          entityId: input.clusterId,
          summary: `Changed the health probe of ${before.name}`,
          before: before.probeConfig,
          after: input.config,
        });
      });
      publishChange("settings", input.clusterId);
      return { config: input.config };
    }),

  setServerProbeOverride: adminProcedure
    .input(z.object({ serverId: idSchema, override: probeOverrideSchema.nullable() }))
    .mutation(async ({ ctx, input }) => {
      // An empty override means "inherit everything": stored as null.
      const override = input.override && Object.values(input.override).some((v) => v !== undefined) ? input.override : null;
      const clusterId = await ctx.db.transaction(async (tx) => {
        const [s] = await tx.select().from(servers).where(eq(servers.id, input.serverId));
        if (!s) throw new TRPCError({ code: "NOT_FOUND", message: "No such server" });
        const [c] = await tx.select().from(clusters).where(eq(clusters.id, s.clusterId));
        // The merged config must be valid too (e.g. an override cannot make it inconsistent).
        const merged = probeConfigSchema.safeParse({ ...clusterProbeConfig(c?.probeConfig), ...(override ?? {}) });
        if (!merged.success) throw new TRPCError({ code: "BAD_REQUEST", message: merged.error.issues[0]?.message ?? "invalid override", cause: merged.error });
        await tx.update(servers).set({ probeOverride: override, updatedAt: new Date() }).where(eq(servers.id, s.id));
        await recordAudit(tx, ctx.operator, {
          clusterId: s.clusterId,
          action: "probe.override",
          entityType: "server",
          entityId: s.id,
          summary: override ? `Set a health probe override on ${s.name}` : `Removed the health probe override of ${s.name}`,
          before: s.probeOverride,
          after: override,
        });
        return s.clusterId;
      });
      publishChange("settings", clusterId);
      return { serverId: input.serverId, override };
    }),

  setReportInterval: adminProcedure
    .input(z.object({ clusterId: idSchema, seconds: reportIntervalSchema }))
    .mutation(async ({ ctx, input }) => {
      await ctx.db.transaction(async (tx) => {
        const before = await clusterOr404(tx, input.clusterId);
        await tx.update(clusters).set({ reportIntervalS: input.seconds, updatedAt: new Date() }).where(eq(clusters.id, input.clusterId));
        await recordAudit(tx, ctx.operator, {
          clusterId: input.clusterId,
          action: "cluster.reportInterval",
          entityType: "cluster",
          entityId: input.clusterId,
          summary: `Set the agent report interval of ${before.name} to ${input.seconds} s`,
          before: { reportIntervalS: before.reportIntervalS },
          after: { reportIntervalS: input.seconds },
        });
      });
      publishChange("settings", input.clusterId);
      return { clusterId: input.clusterId, seconds: input.seconds };
    }),

  /**
   * Servers for a simulated fleet: `servers` servers named sim-01… on 127.0.0.1, each with
   * `inboundsPerServer` inbounds on free local ports, in the given cluster (or the cluster
   * named `clusterName`, created when missing). Existing sim-NN servers are reused (new
   * token, new ports). A cluster without routes gets a "Fleet" route holding the inbounds.
   */
  enrolFleet: adminProcedure
    .input(
      z.object({
        clusterId: idSchema.optional(),
        clusterName: nameSchema.optional(),
        servers: z.number().int().min(1).max(MAX_FLEET_SERVERS),
        inboundsPerServer: z.number().int().min(1).max(8).default(1),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const result = await ctx.db.transaction(async (tx) => {
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
        await recordAudit(tx, ctx.operator, {
          clusterId,
          action: "fleet.enrol",
          entityType: "cluster",
          entityId: clusterId,
          summary: `Enrolled a simulated fleet of ${input.servers} servers in ${cluster.name}`,
        });
        return { clusterId, clusterName: cluster.name, reportIntervalS: cluster.reportIntervalS, plan: { servers: plan } };
      });
      publishChange("topology", result.clusterId);
      return result;
    }),

  /**
   * Takes over the cluster's existing servers for a local simulated fleet: every server
   * moves to 127.0.0.1 with a fresh agent token, and every inbound to a distinct free local
   * port. Returns the fleet plan (tokens are shown only here).
   */
  rotateAgentTokens: adminProcedure.input(z.object({ clusterId: idSchema })).mutation(async ({ ctx, input }) => {
    const result = await ctx.db.transaction(async (tx) => {
      const cluster = await clusterOr404(tx, input.clusterId);
      const ids = (await tx.select({ id: servers.id }).from(servers).where(eq(servers.clusterId, input.clusterId))).map((s) => s.id);
      const plan = await localiseServers(tx, ids);
      await recordAudit(tx, ctx.operator, {
        clusterId: input.clusterId,
        action: "fleet.takeover",
        entityType: "cluster",
        entityId: input.clusterId,
        summary: `Moved ${plan.length} servers of ${cluster.name} to a local simulated fleet (new agent tokens)`,
      });
      return { clusterId: cluster.id, clusterName: cluster.name, reportIntervalS: cluster.reportIntervalS, plan: { servers: plan } };
    });
    publishChange("topology", input.clusterId);
    return result;
  }),

  /** Subscribers assigned per server (the balancer's stored choices), for the fleet's load. */
  assignmentCounts: protectedProcedure.input(z.object({ clusterId: idSchema })).query(async ({ ctx, input }) => {
    const perServer: Record<string, number> = {};
    for (const r of await countAssignmentsByInbound(ctx.db, input.clusterId)) perServer[r.serverId] = (perServer[r.serverId] ?? 0) + r.n;
    return perServer;
  }),
});
