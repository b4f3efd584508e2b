/**
 * Monitoring state in the database (DESIGN §3): agent reports, probe results and the status
 * sweep all end in `recomputeServer`, which re-reads one server's stored state under a row
 * lock, runs the pure status machine and writes only what changed. Callers publish the bus
 * events (this module does no I/O but the database).
 */
import { and, eq, inArray, notInArray, sql } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { clusters, meshChecks, serverHealth, serverMetrics, serverMetricsHistory, servers } from "@/db/schema";
import { decayPeak } from "@/server/balancer/capacity";
import { hashAgentToken } from "@/server/domain/tokens";
import { agentReportSchema, formatZodError, mergeProbeConfig, DEFAULT_PROBE_CONFIG, type AgentReport, type ProbeConfig } from "./contract";
import { computeMeshVote, isUnreliableWitness, updateObserverLinks, type MeshStreaks, type MeshVerdict, type ObserverLinks } from "./mesh";
import { applyProbeResult, type ProbeResultLike } from "./probe-streak";
import { computeServerStatus, isHealthyReport, NO_DATA_INTERVALS, type ServerStatus, type ServerStatusResult } from "./status";

export const REPORT_BODY_LIMIT = 64 * 1024;
export const HISTORY_BUCKET_MS = 5 * 60 * 1000;
export const PEAK_HALF_LIFE_MS = 24 * 3600 * 1000;

/** The effective probe config; a bad stored value falls back to the defaults (never throws). */
export function effectiveProbeConfig(clusterCfg: unknown, override: unknown): ProbeConfig {
  try {
    return mergeProbeConfig((clusterCfg ?? null) as never, (override ?? null) as never);
  } catch {
    try {
      return mergeProbeConfig((clusterCfg ?? null) as never, null);
    } catch {
      return DEFAULT_PROBE_CONFIG;
    }
  }
}

/** Makes sure the server has a health row (servers created elsewhere may lack one). */
async function ensureHealthRow(db: DbOrTx, serverId: string): Promise<void> {
  await db.insert(serverHealth).values({ serverId }).onConflictDoNothing();
}

export interface RecomputeResult {
  serverId: string;
  clusterId: string;
  status: ServerStatus;
  changed: boolean;
}

/** What the status machine needs of one server, read the same way by recompute and sweep. */
const statusInputColumns = {
  enabled: servers.enabled,
  clusterId: servers.clusterId,
  probeOverride: servers.probeOverride,
  probeConfig: clusters.probeConfig,
  reportIntervalS: clusters.reportIntervalS,
  health: serverHealth,
  reportedAt: serverMetrics.reportedAt,
  listenerAlive: serverMetrics.listenerAlive,
  serviceRunning: serverMetrics.serviceRunning,
};

/**
 * Re-reads one server's state under a row lock, computes its status and writes status,
 * statusSince (only when the status changed), the reason and, when given, the mesh verdict.
 * Must run inside a transaction.
 */
export async function recomputeServer(
  tx: DbOrTx,
  serverId: string,
  nowMs: number,
  mesh?: Pick<MeshVerdict, "unreachable" | "reason">,
): Promise<RecomputeResult | null> {
  const [row] = await tx
    .select(statusInputColumns)
    .from(serverHealth)
    .innerJoin(servers, eq(servers.id, serverHealth.serverId))
    .innerJoin(clusters, eq(clusters.id, servers.clusterId))
    .leftJoin(serverMetrics, eq(serverMetrics.serverId, servers.id))
    .where(eq(serverHealth.serverId, serverId))
    .for("update", { of: serverHealth });
  if (!row) return null;
  const h = row.health;
  const meshUnreachable = mesh ? mesh.unreachable : h.meshUnreachable;
  const meshReason = mesh ? mesh.reason : (h.meshReason ?? "");
  const result = statusOf(row, h, { unreachable: meshUnreachable, reason: meshReason }, nowMs);
  const changed = result.status !== h.status;
  const patch: Partial<typeof serverHealth.$inferInsert> = {};
  if (changed) {
    patch.status = result.status;
    patch.statusSince = new Date(nowMs);
    patch.statusReason = result.reason;
  } else if (result.reason !== h.statusReason && result.status !== "no-data") {
    // no-data's reason counts the seconds of silence: rewritten only with the status
    patch.statusReason = result.reason;
  }
  if (mesh && (mesh.unreachable !== h.meshUnreachable || mesh.reason !== h.meshReason)) {
    patch.meshUnreachable = mesh.unreachable;
    patch.meshReason = mesh.reason;
  }
  if (Object.keys(patch).length > 0) {
    patch.updatedAt = new Date(nowMs);
    await tx.update(serverHealth).set(patch).where(eq(serverHealth.serverId, serverId));
  }
  return { serverId, clusterId: row.clusterId, status: result.status, changed };
}

