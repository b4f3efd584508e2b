/**
 * The health page's history charts: each server's traffic and users over the last 24 hours,
 * read from the 5-minute buckets of server_metrics_history. One query for the whole cluster,
 * downsampled in SQL so a cluster of any age returns at most `maxPoints` points per server.
 */
import { lt, sql } from "drizzle-orm";
import type { DbOrTx } from "@/db/client";
import { serverMetricsHistory } from "@/db/schema";
import { clusterOr404 } from "./cluster-health";
import { DEFAULT_HISTORY_RANGE, HISTORY_RANGE_MS, type HistoryRange } from "@/core/monitoring-contract";

export const HISTORY_WINDOW_MS = 24 * 60 * 60 * 1000;
export const HISTORY_MAX_POINTS = 288;
/** The width of one stored bucket (reported-health.ts writes one per server per 5 minutes). */
export const HISTORY_BUCKET_MS = 5 * 60 * 1000;

export interface HistoryPoint {
  /** Start of the slot, ms since the epoch. */
  t: number;
  usersAvg: number;
  rxBpsAvg: number;
  txBpsAvg: number;
  /** The highest sample of the busier direction in the slot. */
  trafficBpsMax: number;
}

export interface ServerHistory {
  serverId: string;
  points: HistoryPoint[];
}

export interface ClusterHistory {
  from: number;
  to: number;
  /** Width of one slot; two points further apart than this have a gap between them. */
  stepMs: number;
  servers: ServerHistory[];
}

/** A slot is a whole number of stored buckets, wide enough that the window has ≤ maxPoints slots. */
export function historyStepMs(windowMs: number, maxPoints: number): number {
  const buckets = Math.max(1, Math.ceil(windowMs / maxPoints / HISTORY_BUCKET_MS));
  return buckets * HISTORY_BUCKET_MS;
}

/**
 * Every server of the cluster with its points (servers without history get an empty list),
 * in name order. Rows older than the window, or dated in the future, are left out; a slot
 * holding several buckets averages them weighted by their sample counts.
 */
export async function clusterMetricsHistory(
  db: DbOrTx,
  clusterId: string,
  opts: { now?: Date; windowMs?: number; maxPoints?: number } = {},
): Promise<ClusterHistory> {
  const to = (opts.now ?? new Date()).getTime();
  const windowMs = opts.windowMs ?? HISTORY_WINDOW_MS;
  const maxPoints = Math.max(1, Math.floor(opts.maxPoints ?? HISTORY_MAX_POINTS));
  const stepMs = historyStepMs(windowMs, maxPoints);
  // Slots are aligned to the epoch, like the buckets, so a slot never splits a bucket.
  const from = Math.floor((to - windowMs) / stepMs) * stepMs + stepMs;
  const fromDate = new Date(from).toISOString();
  const toDate = new Date(to).toISOString();
  const result = await db.execute<{
    server_id: string;
    slot: string | number | null;
    users: number | string | null;
    rx: number | string | null;
    tx: number | string | null;
    peak: number | string | null;
  }>(sql`
    select s.id as server_id,
           floor(extract(epoch from h.bucket_start) * 1000 / ${stepMs})::bigint as slot,
           sum(h.users_online_avg * h.samples) / sum(h.samples) as users,
           sum(h.rx_bps_avg * h.samples) / sum(h.samples) as rx,
           sum(h.tx_bps_avg * h.samples) / sum(h.samples) as tx,
           max(h.traffic_bps_max) as peak
      from servers s
      left join server_metrics_history h
        on h.server_id = s.id
       and h.bucket_start >= ${fromDate}::timestamptz
       and h.bucket_start <= ${toDate}::timestamptz
     where s.cluster_id = ${clusterId}
     group by s.id, s.name, slot
     order by s.name, s.id, slot`);
  const rows = (result as unknown as { rows?: unknown[] }).rows ?? (result as unknown as unknown[]);
  const byServer = new Map<string, HistoryPoint[]>();
  for (const r of rows as Array<{ server_id: string; slot: string | number | null; users: unknown; rx: unknown; tx: unknown; peak: unknown }>) {
    const points = byServer.get(r.server_id) ?? [];
    byServer.set(r.server_id, points);
    if (r.slot === null) continue;
    points.push({
      t: Number(r.slot) * stepMs,
      usersAvg: Number(r.users),
      rxBpsAvg: Number(r.rx),
      txBpsAvg: Number(r.tx),
      trafficBpsMax: Number(r.peak),
    });
  }
  return { from, to, stepMs, servers: [...byServer].map(([serverId, points]) => ({ serverId, points })) };
}

/** The history of a cluster that exists (NOT_FOUND otherwise): the monitoring.history procedure. */
export async function clusterHistoryOr404(db: DbOrTx, clusterId: string, range: HistoryRange = DEFAULT_HISTORY_RANGE): Promise<ClusterHistory> {
  await clusterOr404(db, clusterId);
  return clusterMetricsHistory(db, clusterId, { windowMs: HISTORY_RANGE_MS[range] });
}

/** How long the 5-minute history buckets are kept: the health page's longest range (7 d) looks back this far. */
export const HISTORY_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** Deletes history buckets that started before `nowMs - retentionMs`; returns how many went. */
export async function pruneMetricsHistory(db: DbOrTx, nowMs: number, retentionMs = HISTORY_RETENTION_MS): Promise<number> {
  const gone = await db
    .delete(serverMetricsHistory)
    .where(lt(serverMetricsHistory.bucketStart, new Date(nowMs - retentionMs)))
    .returning({ id: serverMetricsHistory.id });
  return gone.length;
}
