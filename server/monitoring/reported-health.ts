/**
 * What agent reports say about servers' health, stored: latest metrics (+ the learned peak),
 * the 5-minute history bucket, reportEverHealthy, the mesh links, then each server's status
 * once (status.ts). The report ingestion (server/dataplane/reports.ts) calls it inside its
 * batch's transaction.
 */
import "server-only";
import { and, eq, gte, inArray, or, sql, type AnyColumn } from "drizzle-orm";
import type { DbOrTx } from "@/db/client";
import { pgArray } from "@/db/pg-array";
import { fromExcluded } from "@/db/upsert";
import { clusters, meshChecks, serverHealth, serverMetrics, serverMetricsHistory, servers } from "@/db/schema";
import type { AgentReport } from "@/core/monitoring-contract";
import { isHealthyReport } from "@/core/status";
import { LOAD_CURRENT_MS, loadsCurrent, storedFigure } from "@/core/heartbeat";
import type { HeartbeatLoad } from "@/core/agent-wire";
import { decayPeak, DEFAULT_PEAK_HALF_LIFE_MS, HELD_BACK_MIN_USERS, LatestUserRates } from "@/server/balancer/capacity";
import { DEFAULT_HYSTERESIS } from "@/server/balancer/types";
import { updateObserverLinks, type ObserverLinks } from "./mesh";
import { HISTORY_BUCKET_MS } from "./metrics-history";
import { recomputeServers, type RecomputeResult } from "./status";
import { rowsOf } from "@/db/rows";

/** One report as the health step takes it. */
export interface ReportedHealth {
  server: { serverId: string; clusterId: string };
  report: AgentReport;
  nowMs: number;
}

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Creates the health rows the batch's servers lack (first report); the first statement of a batch. */
export async function ensureHealthRows(tx: DbOrTx, serverIds: readonly string[]): Promise<void> {
  await tx.execute(sql`insert into ${serverHealth} (server_id) select unnest(${pgArray([...serverIds])}::uuid[]) on conflict do nothing`);
}

/**
 * Stores the health part of a batch of reports (in order; servers in id order) and returns
 * each server's status after it.
 */