// ---------------------------------------------------------------------------
// Agent reports
// ---------------------------------------------------------------------------

export type ReportOutcome =
  | { httpStatus: 401 | 400 | 413; body: { error: string } }
  | { httpStatus: 200; body: { ok: true; status: ServerStatus }; clusterId: string; serverId: string; statusChanged: boolean };

function bearer(authorization: string | undefined): string | null {
  if (!authorization) return null;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
  return m ? m[1]! : null;
}

/**
 * Validates and stores one agent report. Nothing is written on 401/400. On success, in one
 * transaction: latest metrics (+ learned peak), the 5-minute history bucket, the observer's
 * mesh links, reportEverHealthy, and the status.
 */
export async function ingestAgentReport(
  db: Db,
  authorization: string | undefined,
  rawBody: string,
  nowMs = Date.now(),
): Promise<ReportOutcome> {
  const token = bearer(authorization);
  if (!token) return { httpStatus: 401, body: { error: "missing bearer token: send Authorization: Bearer <agent token>" } };
  const [server] = await db
    .select({ id: servers.id, clusterId: servers.clusterId })
    .from(servers)
    .where(eq(servers.agentTokenHash, hashAgentToken(token)));
  if (!server) return { httpStatus: 401, body: { error: "unknown agent token" } };

  let json: unknown;
  try {
    json = JSON.parse(rawBody);
  } catch {
    return { httpStatus: 400, body: { error: "(root): body is not valid JSON" } };
  }
  const parsed = agentReportSchema.safeParse(json);
  if (!parsed.success) return { httpStatus: 400, body: { error: formatZodError(parsed.error) } };
  const report = storableReport(parsed.data);

  const res = await db.transaction(async (tx) => {
    await ensureHealthRow(tx, server.id);
    await storeMetrics(tx, server.id, report, nowMs);
    await storeMeshLinks(tx, server.id, server.clusterId, report, nowMs);
    if (isHealthyReport(report)) {
      await tx
        .update(serverHealth)
        .set({ reportEverHealthy: true })
        .where(and(eq(serverHealth.serverId, server.id), eq(serverHealth.reportEverHealthy, false)));
    }
    return recomputeServer(tx, server.id, nowMs);
  });
  return {
    httpStatus: 200,
    body: { ok: true, status: res?.status ?? "pending" },
    clusterId: server.clusterId,
    serverId: server.id,
    statusChanged: res?.changed ?? false,
  };
}

/**
 * Below this a measurement is zero. PostgreSQL refuses floats that underflow its column
 * (`real` below ~1e-38, denormal doubles), so a schema-valid `cpu: 1e-123` was a 500
 * (found by the fuzz suite); nothing real is measured that small.
 */
const FLOAT_FLOOR = 1e-30;
const storableFloat = (v: number) => (Math.abs(v) < FLOAT_FLOOR ? 0 : v);

function storableReport(r: AgentReport): AgentReport {
  return {
    ...r,
    rxBps: storableFloat(r.rxBps),
    txBps: storableFloat(r.txBps),
    cpu: storableFloat(r.cpu),
    memory: storableFloat(r.memory),
    neighbours: r.neighbours.map((n) => (n.rttMs === null ? n : { ...n, rttMs: storableFloat(n.rttMs) })),
  };
}

async function storeMetrics(tx: DbOrTx, serverId: string, r: AgentReport, nowMs: number): Promise<void> {
  const traffic = Math.max(r.rxBps, r.txBps);
  const [prev] = await tx
    .select({ peakBps: serverMetrics.peakBps, reportedAt: serverMetrics.reportedAt })
    .from(serverMetrics)
    .where(eq(serverMetrics.serverId, serverId));
  const peak = prev ? Math.max(traffic, decayPeak(prev.peakBps, nowMs - prev.reportedAt.getTime(), PEAK_HALF_LIFE_MS)) : traffic;
  const values = {
    serverId,
    reportedAt: new Date(nowMs),
    listenerAlive: r.listenerAlive,
    serviceRunning: r.serviceRunning,
    usersOnline: r.usersOnline,
    rxBps: r.rxBps,
    txBps: r.txBps,
    cpu: r.cpu,
    memory: r.memory,
    peakBps: peak,
  };
  const { serverId: _id, ...update } = values;
  await tx.insert(serverMetrics).values(values).onConflictDoUpdate({ target: serverMetrics.serverId, set: update });

  const bucketStart = new Date(Math.floor(nowMs / HISTORY_BUCKET_MS) * HISTORY_BUCKET_MS);
  const h = serverMetricsHistory;
  await tx
    .insert(h)
    .values({
      serverId,
      bucketStart,
      samples: 1,
      usersOnlineAvg: r.usersOnline,
      trafficBpsMax: traffic,
      trafficBpsAvg: traffic,
      cpuAvg: r.cpu,
    })
    .onConflictDoUpdate({
      target: [h.serverId, h.bucketStart],
      set: {
        samples: sql`${h.samples} + 1`,
        usersOnlineAvg: sql`(${h.usersOnlineAvg} * ${h.samples} + excluded.users_online_avg) / (${h.samples} + 1)`,
        trafficBpsMax: sql`greatest(${h.trafficBpsMax}, excluded.traffic_bps_max)`,
        trafficBpsAvg: sql`(${h.trafficBpsAvg} * ${h.samples} + excluded.traffic_bps_avg) / (${h.samples} + 1)`,
        cpuAvg: sql`(${h.cpuAvg} * ${h.samples} + excluded.cpu_avg) / (${h.samples} + 1)`,
      },
    });
}

