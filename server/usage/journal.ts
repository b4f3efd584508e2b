/**
 * The traffic journal (issue 21): a batch of agent reports writes its per-user traffic as one
 * traffic_journal row, in the batch's transaction (exactly once, durable before the ack);
 * folds apply it to subscribers' totals (limits, "online now") and to subscriber_traffic (per
 * server and day). The fold timers are fold-job.ts.
 */
import "server-only";
import { eq, sql, type SQL } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { pgArray } from "@/db/pg-array";
import { rowsOf } from "@/db/rows";
import { servers, subscriberTraffic, subscribers, trafficJournal, trafficQuarantine } from "@/db/schema";
import type { AgentReport } from "@/core/monitoring-contract";
import { isDatabaseDown, isTransactionConflict } from "@/server/db-errors";
import { MAX_NAMED_SUBSCRIBERS } from "@/server/changes";
import { logger } from "@/server/logger";
import { counter } from "@/server/metrics";
import { emitSubscriberBlocked } from "./block-alerts";

/** Failures that say nothing about the rows (database away, deadlock): try again later, quarantine nothing. */
const transient = (err: unknown) => isDatabaseDown(err) || isTransactionConflict(err);

const quarantined = counter("routeboard_traffic_quarantined_total", "Traffic journal rows a fold could not apply, moved to traffic_quarantine (issue 21)");

/** One report's per-user traffic, as the journal takes it. */
export interface ReportedTraffic {
  server: { serverId: string; clusterId: string };
  report: Pick<AgentReport, "users">;
  nowMs: number;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** UTC day of a timestamp, as the date column stores it. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * Journals the traffic of the (non-duplicate) reports of a batch: one traffic_journal row,
 * summed in memory per subscriber (totals) and per (subscriber, server, UTC day), written as
 * parallel arrays. Emails that are no subscriber of the server's cluster are counted per report.
 * Two statements for the whole batch: the subscriber lookup and the journal insert. The
 * subscribers' totals and subscriber_traffic follow at the folds (foldTrafficTotals,
 * foldTrafficDays), within a second for the totals.
 */
export async function journalTraffic<T extends ReportedTraffic>(tx: DbOrTx, items: readonly T[]): Promise<{ unknownTotal: number; unknownByItem: Map<T, number> }> {
  const clusterOfServer = new Map(items.map((i) => [i.server.serverId, i.server.clusterId]));
  const unknownByItem = new Map<T, number>();
  let unknownTotal = 0;
  const emails = new Set<string>();
  for (const it of items) {
    const users = it.report.users;
    if (users) for (let k = 0; k < users.length; k++) emails.add(users[k]!.email.toLowerCase());
  }
  if (emails.size === 0) return { unknownTotal, unknownByItem };
  const clusterOfSub = new Map<string, string>();
  const list = [...emails].filter((e) => UUID_RE.test(e));
  for (let k = 0; k < list.length; k += 10_000) {
    const rows = await tx.execute<{ id: string; cluster_id: string }>(
      sql`select id, cluster_id from ${subscribers} where id = any(${pgArray(list.slice(k, k + 10_000))}::uuid[])`,
    );
    for (const r of rowsOf<{ id: string; cluster_id: string }>(rows)) clusterOfSub.set(r.id, r.cluster_id);
  }
  // subscriber → bytes; (subscriber, server, day) → bytes, as parallel arrays
  const perSub = new Map<string, { up: number; down: number }>();
  const perDay = new Map<string, number>();
  const ent = { sub: [] as string[], srv: [] as string[], day: [] as string[], up: [] as number[], down: [] as number[] };
  let seenMs = 0;
  for (const it of items) {
    const users = it.report.users;
    if (!users) continue;
    let unknown = 0;
    const srv = it.server.serverId;
    const cluster = clusterOfServer.get(srv);
    const day = utcDay(it.nowMs);
    for (let k = 0; k < users.length; k++) {
      const u = users[k]!;
      const sub = u.email.toLowerCase();
      if (clusterOfSub.get(sub) !== cluster) {
        unknown++;
        continue;
      }
      if (u.up + u.down === 0) continue;
      seenMs = Math.max(seenMs, it.nowMs);
      const s = perSub.get(sub);
      if (s) {
        s.up += u.up;
        s.down += u.down;
      } else perSub.set(sub, { up: u.up, down: u.down });
      const key = `${sub}|${srv}|${day}`;
      const at = perDay.get(key);
      if (at !== undefined) {
        ent.up[at]! += u.up;
        ent.down[at]! += u.down;
      } else {
        perDay.set(key, ent.sub.length);
        ent.sub.push(sub);
        ent.srv.push(srv);
        ent.day.push(day);
        ent.up.push(u.up);
        ent.down.push(u.down);
      }
    }
    if (unknown > 0) unknownByItem.set(it, unknown);
    unknownTotal += unknown;
  }
  if (perSub.size === 0) return { unknownTotal, unknownByItem };
  const subs = [...perSub.keys()];
  await tx.execute(sql`
    insert into ${trafficJournal} (sub_ids, sub_up, sub_down, seen_at, ent_sub, ent_srv, ent_day, ent_up, ent_down)
    values (${pgArray(subs)}::uuid[], ${pgArray(subs.map((id) => perSub.get(id)!.up))}::bigint[], ${pgArray(subs.map((id) => perSub.get(id)!.down))}::bigint[],
      ${new Date(seenMs).toISOString()}::timestamptz, ${pgArray(ent.sub)}::uuid[], ${pgArray(ent.srv)}::uuid[], ${pgArray(ent.day)}::date[],
      ${pgArray(ent.up)}::bigint[], ${pgArray(ent.down)}::bigint[])`);
  return { unknownTotal, unknownByItem };
}


