/**
 * What agent reports say about servers' health, stored: latest metrics (+ the learned peak),
 * the 5-minute history bucket, reportEverHealthy, the mesh links, then each server's status
 * once (status.ts). The report ingestion (server/dataplane/reports.ts) calls it inside its
 * batch's transaction.
 */
import "server-only";
import { and, eq, gte, inArray, sql } from "drizzle-orm";
import type { DbOrTx } from "@/db/client";
import { pgArray } from "@/db/pg-array";
import { fromExcluded } from "@/db/upsert";
import { clusters, meshChecks, serverHealth, serverMetrics, serverMetricsHistory, servers } from "@/db/schema";
import type { AgentReport } from "@/core/monitoring-contract";
import { isHealthyReport } from "@/core/status";
import { decayPeak, DEFAULT_PEAK_HALF_LIFE_MS, HELD_BACK_MIN_USERS, LatestUserRates } from "@/server/balancer/capacity";
import { DEFAULT_HYSTERESIS } from "@/server/balancer/types";
import { updateObserverLinks, type ObserverLinks } from "./mesh";
import { HISTORY_BUCKET_MS } from "./metrics-history";
import { recomputeServers, type RecomputeResult } from "./status";

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
  const prevMetrics = new Map(
    (
      await tx
        .select({ serverId: serverMetrics.serverId, peakBps: serverMetrics.peakBps, reportedAt: serverMetrics.reportedAt, heldBackAt: serverMetrics.heldBackAt, heldBackBps: serverMetrics.heldBackBps })
        .from(serverMetrics)
        .where(inArray(serverMetrics.serverId, serverIds))
    ).map((m) => [m.serverId, { peakBps: m.peakBps, atMs: m.reportedAt.getTime(), heldBackAt: m.heldBackAt, heldBackBps: m.heldBackBps }]),
  );
  const rates = await clustersUserRates(tx, items);
  const latest = new Map<string, typeof serverMetrics.$inferInsert>();
  const buckets = new Map<string, { serverId: string; bucketStart: Date; samples: number; users: number; trafficMax: number; trafficSum: number; rxSum: number; txSum: number; cpu: number }>();
  const everHealthy = new Set<string>();
  for (const { server, report: r, nowMs } of items) {
    const id = server.serverId;
    const traffic = Math.max(r.rxBps, r.txBps);
    const prev = prevMetrics.get(id);
    const peak = prev ? Math.max(traffic, decayPeak(prev.peakBps, nowMs - prev.atMs, DEFAULT_PEAK_HALF_LIFE_MS)) : traffic;
    const heldBack = rates.get(server.clusterId)!.observe(id, r.usersOnline, traffic, nowMs);
    // The last report that showed it; kept through reports that do not (ServerMetrics.heldBack).
    const heldBackAt = heldBack ? new Date(nowMs) : (prev?.heldBackAt ?? null);
    // What the link carried when full: the balancer's peak for it never counts below this.
    const heldBackBps = heldBack ? traffic : (prev?.heldBackBps ?? null);
    prevMetrics.set(id, { peakBps: peak, atMs: nowMs, heldBackAt, heldBackBps });
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
      set: fromExcluded(serverMetrics, ["reportedAt", "listenerAlive", "serviceRunning", "usersOnline", "rxBps", "txBps", "cpu", "memory", "peakBps", "heldBackAt", "heldBackBps"]),
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
async function clustersUserRates(tx: DbOrTx, items: readonly ReportedHealth[]): Promise<Map<string, LatestUserRates>> {
  const nowMs = Math.min(...items.map((i) => i.nowMs));
  const clusterIds = [...new Set(items.map((i) => i.server.clusterId))];
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
      .select({ clusterId: servers.clusterId, serverId: serverMetrics.serverId, users: serverMetrics.usersOnline, rxBps: serverMetrics.rxBps, txBps: serverMetrics.txBps, at: serverMetrics.reportedAt })
      .from(serverMetrics)
      .innerJoin(servers, eq(servers.id, serverMetrics.serverId))
      .where(and(inArray(servers.clusterId, stale), gte(serverMetrics.usersOnline, HELD_BACK_MIN_USERS)))
      .orderBy(serverMetrics.reportedAt);
    for (const m of rows) fresh.get(m.clusterId)!.observe(m.serverId, m.users, Math.max(m.rxBps, m.txBps), m.at.getTime());
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

