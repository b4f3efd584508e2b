/**
 * Server statuses in the database (DESIGN §3): agent reports, heartbeats, probe results and the
 * status sweep all end in `recomputeServer(s)`, which re-reads a server's stored state under a
 * row lock, runs the pure status machine (core/status.ts) and writes only what changed, with
 * the server.down / server.up alerts in the same transaction. Callers publish the bus events
 * (this module does no I/O but the database).
 */
import "server-only";
import { eq, gt, inArray, sql } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { pgArray } from "@/db/pg-array";
import { clusters, meshChecks, serverHealth, serverMetrics, servers } from "@/db/schema";
import { recordServerTransitions, type ServerTransition } from "@/server/alerts/outbox";
import { effectiveProbeConfig } from "@/core/monitoring-contract";
import { computeMeshVote, type MeshStreaks, type MeshVerdict } from "./mesh";
import { computeServerStatus, isRecovery, NO_DATA_INTERVALS, type ServerStatus, type ServerStatusResult } from "@/core/status";

/** Servers read per statement by the status sweep. */
const SWEEP_PAGE = 250;

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

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
  /** The check just recorded is the server's first success ever: leaving a down status is then no recovery. */
  firstSuccess = false,
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
    if (!firstSuccess && isRecovery(h.status, result.status)) patch.recoveredAt = new Date(nowMs);
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
  if (changed) await recordServerTransitions(tx, [{ serverId, clusterId: row.clusterId, from: h.status, to: result.status, reason: result.reason, hadSucceeded: (h.everSucceeded || h.reportEverHealthy) && !firstSuccess }], nowMs);
  return { serverId, clusterId: row.clusterId, status: result.status, changed };
}

/**
 * recomputeServer for many servers at once (agent report batches): one locked read in server
 * id order, and writes only for the servers whose status or reason changed.
 */
export async function recomputeServers(
  tx: DbOrTx,
  serverIds: readonly string[],
  nowOf: (serverId: string) => number,
  meshOf?: (serverId: string) => { unreachable: boolean; reason: string } | undefined,
  /** Servers whose first success ever is in this batch: leaving a down status is then no recovery. */
  firstSuccess: ReadonlySet<string> = new Set(),
): Promise<Map<string, RecomputeResult>> {
  const out = new Map<string, RecomputeResult>();
  if (serverIds.length === 0) return out;
  const rows = await tx
    .select({ id: serverHealth.serverId, ...statusInputColumns })
    .from(serverHealth)
    .innerJoin(servers, eq(servers.id, serverHealth.serverId))
    .innerJoin(clusters, eq(clusters.id, servers.clusterId))
    .leftJoin(serverMetrics, eq(serverMetrics.serverId, servers.id))
    .where(inArray(serverHealth.serverId, [...serverIds]))
    .orderBy(serverHealth.serverId)
    .for("update", { of: serverHealth });
  // One UPDATE for every server whose status or reason moved (status_since only with the status).
  const upd = {
    id: [] as string[],
    status: [] as string[],
    changed: [] as boolean[],
    recovered: [] as boolean[],
    reason: [] as Array<string | null>,
    meshUnreachable: [] as boolean[],
    meshReason: [] as Array<string | null>,
    at: [] as string[],
  };
  const transitions: ServerTransition[] = [];
  let latestMs = 0;
  for (const row of rows) {
    const nowMs = nowOf(row.id);
    const h = row.health;
    const mesh = meshOf?.(row.id);
    const result = statusOf(row, h, mesh ?? { unreachable: h.meshUnreachable, reason: h.meshReason ?? "" }, nowMs);
    const changed = result.status !== h.status;
    if (changed) {
      transitions.push({ serverId: row.id, clusterId: row.clusterId, from: h.status, to: result.status, reason: result.reason, hadSucceeded: (h.everSucceeded || h.reportEverHealthy) && !firstSuccess.has(row.id) });
      latestMs = Math.max(latestMs, nowMs);
    }
    // As recomputeServer: no-data's reason counts the seconds of silence, rewritten only with the status.
    const reasonMoved = changed || (result.reason !== h.statusReason && result.status !== "no-data");
    const meshMoved = mesh !== undefined && (mesh.unreachable !== h.meshUnreachable || mesh.reason !== h.meshReason);
    if (reasonMoved || meshMoved) {
      upd.id.push(row.id);
      upd.status.push(result.status);
      upd.changed.push(changed);
      upd.recovered.push(changed && !firstSuccess.has(row.id) && isRecovery(h.status, result.status));
      upd.reason.push(reasonMoved ? result.reason : h.statusReason);
      upd.meshUnreachable.push(meshMoved ? mesh.unreachable : h.meshUnreachable);
      upd.meshReason.push(meshMoved ? mesh.reason : h.meshReason);
      upd.at.push(new Date(nowMs).toISOString());
    }
    out.set(row.id, { serverId: row.id, clusterId: row.clusterId, status: result.status, changed });
  }
  if (upd.id.length > 0) {
    await tx.execute(sql`
      update ${serverHealth} as h set
        status = v.status,
        status_since = case when v.changed then v.at else h.status_since end,
        recovered_at = case when v.recovered then v.at else h.recovered_at end,
        status_reason = v.reason,
        mesh_unreachable = v.mesh_unreachable,
        mesh_reason = v.mesh_reason,
        updated_at = v.at
      from unnest(${pgArray(upd.id)}::uuid[], ${pgArray(upd.status)}::text[], ${pgArray(upd.changed)}::boolean[],
        ${pgArray(upd.recovered)}::boolean[], ${pgArray(upd.reason)}::text[], ${pgArray(upd.meshUnreachable)}::boolean[],
        ${pgArray(upd.meshReason)}::text[], ${pgArray(upd.at)}::timestamptz[]) as v(id, status, changed, recovered, reason, mesh_unreachable, mesh_reason, at)
      where h.server_id = v.id`);
  }
  // Alerts for the changes, in this transaction (server/alerts/outbox.ts).
  await recordServerTransitions(tx, transitions, latestMs);
  return out;
}