export async function storeReportedHealth(tx: DbOrTx, items: readonly ReportedHealth[]): Promise<Map<string, RecomputeResult>> {
  const serverIds = [...new Set(items.map((i) => i.server.serverId))].sort(byId);
  const prevMetrics = await balancingFigures(tx, serverIds);
  const rates = await clustersUserRates(tx, items.map((i) => ({ clusterId: i.server.clusterId, nowMs: i.nowMs })));
  const latest = new Map<string, typeof serverMetrics.$inferInsert>();
  const buckets = new Map<string, { serverId: string; bucketStart: Date; samples: number; users: number; trafficMax: number; trafficSum: number; rxSum: number; txSum: number; cpu: number }>();
  const everHealthy = new Set<string>();
  for (const { server, report: r, nowMs } of items) {
    const id = server.serverId;
    const traffic = Math.max(r.rxBps, r.txBps);
    const prev = prevMetrics.get(id);
    // A server whose loads arrive in heartbeats is balanced on them (core/heartbeat.ts
    // balancerLoad): its report's figures, counted over a longer window, stay out of its peak,
    // its held-back mark and the cluster's reference; the upsert below keeps the row's.
    const next =
      prev && loadsCurrent(prev.loadAtMs, nowMs)
        ? prev
        : { ...nextBalancingFigures(prev, id, r.usersOnline, traffic, nowMs, rates.get(server.clusterId)!), loadAtMs: prev?.loadAtMs ?? null };
    prevMetrics.set(id, next);
    const { peakBps: peak, heldBackAt, heldBackBps } = next;
    latest.set(id, {
      serverId: id,
      reportedAt: new Date(nowMs),
      listenerAlive: r.listenerAlive,
      serviceRunning: r.serviceRunning,
      usersOnline: r.usersOnline,
      rxBps: r.rxBps,
      txBps: r.txBps,
      cpu: r.cpu,
      memory: r.memory,
      peakBps: peak,
      heldBackAt,
      heldBackBps,
    });
    const bucketMs = Math.floor(nowMs / HISTORY_BUCKET_MS) * HISTORY_BUCKET_MS;
    const key = `${id}|${bucketMs}`;
    const b = buckets.get(key) ?? { serverId: id, bucketStart: new Date(bucketMs), samples: 0, users: 0, trafficMax: 0, trafficSum: 0, rxSum: 0, txSum: 0, cpu: 0 };
    b.samples++;
    b.users += r.usersOnline;
    b.trafficMax = Math.max(b.trafficMax, traffic);
    b.trafficSum += traffic;
    b.rxSum += r.rxBps;
    b.txSum += r.txBps;
    b.cpu += r.cpu;
    buckets.set(key, b);
    if (isHealthyReport(r)) everHealthy.add(id);
  }
  await tx
    .insert(serverMetrics)
    .values([...latest.values()])
    .onConflictDoUpdate({
      target: serverMetrics.serverId,
      set: {
        ...fromExcluded(serverMetrics, ["reportedAt", "listenerAlive", "serviceRunning", "usersOnline", "rxBps", "txBps", "cpu", "memory"]),
        // Decided in the row, not from what this batch read: a load stored meanwhile by another
        // transaction (a heartbeat flush) keeps the figures it set.
        peakBps: keptWhileLoadsCurrent(serverMetrics.peakBps),
        heldBackAt: keptWhileLoadsCurrent(serverMetrics.heldBackAt),
        heldBackBps: keptWhileLoadsCurrent(serverMetrics.heldBackBps),
      },
    });
  const h = serverMetricsHistory;
  await tx
    .insert(h)
    .values(
      [...buckets.values()].map((b) => ({
        serverId: b.serverId,
        bucketStart: b.bucketStart,
        samples: b.samples,
        usersOnlineAvg: b.users / b.samples,
        trafficBpsMax: b.trafficMax,
        trafficBpsAvg: b.trafficSum / b.samples,
        rxBpsAvg: b.rxSum / b.samples,
        txBpsAvg: b.txSum / b.samples,
        cpuAvg: b.cpu / b.samples,
      })),
    )
    .onConflictDoUpdate({
      target: [h.serverId, h.bucketStart],
      set: {
        samples: sql`${h.samples} + excluded.samples`,
        usersOnlineAvg: sql`(${h.usersOnlineAvg} * ${h.samples} + excluded.users_online_avg * excluded.samples) / (${h.samples} + excluded.samples)`,
        trafficBpsMax: sql`greatest(${h.trafficBpsMax}, excluded.traffic_bps_max)`,
        trafficBpsAvg: sql`(${h.trafficBpsAvg} * ${h.samples} + excluded.traffic_bps_avg * excluded.samples) / (${h.samples} + excluded.samples)`,
        rxBpsAvg: sql`(${h.rxBpsAvg} * ${h.samples} + excluded.rx_bps_avg * excluded.samples) / (${h.samples} + excluded.samples)`,
        txBpsAvg: sql`(${h.txBpsAvg} * ${h.samples} + excluded.tx_bps_avg * excluded.samples) / (${h.samples} + excluded.samples)`,
        cpuAvg: sql`(${h.cpuAvg} * ${h.samples} + excluded.cpu_avg * excluded.samples) / (${h.samples} + excluded.samples)`,
      },
    });
  const firstSuccess = new Set<string>();
  if (everHealthy.size > 0) {
    const flipped = await tx
      .update(serverHealth)
      .set({ reportEverHealthy: true })
      .where(and(inArray(serverHealth.serverId, [...everHealthy]), eq(serverHealth.reportEverHealthy, false)))
      .returning({ id: serverHealth.serverId, everSucceeded: serverHealth.everSucceeded });
    for (const f of flipped) if (!f.everSucceeded) firstSuccess.add(f.id);
  }

  await storeMeshLinks(tx, items, serverIds);

  const lastNow = new Map(items.map((i) => [i.server.serverId, i.nowMs]));
  return recomputeServers(tx, serverIds, (id) => lastNow.get(id)!, undefined, firstSuccess);
}

/** What the balancing figures of a server are derived from: its row as stored. */
interface BalancingFigures {
  peakBps: number;
  /** The time the peak is as of: its last balancing figure (report or load). */
  atMs: number;
  heldBackAt: Date | null;
  heldBackBps: number | null;
  loadAtMs: number | null;
}