/**
 * One totals fold at a time across instances (two updating the same subscribers could
 * deadlock), and one per-day fold. The two kinds touch disjoint journal rows and run side by
 * side, so a long per-day fold never delays the totals.
 */
const TOTALS_FOLD_LOCK_KEY = 0x5242_4a4e; // "RBJN"
const DAYS_FOLD_LOCK_KEY = 0x5242_4a44; // "RBJD"
/** Both fold locks, in the order to take them (a writer that must not interleave with folds). */
export const TRAFFIC_FOLD_LOCKS = [TOTALS_FOLD_LOCK_KEY, DAYS_FOLD_LOCK_KEY] as const;

/**
 * Folds the whole journal inside the caller's transaction (which holds TRAFFIC_FOLD_LOCKS),
 * in a savepoint: if a row cannot be folded, nothing of it is applied here and the batcher's
 * folds quarantine the culprit. Returns what the totals fold did.
 */
export async function foldJournalIn(tx: DbOrTx): Promise<TotalsFold> {
  try {
    return await tx.transaction(async (sp) => {
      const t = await foldTotalsStep(sp, sql`not totals_folded`);
      await foldDaysStep(sp, sql`totals_folded`);
      return t;
    });
  } catch (err) {
    if (isDatabaseDown(err)) throw err;
    return emptyFold();
  }
}

/** What one totals fold did: journal rows applied, clusters whose totals moved or crossed a limit. */
export interface TotalsFold {
  folded: number;
  movedClusters: string[];
  crossedClusters: string[];
  /** Clusters where a subscriber on hold connected for the first time (its expiry is now set). */
  startedClusters: string[];
  /** Per cluster of crossedClusters and startedClusters, the subscribers who crossed or started. */
  changedSubscribers: Map<string, string[]>;
}

/**
 * The "subscribers" changes a fold causes: per cluster where someone crossed a limit or
 * started a hold, naming them (so listeners re-read their rows only) unless there are more
 * than MAX_NAMED_SUBSCRIBERS.
 */
const emptyFold = (): TotalsFold => ({ folded: 0, movedClusters: [], crossedClusters: [], startedClusters: [], changedSubscribers: new Map() });

/** Adds fold `t` to `into` (clusters once each). */
function mergeFold(into: TotalsFold, t: TotalsFold): void {
  into.folded += t.folded;
  for (const k of ["movedClusters", "crossedClusters", "startedClusters"] as const) for (const c of t[k]) if (!into[k].includes(c)) into[k].push(c);
  for (const [c, ids] of t.changedSubscribers) into.changedSubscribers.set(c, [...(into.changedSubscribers.get(c) ?? []), ...ids]);
}

export function foldSubscriberChanges(f: TotalsFold): Array<{ kind: "subscribers"; clusterId: string; subscriberIds?: string[] }> {
  return [...new Set([...f.crossedClusters, ...f.startedClusters])].map((clusterId) => {
    const ids = f.changedSubscribers.get(clusterId);
    return { kind: "subscribers", clusterId, ...(ids && ids.length > 0 && ids.length <= MAX_NAMED_SUBSCRIBERS ? { subscriberIds: ids } : {}) };
  });
}