/**
 * Recomputes every server's status from stored state (silence → no-data, mesh votes) and
 * writes only the changes. Returns the clusters whose statuses changed.
 */
export async function sweepStatuses(db: Db, nowMs = Date.now()): Promise<{ changedClusters: Set<string>; changedServers: number }> {
  // Read in pages (by id): one statement over thousands of servers blocks PGlite, which runs
  // in the app's event loop, for a few hundred ms; pages let other requests in between.
  const page = (after: string | null) =>
    db
      .select({ id: servers.id, ...statusInputColumns })
      .from(servers)
      .innerJoin(clusters, eq(clusters.id, servers.clusterId))
      .leftJoin(serverHealth, eq(serverHealth.serverId, servers.id))
      .leftJoin(serverMetrics, eq(serverMetrics.serverId, servers.id))
      .where(after === null ? undefined : gt(servers.id, after))
      .orderBy(servers.id)
      .limit(SWEEP_PAGE);
  const rows = await page(null);
  for (let last = rows.length === SWEEP_PAGE ? rows[rows.length - 1]!.id : null; last !== null; ) {
    const more = await page(last);
    rows.push(...more);
    last = more.length === SWEEP_PAGE ? more[more.length - 1]!.id : null;
  }
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
  const todo = new Map<string, { unreachable: boolean; reason: string }>();
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
      todo.set(r.id, mesh);
    }
  }
  // Set-based, SWEEP_PAGE servers per transaction: when many servers change at once (a fleet
  // falling silent), one transaction per server kept PGlite busy for seconds.
  const ids = [...todo.keys()].sort(byId);
  for (let k = 0; k < ids.length; k += SWEEP_PAGE) {
    const chunk = ids.slice(k, k + SWEEP_PAGE);
    const results = await db.transaction(async (tx) => {
      await tx.execute(sql`insert into ${serverHealth} (server_id) select unnest(${pgArray(chunk)}::uuid[]) on conflict do nothing`);
      return recomputeServers(tx, chunk, () => nowMs, (id) => todo.get(id));
    });
    for (const res of results.values()) {
      if (res.changed) {
        changedClusters.add(res.clusterId);
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
      probeFailures: h.probeFailStreak,
      lastHeartbeatAtMs: h.heartbeatAt ? h.heartbeatAt.getTime() : null,
      heartbeatLostAtMs: h.heartbeatLostAt ? h.heartbeatLostAt.getTime() : null,
    },
    nowMs,
  );
}