async function storeMeshLinks(tx: DbOrTx, observerId: string, clusterId: string, r: AgentReport, nowMs: number): Promise<void> {
  // Only servers of the same cluster are valid targets (unknown ids are ignored, not errors).
  const wanted = [...new Set(r.neighbours.map((n) => n.serverId))].filter((id) => id !== observerId);
  const known =
    wanted.length === 0
      ? new Set<string>()
      : new Set(
          (
            await tx
              .select({ id: servers.id })
              .from(servers)
              .where(and(eq(servers.clusterId, clusterId), inArray(servers.id, wanted)))
          ).map((s) => s.id),
        );
  const checks = r.neighbours.filter((n) => known.has(n.serverId));
  const prevRows = await tx.select().from(meshChecks).where(eq(meshChecks.observerId, observerId));
  const prev: ObserverLinks = {};
  for (const p of prevRows) prev[p.targetId] = { failStreak: p.failStreak, lastOk: p.lastOk };
  const next = updateObserverLinks(prev, observerId, checks);
  const rtt = new Map(checks.map((c) => [c.serverId, c.rttMs]));
  const targets = Object.keys(next);
  if (targets.length === 0) {
    if (prevRows.length > 0) await tx.delete(meshChecks).where(eq(meshChecks.observerId, observerId));
    return;
  }
  await tx.delete(meshChecks).where(and(eq(meshChecks.observerId, observerId), notInArray(meshChecks.targetId, targets)));
  const checkedAt = new Date(nowMs);
  await tx
    .insert(meshChecks)
    .values(
      targets.map((t) => ({
        observerId,
        targetId: t,
        lastOk: next[t]!.lastOk,
        failStreak: next[t]!.failStreak,
        rttMs: rtt.get(t) ?? null,
        checkedAt,
      })),
    )
    .onConflictDoUpdate({
      target: [meshChecks.observerId, meshChecks.targetId],
      set: {
        lastOk: sql`excluded.last_ok`,
        failStreak: sql`excluded.fail_streak`,
        rttMs: sql`excluded.rtt_ms`,
        checkedAt: sql`excluded.checked_at`,
      },
    });
}

// ---------------------------------------------------------------------------
// Probe results
// ---------------------------------------------------------------------------

/** Folds one probe result into the stored streak and recomputes the status. */
export async function recordProbeResult(
  db: Db,
  serverId: string,
  result: ProbeResultLike & { atMs?: number },
  thresholds: { unhealthyThreshold: number; healthyThreshold: number },
  nowMs = Date.now(),
): Promise<RecomputeResult | null> {
  return db.transaction(async (tx) => {
    await ensureHealthRow(tx, serverId);
    const [h] = await tx.select().from(serverHealth).where(eq(serverHealth.serverId, serverId)).for("update");
    if (!h) return null;
    const next = applyProbeResult(
      {
        consecutiveFailures: h.probeFailStreak,
        consecutiveSuccesses: h.probeOkStreak,
        probeHealthy: h.probeHealthy,
        everSucceeded: h.everSucceeded,
        lastResult: null,
      },
      result,
      thresholds,
    );
    await tx
      .update(serverHealth)
      .set({
        probeFailStreak: next.consecutiveFailures,
        probeOkStreak: next.consecutiveSuccesses,
        probeHealthy: next.probeHealthy,
        everSucceeded: next.everSucceeded,
        lastProbeAt: new Date(result.atMs ?? nowMs),
        lastProbeOk: result.ok,
        lastProbeCode: result.code ?? null,
        lastProbeLatencyMs: result.latencyMs ?? null,
        lastProbeReason: result.reason ?? null,
        updatedAt: new Date(nowMs),
      })
      .where(eq(serverHealth.serverId, serverId));
    return recomputeServer(tx, serverId, nowMs);
  });
}

