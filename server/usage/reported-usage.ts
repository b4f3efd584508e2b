/**
 * Usage as each server reported it (issue 21, point 3): subscriber_traffic keeps bytes per
 * (subscriber, server, UTC day), so an operator sees who reported what, and an owner can
 * discard what one server reported over a period: the rows go, the subscribers get that usage
 * back (the part inside their current period), and those it brings under their limit are back
 * in every agent's config at the next push.
 */
import { TRPCError } from "@trpc/server";
import { and, asc, eq, gte, lt, lte, sql } from "drizzle-orm";
import type { Db } from "@/db/client";
import { servers, subscriberTraffic, subscribers, trafficQuarantine } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { written, type Actor, type Written } from "@/server/changes";
import { emitSubscriberBlocked } from "./block-alerts";
import { foldSubscriberChanges, foldTrafficJournal, foldJournalIn, TRAFFIC_FOLD_LOCKS } from "./journal";
import { pgArray } from "@/db/pg-array";

const rowsOf = <T>(r: unknown): T[] => (Array.isArray(r) ? r : ((r as { rows?: T[] }).rows ?? [])) as T[];

/** A subscriber's usage per server: all days kept, and since the start of the current period. */
export async function subscriberUsageByServer(db: Db, subscriberId: string) {
  const [sub] = await db.select({ id: subscribers.id, periodStart: subscribers.usagePeriodStart }).from(subscribers).where(eq(subscribers.id, subscriberId));
  if (!sub) throw new TRPCError({ code: "NOT_FOUND", message: "This subscriber no longer exists" });
  const periodDay = sub.periodStart.toISOString().slice(0, 10);
  const rows = await db
    .select({
      serverId: servers.id,
      server: servers.name,
      upBytes: sql<string>`sum(${subscriberTraffic.upBytes})`,
      downBytes: sql<string>`sum(${subscriberTraffic.downBytes})`,
      periodUpBytes: sql<string>`coalesce(sum(${subscriberTraffic.upBytes}) filter (where ${subscriberTraffic.day} >= ${periodDay}), 0)`,
      periodDownBytes: sql<string>`coalesce(sum(${subscriberTraffic.downBytes}) filter (where ${subscriberTraffic.day} >= ${periodDay}), 0)`,
      firstDay: sql<string>`min(${subscriberTraffic.day})`,
      lastDay: sql<string>`max(${subscriberTraffic.day})`,
    })
    .from(subscriberTraffic)
    .innerJoin(servers, eq(servers.id, subscriberTraffic.serverId))
    .where(eq(subscriberTraffic.subscriberId, subscriberId))
    .groupBy(servers.id, servers.name)
    .orderBy(asc(servers.name));
  return rows.map((r) => ({ ...r, upBytes: Number(r.upBytes), downBytes: Number(r.downBytes), periodUpBytes: Number(r.periodUpBytes), periodDownBytes: Number(r.periodDownBytes) }));
}

/**
 * A subscriber's usage history (the subscriber page's Usage tab): bytes per UTC day and per
 * server over the last `days` days, today included, from the per-day journal folds. Days with
 * no traffic have no row; the page fills them in.
 */
export async function subscriberUsageHistory(db: Db, input: { subscriberId: string; days: number; nowMs?: number }) {
  const [sub] = await db.select({ id: subscribers.id }).from(subscribers).where(eq(subscribers.id, input.subscriberId));
  if (!sub) throw new TRPCError({ code: "NOT_FOUND", message: "This subscriber no longer exists" });
  const today = new Date(input.nowMs ?? Date.now());
  const to = today.toISOString().slice(0, 10);
  const from = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - (input.days - 1))).toISOString().slice(0, 10);
  const rows = await db
    .select({ day: subscriberTraffic.day, serverId: servers.id, server: servers.name, upBytes: subscriberTraffic.upBytes, downBytes: subscriberTraffic.downBytes })
    .from(subscriberTraffic)
    .innerJoin(servers, eq(servers.id, subscriberTraffic.serverId))
    .where(and(eq(subscriberTraffic.subscriberId, input.subscriberId), gte(subscriberTraffic.day, from), lte(subscriberTraffic.day, to)))
    .orderBy(asc(subscriberTraffic.day), asc(servers.name));
  return { from, to, rows: rows.map((r) => ({ ...r, upBytes: Number(r.upBytes), downBytes: Number(r.downBytes) })) };
}