const figureColumns = {
  serverId: serverMetrics.serverId,
  reportedAt: serverMetrics.reportedAt,
  usersOnline: serverMetrics.usersOnline,
  rxBps: serverMetrics.rxBps,
  txBps: serverMetrics.txBps,
  loadAt: serverMetrics.loadAt,
  loadUsers: serverMetrics.loadUsers,
  loadBps: serverMetrics.loadBps,
};
async function balancingFigures(tx: DbOrTx, serverIds: readonly string[]): Promise<Map<string, BalancingFigures>> {
  const rows = await tx
    .select({ ...figureColumns, peakBps: serverMetrics.peakBps, heldBackAt: serverMetrics.heldBackAt, heldBackBps: serverMetrics.heldBackBps })
    .from(serverMetrics)
    .where(inArray(serverMetrics.serverId, [...serverIds]));
  return new Map(
    rows.map((m) => [
      m.serverId,
      { peakBps: m.peakBps, atMs: storedFigure(m).atMs, heldBackAt: m.heldBackAt, heldBackBps: m.heldBackBps, loadAtMs: m.loadAt?.getTime() ?? null },
    ]),
  );
}

/**
 * The learned peak and held-back mark after one balancing figure (a report, or a load while
 * loads are current): the peak decays from its last figure and takes the new traffic; the mark
 * is set when the figure's users get less than another server's of the cluster (rates).
 */
function nextBalancingFigures(
  prev: BalancingFigures | undefined,
  serverId: string,
  users: number,
  trafficBps: number,
  nowMs: number,
  rates: LatestUserRates,
): Omit<BalancingFigures, "loadAtMs"> {
  const peakBps = prev ? Math.max(trafficBps, decayPeak(prev.peakBps, nowMs - prev.atMs, DEFAULT_PEAK_HALF_LIFE_MS)) : trafficBps;
  const heldBack = rates.observe(serverId, users, trafficBps, nowMs);
  return {
    peakBps,
    atMs: nowMs,
    // The last figure that showed it; kept through figures that do not (ServerMetrics.heldBack).
    heldBackAt: heldBack ? new Date(nowMs) : (prev?.heldBackAt ?? null),
    // What the link carried when full: the balancer's peak for it never counts below this.
    heldBackBps: heldBack ? trafficBps : (prev?.heldBackBps ?? null),
  };
}

/** A report's value for a balancing column, or the row's own while its loads are current at the report's time. */
function keptWhileLoadsCurrent(column: AnyColumn) {
  return sql`case when ${serverMetrics.loadAt} >= excluded.reported_at - ${`${LOAD_CURRENT_MS} milliseconds`}::interval then ${column} else excluded.${sql.identifier(column.name)} end`;
}

/** One heartbeat's load, as the heartbeat route queues it (server/dataplane/heartbeat-http.ts). */
export interface HeartbeatLoadItem {
  serverId: string;
  clusterId: string;
  /** When it arrived (panel clock). */
  atMs: number;
  load: HeartbeatLoad;
}

/**
 * Loads from heartbeats (core/heartbeat.ts, one flush of HeartbeatBatcher): each server's load
 * row, its learned peak and its held-back mark, as a report's load sets them. A server without
 * a metrics row yet (no report stored) is skipped: its first report, sent when its agent
 * starts, creates it. A load older than the one stored (another instance's flush) changes
 * nothing. Returns the clusters whose balancing figures changed.
 */