/**
 * Adds the per-subscriber totals of journal rows not yet applied (at most `maxRows`, oldest
 * first) to subscribers' totals and last_seen_at, and marks those rows, in one statement, so
 * each row's totals are added exactly once even across crashes and instances. Returns the
 * clusters whose totals moved, those where a subscriber reached its traffic limit, and those
 * where a subscriber on hold connected first (its expiry is set now). The caller publishes
 * "traffic" and "subscribers": the config hub then drops the limited and times the expiries.
 */
export async function foldTrafficTotals(db: Db, maxRows = 1000): Promise<TotalsFold> {
  try {
    return await db.transaction((tx) => foldTotalsStep(tx, sql`id in (select id from ${trafficJournal} where not totals_folded order by id limit ${maxRows})`));
  } catch (err) {
    if (transient(err)) throw err;
    // Some row of the step cannot be folded: fold them one by one and quarantine the culprit
    // (issue 21), so one bad batch never holds up anyone else's traffic.
    const out = emptyFold();
    await foldOneByOne(db, "totals", maxRows, async (id) => {
      const t = await db.transaction((tx) => foldTotalsStep(tx, sql`id = ${id} and not totals_folded`));
      mergeFold(out, t);
      return t.folded;
    });
    return out;
  }
}

/**
 * Largest value a byte counter takes (2^62 − 1): sums are clamped there instead of failing,
 * and up + down (traffic_used_bytes) still fits a bigint. Only a forged report could get
 * near it (reports are bounded by the server's report capacity), but an error here used to
 * fail every later fold (issue 21).
 */
export const BYTES_CAP = 4_611_686_018_427_387_903n;
const CAP = sql.raw(`${BYTES_CAP}::numeric`);

async function foldTotalsStep(tx: DbOrTx, which: SQL): Promise<TotalsFold> {
  const lock = rowsOf<{ ok: boolean }>(await tx.execute(sql`select pg_try_advisory_xact_lock(${TOTALS_FOLD_LOCK_KEY}) as ok`))[0];
  if (!lock?.ok) return emptyFold();
  // Sums are numeric (never overflow) and clamped to BYTES_CAP when stored.
  const res = await tx.execute<{ folded: number; moved: string[] | null; crossed: string[] | null }>(sql`
    with j as (
      update ${trafficJournal} set totals_folded = true
      where ${which}
      returning sub_ids, sub_up, sub_down, seen_at
    ),
    agg as (
      select u.sub, sum(u.up) as up, sum(u.down) as down, min(j.seen_at) as first_seen, max(j.seen_at) as seen
      from j, unnest(j.sub_ids, j.sub_up, j.sub_down) as u(sub, up, down)
      group by u.sub
    ),
    -- Read before the update (one snapshot for the whole statement): whose hold starts now.
    held as (
      select s.id from ${subscribers} s join agg a on a.sub = s.id where s.hold_days is not null and a.up + a.down > 0
    ),
    upd as (
      -- On hold (hold_days set): the first traffic starts the subscription, expiry = first
      -- use + hold_days (holdExpiry in server/usage/limits.ts).
      update ${subscribers} as s set
        traffic_up_bytes = least(s.traffic_up_bytes + a.up, ${CAP})::bigint,
        traffic_down_bytes = least(s.traffic_down_bytes + a.down, ${CAP})::bigint,
        traffic_used_bytes = least(s.traffic_up_bytes + a.up, ${CAP})::bigint + least(s.traffic_down_bytes + a.down, ${CAP})::bigint,
        last_seen_at = greatest(s.last_seen_at, a.seen),
        expires_at = case when s.hold_days is not null and a.up + a.down > 0 then a.first_seen + s.hold_days * interval '1 day' else s.expires_at end,
        hold_days = case when a.up + a.down > 0 then null else s.hold_days end
      from agg as a
      where s.id = a.sub
      -- crossedLimit (server/usage/limits.ts): under the limit before, at or over it now.
      returning s.id, s.cluster_id, (s.traffic_limit_bytes is not null
        and s.traffic_used_bytes >= s.traffic_limit_bytes
        and s.traffic_used_bytes - a.up - a.down < s.traffic_limit_bytes) as crossed
    )
    select (select count(*) from j)::int as folded,
      array(select distinct cluster_id::text from upd) as moved,
      array(select distinct cluster_id::text from upd where crossed) as crossed,
      array(select distinct u.cluster_id::text from upd u join held h on h.id = u.id) as started,
      array(select id::text from upd where crossed) as crossed_ids,
      array(select u.cluster_id::text || ' ' || u.id::text from upd u where u.crossed or u.id in (select id from held)) as changed`);
  const row = rowsOf<{ folded: number; moved: string[] | null; crossed: string[] | null; started: string[] | null; crossed_ids: string[] | null; changed: string[] | null }>(res)[0];
  const changedSubscribers = new Map<string, string[]>();
  for (const pair of row?.changed ?? []) {
    const [clusterId, id] = pair.split(" ") as [string, string];
    changedSubscribers.set(clusterId, [...(changedSubscribers.get(clusterId) ?? []), id]);
  }
  // Subscriber limited alerts, in this transaction (block-alerts.ts).
  await emitSubscriberBlocked(tx, row?.crossed_ids ?? [], Date.now());
  return { folded: Number(row?.folded ?? 0), movedClusters: row?.moved ?? [], crossedClusters: row?.crossed ?? [], startedClusters: row?.started ?? [], changedSubscribers };
}