/** Per server of a cluster: bytes and subscribers it reported over the days [from, to). */
export async function clusterUsageByServer(db: Db, input: { clusterId: string; from: string; to: string }) {
  const rows = await db
    .select({
      serverId: servers.id,
      server: servers.name,
      subscribers: sql<number>`count(distinct ${subscriberTraffic.subscriberId})::int`,
      upBytes: sql<string>`coalesce(sum(${subscriberTraffic.upBytes}), 0)`,
      downBytes: sql<string>`coalesce(sum(${subscriberTraffic.downBytes}), 0)`,
    })
    .from(servers)
    .leftJoin(subscriberTraffic, and(eq(subscriberTraffic.serverId, servers.id), gte(subscriberTraffic.day, input.from), lt(subscriberTraffic.day, input.to)))
    .where(eq(servers.clusterId, input.clusterId))
    .groupBy(servers.id, servers.name)
    .orderBy(asc(servers.name));
  return rows.map((r) => ({ ...r, upBytes: Number(r.upBytes), downBytes: Number(r.downBytes) }));
}

/** Traffic the folds could not apply, newest first (the health page lists them). */
export async function quarantinedTraffic(db: Db, clusterId: string, limit = 50) {
  return db
    .select({
      id: trafficQuarantine.id,
      serverId: trafficQuarantine.serverId,
      server: servers.name,
      stage: trafficQuarantine.stage,
      reason: trafficQuarantine.reason,
      seenAt: trafficQuarantine.seenAt,
      quarantinedAt: trafficQuarantine.quarantinedAt,
      subscribers: sql<number>`cardinality(${trafficQuarantine.subIds})`,
    })
    .from(trafficQuarantine)
    .leftJoin(servers, eq(servers.id, trafficQuarantine.serverId))
    .where(eq(trafficQuarantine.clusterId, clusterId))
    .orderBy(sql`${trafficQuarantine.quarantinedAt} desc, ${trafficQuarantine.id} desc`)
    .limit(limit);
}

export interface DiscardInput {
  clusterId: string;
  serverId: string;
  /** First UTC day discarded (YYYY-MM-DD). */
  from: string;
  /** First UTC day kept after the period (exclusive). */
  to: string;
  /** Only these subscribers (absent: every subscriber of the cluster). */
  subscriberIds?: string[];
}

export interface DiscardResult {
  subscribers: number;
  upBytes: number;
  downBytes: number;
  /** Bytes taken off subscribers' current usage (the rest was in periods already reset). */
  givenBackBytes: number;
  /** Subscribers over their limit before and under it now: back in the agents' configs. */
  reenabled: number;
}

/**
 * Discards what one server reported for subscribers of its cluster over the UTC days
 * [from, to): the journal is folded first (so what the server reported so far is all in
 * subscriber_traffic), then, in one transaction holding both fold locks, its rows go and each
 * subscriber's current usage drops by the part of them on or after the day its period began
 * (never below 0; earlier days were in periods already reset). Audited.
 */