// ---------------------------------------------------------------------------
// Sweep
// ---------------------------------------------------------------------------

/**
 * Recomputes every server's status from stored state (silence → no-data, mesh votes) and
 * writes only the changes. Returns the clusters whose statuses changed.
 */
export async function sweepStatuses(db: Db, nowMs = Date.now()): Promise<{ changedClusters: Set<string>; changedServers: number }> {
  const rows = await db
    .select({ id: servers.id, ...statusInputColumns })
    .from(servers)
    .innerJoin(clusters, eq(clusters.id, servers.clusterId))
    .leftJoin(serverHealth, eq(serverHealth.serverId, servers.id))
    .leftJoin(serverMetrics, eq(serverMetrics.serverId, servers.id));
  const links = await db.select().from(meshChecks);

  const byCluster = new Map<string, typeof rows>();
  for (const r of rows) {
    const list = byCluster.get(r.clusterId) ?? [];
    list.push(r);
    byCluster.set(r.clusterId, list);
  }
  const clusterOf = new Map(rows.map((r) => [r.id, r.clusterId]));
  const streaksByCluster = new Map<string, MeshStreaks>();
  for (const l of links) {
    const c = clusterOf.get(l.observerId);
    if (!c || clusterOf.get(l.targetId) !== c) continue;
    const streaks = streaksByCluster.get(c) ?? {};
    (streaks[l.observerId] ??= {})[l.targetId] = { failStreak: l.failStreak, lastOk: l.lastOk };
    streaksByCluster.set(c, streaks);
  }

  const changedClusters = new Set<string>();
  let changedServers = 0;
  for (const [clusterId, list] of byCluster) {
    const intervalMs = (list[0]?.reportIntervalS ?? 60) * 1000;
    const fresh = (r: (typeof list)[number]) =>
      r.enabled && r.reportedAt !== null && nowMs - r.reportedAt.getTime() <= NO_DATA_INTERVALS * intervalMs;
    const active = new Set(list.filter(fresh).map((r) => r.id));
    const votes = computeMeshVote(streaksByCluster.get(clusterId) ?? {}, {
      activeObservers: active,
      extraTargets: list.map((r) => r.id),
    });
    for (const r of list) {
      const verdict = votes[r.id];
      const mesh = verdict ? { unreachable: verdict.unreachable, reason: verdict.reason } : { unreachable: false, reason: "no usable observers" };
      const h = r.health;
      // Cheap pre-check without locks; the real decision is made under the row lock.
      const probe = h ? statusOf(r, h, mesh, nowMs) : null;
      const needs =
        !h ||
        !probe ||
        probe.status !== h.status ||
        mesh.unreachable !== h.meshUnreachable ||
        mesh.reason !== h.meshReason ||
        (probe.reason !== h.statusReason && probe.status !== "no-data");
      if (!needs) continue;
      const res = await db.transaction(async (tx) => {
        await ensureHealthRow(tx, r.id);
        return recomputeServer(tx, r.id, nowMs, mesh);
      });
      if (res?.changed) {
        changedClusters.add(clusterId);
        changedServers++;
      }
    }
  }
  return { changedClusters, changedServers };
}

/** The pure status machine fed from stored rows. */
function statusOf(
  r: {
    enabled: boolean;
    probeConfig: unknown;
    probeOverride: unknown;
    reportIntervalS: number;
    reportedAt: Date | null;
    listenerAlive: boolean | null;
    serviceRunning: boolean | null;
  },
  h: typeof serverHealth.$inferSelect,
  mesh: { unreachable: boolean; reason: string },
  nowMs: number,
): ServerStatusResult {
  const cfg = effectiveProbeConfig(r.probeConfig, r.probeOverride);
  return computeServerStatus(
    {
      enabled: r.enabled,
      everSucceeded: h.everSucceeded || h.reportEverHealthy,
      lastReportAtMs: r.reportedAt ? r.reportedAt.getTime() : null,
      reportIntervalS: r.reportIntervalS,
      lastReport: r.reportedAt ? { listenerAlive: !!r.listenerAlive, serviceRunning: !!r.serviceRunning } : null,
      probeHealthy: h.probeHealthy,
      probesEnabled: cfg.enabled,
      meshUnreachable: mesh.unreachable,
      meshReason: mesh.reason ? `Unreachable from your servers: ${mesh.reason}.` : undefined,
      probeReason: h.lastProbeReason ?? undefined,
    },
    nowMs,
  );
}

/** Whether an observer's stored links make it an unreliable witness (for the health page). */
export function observerUnreliable(links: ObserverLinks): boolean {
  return isUnreliableWitness(links);
}