/**
 * Moves the per-(subscriber, server, day) entries of journal rows whose totals are applied
 * (at most `maxRows`, oldest first) into subscriber_traffic, summed, and deletes those rows, in
 * one statement. Entries of deleted subscribers or servers are dropped. Returns the number of
 * journal rows folded. A row that cannot be folded is quarantined (see foldOneByOne).
 */
export async function foldTrafficDays(db: Db, maxRows = 1000): Promise<number> {
  try {
    return await db.transaction((tx) => foldDaysStep(tx, sql`id in (select id from ${trafficJournal} where totals_folded order by id limit ${maxRows})`));
  } catch (err) {
    if (transient(err)) throw err;
    let folded = 0;
    await foldOneByOne(db, "days", maxRows, async (id) => {
      const n = await db.transaction((tx) => foldDaysStep(tx, sql`id = ${id} and totals_folded`));
      folded += n;
      return n;
    });
    return folded;
  }
}

async function foldDaysStep(tx: DbOrTx, which: SQL): Promise<number> {
  const lock = rowsOf<{ ok: boolean }>(await tx.execute(sql`select pg_try_advisory_xact_lock(${DAYS_FOLD_LOCK_KEY}) as ok`))[0];
  if (!lock?.ok) return 0;
  const res = await tx.execute<{ folded: number }>(sql`
    with j as (
      delete from ${trafficJournal}
      where ${which}
      returning ent_sub, ent_srv, ent_day, ent_up, ent_down
    ),
    agg as (
      select e.sub, e.srv, e.day, least(sum(e.up), ${CAP})::bigint as up, least(sum(e.down), ${CAP})::bigint as down
      from j, unnest(j.ent_sub, j.ent_srv, j.ent_day, j.ent_up, j.ent_down) as e(sub, srv, day, up, down)
      where exists (select 1 from ${subscribers} s where s.id = e.sub) and exists (select 1 from ${servers} v where v.id = e.srv)
      group by e.sub, e.srv, e.day
    ),
    ins as (
      insert into ${subscriberTraffic} (subscriber_id, server_id, day, up_bytes, down_bytes)
      select sub, srv, day, up, down from agg order by sub, srv, day
      on conflict (subscriber_id, server_id, day) do update set
        up_bytes = least(${subscriberTraffic}.up_bytes::numeric + excluded.up_bytes, ${CAP})::bigint,
        down_bytes = least(${subscriberTraffic}.down_bytes::numeric + excluded.down_bytes, ${CAP})::bigint
      returning 1
    )
    select (select count(*) from j)::int as folded, (select count(*) from ins)::int as rows`);
  return Number(rowsOf<{ folded: number }>(res)[0]?.folded ?? 0);
}

/** The database's own words for why a statement failed (drizzle wraps them in "Failed query"). */
function failureReason(err: unknown): string {
  let e = err as { message?: unknown; cause?: unknown } | null;
  let msg = "";
  for (let depth = 0; e && typeof e === "object" && depth < 5; depth++) {
    if (typeof e.message === "string" && e.message) msg = e.message;
    e = e.cause as typeof e;
  }
  return (msg || String(err)).replace(/\s+/g, " ").slice(0, 500);
}

/**
 * After a fold step failed: folds the next `maxRows` journal rows of the stage one at a time.
 * A row that fails alone is split into one row per server (a batch mixes servers, and the
 * honest ones' traffic must go on); a one-server row that still fails is quarantined
 * (traffic_quarantine, with the server and the database's reason) and leaves the journal.
 */