export async function discardReportedUsage(db: Db, actor: Actor, input: DiscardInput): Promise<Written<DiscardResult>> {
  const [server] = await db.select({ id: servers.id, name: servers.name, clusterId: servers.clusterId }).from(servers).where(eq(servers.id, input.serverId));
  if (!server || server.clusterId !== input.clusterId) throw new TRPCError({ code: "NOT_FOUND", message: "serverId: no such server in this cluster" });
  await foldTrafficJournal(db);
  const result = await db.transaction(async (tx) => {
    // No fold runs meanwhile (the folds take these locks with try-lock and skip a turn).
    for (const key of TRAFFIC_FOLD_LOCKS) await tx.execute(sql`select pg_advisory_xact_lock(${key})`);
    const folded = await foldJournalIn(tx);
    const only = input.subscriberIds ? sql`and st.subscriber_id = any(${pgArray(input.subscriberIds)}::uuid[])` : sql``;
    // Lock the subscribers concerned in id order (as every other writer of their totals).
    await tx.execute(sql`
      select s.id from ${subscribers} s
      where s.cluster_id = ${input.clusterId} and exists (
        select 1 from ${subscriberTraffic} st where st.subscriber_id = s.id and st.server_id = ${input.serverId} and st.day >= ${input.from} and st.day < ${input.to} ${only})
      order by s.id for update`);
    const res = await tx.execute(sql`
      with d as (
        delete from ${subscriberTraffic} st using ${subscribers} s
        where st.subscriber_id = s.id and s.cluster_id = ${input.clusterId} and st.server_id = ${input.serverId}
          and st.day >= ${input.from} and st.day < ${input.to} ${only}
        returning st.subscriber_id as id, st.day, st.up_bytes as up, st.down_bytes as down
      ),
      g as (
        select d.id, sum(d.up) as up, sum(d.down) as down,
          coalesce(sum(d.up) filter (where d.day >= (s.usage_period_start at time zone 'UTC')::date), 0) as up_cur,
          coalesce(sum(d.down) filter (where d.day >= (s.usage_period_start at time zone 'UTC')::date), 0) as down_cur,
          bool_or(s.traffic_limit_bytes is not null and s.traffic_used_bytes >= s.traffic_limit_bytes) as was_over
        from d join ${subscribers} s on s.id = d.id
        group by d.id
      ),
      upd as (
        update ${subscribers} s set
          traffic_up_bytes = greatest(s.traffic_up_bytes - g.up_cur, 0)::bigint,
          traffic_down_bytes = greatest(s.traffic_down_bytes - g.down_cur, 0)::bigint,
          traffic_used_bytes = greatest(s.traffic_up_bytes - g.up_cur, 0)::bigint + greatest(s.traffic_down_bytes - g.down_cur, 0)::bigint,
          updated_at = now()
        from g where s.id = g.id
        returning s.id, g.was_over and (s.traffic_limit_bytes is null or s.traffic_used_bytes < s.traffic_limit_bytes) as reenabled
      )
      select
        (select count(*) from g)::int as subscribers,
        (select coalesce(sum(up), 0) from g)::text as up,
        (select coalesce(sum(down), 0) from g)::text as down,
        (select coalesce(sum(up_cur + down_cur), 0) from g)::text as cur,
        array(select id::text from upd) as ids,
        (select count(*) from upd where reenabled)::int as reenabled`);
    const row = rowsOf<{ subscribers: number; up: string; down: string; cur: string; ids: string[] | null; reenabled: number }>(res)[0]!;
    const ids = row.ids ?? [];
    // Limited alerts' state follows (a subscriber back under the limit is no longer announced).
    await emitSubscriberBlocked(tx, ids, Date.now());
    const out: DiscardResult = { subscribers: Number(row.subscribers), upBytes: Number(row.up), downBytes: Number(row.down), givenBackBytes: Number(row.cur), reenabled: Number(row.reenabled) };
    await recordAudit(tx, actor, {
      clusterId: input.clusterId,
      action: "server.discard-usage",
      entityType: "server",
      entityId: server.id,
      summary: `Discarded the usage ${server.name} reported from ${input.from} to ${input.to} (exclusive): ${out.upBytes + out.downBytes} bytes of ${out.subscribers} subscribers, ${out.reenabled} back under their limit`,
      after: { ...out, from: input.from, to: input.to, subscriberIds: input.subscriberIds?.slice(0, 100) ?? null },
    });
    return { out, folded };
  });
  // What the fold above applied for other clusters is announced as the batcher's folds would.
  const f = result.folded;
  return written(
    result.out,
    { kind: "subscribers", clusterId: input.clusterId },
    { kind: "traffic", clusterId: input.clusterId },
    ...f.movedClusters.filter((c) => c !== input.clusterId).map((clusterId) => ({ kind: "traffic" as const, clusterId })),
    ...foldSubscriberChanges(f).filter((c) => c.clusterId !== input.clusterId),
  );
}