export async function storeLoads(tx: DbOrTx, items: readonly HeartbeatLoadItem[]): Promise<Set<string>> {
  const changed = new Set<string>();
  if (items.length === 0) return changed;
  // Oldest first, as the cluster's reference takes them.
  const sorted = [...items].sort((a, b) => a.atMs - b.atMs);
  const prev = await balancingFigures(
    tx,
    sorted.map((i) => i.serverId),
  );
  const rates = await clustersUserRates(tx, sorted.map((i) => ({ clusterId: i.clusterId, nowMs: i.atMs })));
  const rows = new Map<string, { id: string; at: string; users: number; bps: number; peak: number; heldAt: string | null; heldBps: number | null; clusterId: string }>();
  for (const item of sorted) {
    const p = prev.get(item.serverId);
    if (!p || (p.loadAtMs !== null && item.atMs <= p.loadAtMs)) continue;
    const trafficBps = Math.max(item.load.rxBps, item.load.txBps);
    const next = { ...nextBalancingFigures(p, item.serverId, item.load.usersOnline, trafficBps, item.atMs, rates.get(item.clusterId)!), loadAtMs: item.atMs };
    prev.set(item.serverId, next);
    rows.set(item.serverId, {
      id: item.serverId,
      at: new Date(item.atMs).toISOString(),
      users: item.load.usersOnline,
      bps: trafficBps,
      peak: next.peakBps,
      heldAt: next.heldBackAt?.toISOString() ?? null,
      heldBps: next.heldBackBps,
      clusterId: item.clusterId,
    });
  }
  if (rows.size === 0) return changed;
  const v = [...rows.values()].sort((a, b) => byId(a.id, b.id));
  const res = await tx.execute(sql`
    update ${serverMetrics} m set load_at = v.at, load_users = v.users, load_bps = v.bps, peak_bps = v.peak, held_back_at = v.held_at, held_back_bps = v.held_bps
    from unnest(${pgArray(v.map((r) => r.id))}::uuid[], ${pgArray(v.map((r) => r.at))}::timestamptz[], ${pgArray(v.map((r) => r.users))}::integer[],
      ${pgArray(v.map((r) => r.bps))}::double precision[], ${pgArray(v.map((r) => r.peak))}::double precision[],
      ${pgArray(v.map((r) => r.heldAt))}::timestamptz[], ${pgArray(v.map((r) => r.heldBps))}::double precision[])
      as v(id, at, users, bps, peak, held_at, held_bps)
    where m.server_id = v.id and (m.load_at is null or m.load_at < v.at)
    returning m.server_id`);
  const cluster = new Map(v.map((r) => [r.id, r.clusterId]));
  for (const r of rowsOf<{ server_id: string }>(res)) changed.add(cluster.get(r.server_id)!);
  return changed;
}

/**
 * Per cluster, its servers' latest traffic per user (capacity.ts LatestUserRates): what a
 * report is compared with to tell whether its users are held back. Kept in memory and updated
 * by every report this instance stores; read again from the database every
 * REFERENCE_REREAD_MS (and when the clock went backwards), which takes in other instances'
 * reports and a changed report interval. Reading it for every batch cost a fleet of 2,000
 * servers reporting every second about 4 ms a batch (bench:agent). A batch that rolls back
 * leaves its reports in it until the next read; its agents send them again. Reports older
 * than three report intervals (the "No data" threshold), and at least 10 minutes, are left
 * out: that server stopped reporting, and its rate is from another hour's demand.
 */
async function clustersUserRates(tx: DbOrTx, items: ReadonlyArray<{ clusterId: string; nowMs: number }>): Promise<Map<string, LatestUserRates>> {
  const nowMs = Math.min(...items.map((i) => i.nowMs));
  const clusterIds = [...new Set(items.map((i) => i.clusterId))];
  const stale = clusterIds.filter((c) => {
    const r = userRates.get(c);
    return !r || nowMs < r.readAtMs || nowMs - r.readAtMs > REFERENCE_REREAD_MS;
  });
  if (stale.length > 0) {
    const fresh = new Map<string, LatestUserRates>();
    const intervals = await tx.select({ id: clusters.id, reportIntervalS: clusters.reportIntervalS }).from(clusters).where(inArray(clusters.id, stale));
    for (const c of stale) fresh.set(c, new LatestUserRates(DEFAULT_HYSTERESIS, REFERENCE_MIN_AGE_MS));
    for (const c of intervals) fresh.set(c.id, new LatestUserRates(DEFAULT_HYSTERESIS, Math.max(REFERENCE_MIN_AGE_MS, 3 * c.reportIntervalS * 1000)));
    const rows = await tx
      .select({ clusterId: servers.clusterId, ...figureColumns })
      .from(serverMetrics)
      .innerJoin(servers, eq(servers.id, serverMetrics.serverId))
      .where(and(inArray(servers.clusterId, stale), or(gte(serverMetrics.usersOnline, HELD_BACK_MIN_USERS), gte(serverMetrics.loadUsers, HELD_BACK_MIN_USERS))));
    // Each server's balancing figure (its load while loads are current), folded oldest first.
    const figures = rows.map((m) => ({ clusterId: m.clusterId, serverId: m.serverId, f: storedFigure(m) })).sort((a, b) => a.f.atMs - b.f.atMs);
    for (const { clusterId, serverId, f } of figures) fresh.get(clusterId)!.observe(serverId, f.users, f.trafficBps, f.atMs);
    for (const [c, rates] of fresh) userRates.set(c, { rates, readAtMs: nowMs });
  }
  return new Map(clusterIds.map((c) => [c, userRates.get(c)!.rates]));
}
const REFERENCE_MIN_AGE_MS = 10 * 60_000;
const REFERENCE_REREAD_MS = 30_000;
/** Per cluster: its servers' latest traffic per user, and when it was last read from the database. */
const userRates = new Map<string, { rates: LatestUserRates; readAtMs: number }>();