async function foldOneByOne(db: Db, stage: "totals" | "days", maxRows: number, fold: (id: number) => Promise<number>): Promise<void> {
  const ids = (
    await db
      .select({ id: trafficJournal.id })
      .from(trafficJournal)
      .where(eq(trafficJournal.totalsFolded, stage === "days"))
      .orderBy(trafficJournal.id)
      .limit(maxRows)
  ).map((r) => r.id);
  for (let guard = 0; ids.length > 0 && guard < maxRows * 4 + 100; guard++) {
    const id = ids.shift()!;
    try {
      await fold(id);
    } catch (err) {
      if (transient(err)) throw err;
      ids.push(...(await isolateJournalRow(db, id, stage, failureReason(err))));
    }
  }
}

/** Splits a failing journal row per server (returns the new rows' ids) or quarantines it (returns []). */
async function isolateJournalRow(db: Db, id: number, stage: "totals" | "days", reason: string): Promise<number[]> {
  try {
    const split = await db.transaction(async (tx) => {
      const servers = rowsOf<{ n: number }>(await tx.execute(sql`select count(distinct x)::int as n from ${trafficJournal} j, unnest(j.ent_srv) as x where j.id = ${id}`))[0];
      if (!servers || servers.n <= 1) return null;
      const res = await tx.execute<{ id: number }>(sql`
        with r as (select * from ${trafficJournal} where id = ${id} for update),
        e as (select e.* from r, unnest(r.ent_sub, r.ent_srv, r.ent_day, r.ent_up, r.ent_down) as e(sub, srv, day, up, down)),
        s as (select srv, sub, least(sum(up), ${CAP})::bigint as up, least(sum(down), ${CAP})::bigint as down from e group by srv, sub),
        ins as (
          insert into ${trafficJournal} (sub_ids, sub_up, sub_down, seen_at, totals_folded, ent_sub, ent_srv, ent_day, ent_up, ent_down)
          select
            array(select s.sub from s where s.srv = g.srv order by s.sub),
            array(select s.up from s where s.srv = g.srv order by s.sub),
            array(select s.down from s where s.srv = g.srv order by s.sub),
            r.seen_at, r.totals_folded,
            array(select e.sub from e where e.srv = g.srv order by e.sub, e.day),
            array(select e.srv from e where e.srv = g.srv order by e.sub, e.day),
            array(select e.day from e where e.srv = g.srv order by e.sub, e.day),
            array(select e.up from e where e.srv = g.srv order by e.sub, e.day),
            array(select e.down from e where e.srv = g.srv order by e.sub, e.day)
          from r, (select distinct srv from e where srv is not null) g
          returning id
        ),
        del as (delete from ${trafficJournal} where id in (select id from r))
        select id from ins`);
      return rowsOf<{ id: number }>(res).map((r) => Number(r.id));
    });
    if (split) return split;
  } catch (err) {
    if (isDatabaseDown(err)) throw err;
    // Could not even be split: quarantined whole below.
  }
  await db.execute(sql`
    with r as (delete from ${trafficJournal} where id = ${id} returning *),
    one as (select r.id, case when (select count(distinct x) from unnest(r.ent_srv) as x) = 1 then r.ent_srv[1] end as srv from r)
    insert into ${trafficQuarantine} (journal_id, server_id, cluster_id, stage, reason, seen_at, sub_ids, sub_up, sub_down, ent_sub, ent_srv, ent_day, ent_up, ent_down)
    select r.id, v.id, v.cluster_id, ${stage}, ${reason}, r.seen_at, r.sub_ids, r.sub_up, r.sub_down, r.ent_sub, r.ent_srv, r.ent_day, r.ent_up, r.ent_down
    from r join one on one.id = r.id left join ${servers} v on v.id = one.srv`);
  quarantined.inc({ stage });
  logger().warn({ journalId: id, stage, reason }, "a traffic journal row could not be folded: quarantined");
  return [];
}

/**
 * Folds the whole journal: totals, then per-day entries, until nothing is left (tests, shut
 * down). Returns the journal rows whose totals were applied and the clusters concerned.
 */
export async function foldTrafficJournal(db: Db): Promise<TotalsFold & { daysFolded: number }> {
  const out = { ...emptyFold(), daysFolded: 0 };
  for (;;) {
    const t = await foldTrafficTotals(db);
    mergeFold(out, t);
    const d = await foldTrafficDays(db);
    out.daysFolded += d;
    if (t.folded === 0 && d === 0) return out;
  }
}