/** Mesh links of every observer in the batch: read once, folded in order, written once. */
async function storeMeshLinks(tx: DbOrTx, items: readonly ReportedHealth[], serverIds: string[]): Promise<void> {
  const prevRows = await tx.select().from(meshChecks).where(inArray(meshChecks.observerId, serverIds));
  const withChecks = items.filter((i) => i.report.neighbours.length > 0);
  if (prevRows.length === 0 && withChecks.length === 0) return;
  // Only servers of the same cluster are valid targets (unknown ids are ignored, not errors).
  const wanted = [...new Set(withChecks.flatMap((i) => i.report.neighbours.map((n) => n.serverId)))];
  const targetCluster = new Map<string, string>();
  for (let k = 0; k < wanted.length; k += 10_000) {
    const rows = await tx.select({ id: servers.id, clusterId: servers.clusterId }).from(servers).where(inArray(servers.id, wanted.slice(k, k + 10_000)));
    for (const r of rows) targetCluster.set(r.id, r.clusterId);
  }
  const links = new Map<string, ObserverLinks>();
  for (const p of prevRows) {
    const o = links.get(p.observerId) ?? {};
    Object.defineProperty(o, p.targetId, { value: { failStreak: p.failStreak, lastOk: p.lastOk }, enumerable: true, writable: true, configurable: true });
    links.set(p.observerId, o);
  }
  const rtt = new Map<string, Map<string, number | null>>();
  const checkedAt = new Map<string, number>();
  const touched = new Set<string>();
  for (const { server, report, nowMs } of items) {
    const id = server.serverId;
    const checks = report.neighbours.filter((n) => n.serverId !== id && targetCluster.get(n.serverId) === server.clusterId);
    links.set(id, updateObserverLinks(links.get(id), id, checks));
    rtt.set(id, new Map(checks.map((c) => [c.serverId, c.rttMs])));
    checkedAt.set(id, nowMs);
    touched.add(id);
  }
  const observers = [...touched].sort(byId);
  await tx.delete(meshChecks).where(inArray(meshChecks.observerId, observers));
  const obs: string[] = [];
  const tgt: string[] = [];
  const ok: boolean[] = [];
  const streak: number[] = [];
  const rtts: Array<number | null> = [];
  const at: string[] = [];
  for (const o of observers) {
    const l = links.get(o) ?? {};
    for (const t of Object.keys(l).sort(byId)) {
      obs.push(o);
      tgt.push(t);
      ok.push(l[t]!.lastOk);
      streak.push(l[t]!.failStreak);
      rtts.push(rtt.get(o)?.get(t) ?? null);
      at.push(new Date(checkedAt.get(o)!).toISOString());
    }
  }
  if (obs.length === 0) return;
  await tx.execute(sql`
    insert into ${meshChecks} (observer_id, target_id, last_ok, fail_streak, rtt_ms, checked_at)
    select * from unnest(${pgArray(obs)}::uuid[], ${pgArray(tgt)}::uuid[], ${pgArray(ok)}::boolean[], ${pgArray(streak)}::integer[],
      ${pgArray(rtts)}::real[], ${pgArray(at)}::timestamptz[])`);
}

