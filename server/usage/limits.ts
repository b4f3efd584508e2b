/**
 * Subscribers' traffic periods: when usage resets (daily, weekly, monthly, in UTC), what a
 * reset does (the finished period is kept in subscriber_usage_periods, the counters go back to
 * 0, the subscriber is back in the agents' configs), and "on hold until first connection".
 *
 * The rules on dates are pure; resetUsage and runDueResets apply them inside a transaction and
 * return the clusters whose configs changed (the caller publishes "subscribers" for them).
 */
import { and, asc, desc, eq, inArray, isNotNull, lte, min } from "drizzle-orm";
import type { DbOrTx } from "@/db/client";
import { subscriberUsagePeriods, subscribers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import type { SessionOperator } from "@/server/auth/sessions";

export const RESET_STRATEGIES = ["never", "daily", "weekly", "monthly"] as const;
export type ResetStrategy = (typeof RESET_STRATEGIES)[number];
export type UsageResetReason = "schedule" | "manual" | "bulk";

const DAY_MS = 86_400_000;

const startOfUtcDay = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;

/** Days in a UTC month (month 0–11), leap years included. */
export function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}

/**
 * 00:00 UTC of the month's reset day: the anchor day, or the month's last day when the month
 * is shorter (day 31 resets on 30 Apr and on 28 or 29 Feb, and on 31 Mar again: the anchor
 * does not drift).
 */
export function monthlyResetIn(year: number, month: number, anchorDay: number): number {
  return Date.UTC(year, month, Math.min(anchorDay, daysInMonth(year, month)));
}

/** ISO weekday of a UTC instant: 1 = Monday … 7 = Sunday. */
export function isoWeekday(ms: number): number {
  return ((new Date(ms).getUTCDay() + 6) % 7) + 1;
}

/**
 * The first reset strictly after `fromMs`: daily at 00:00 UTC, weekly at 00:00 UTC of ISO
 * weekday `day` (1 = Monday), monthly at 00:00 UTC of day `day` (see monthlyResetIn); null for
 * `never`. UTC throughout, so daylight saving time plays no part.
 */
export function nextResetAfter(strategy: ResetStrategy, day: number | null, fromMs: number): Date | null {
  switch (strategy) {
    case "never":
      return null;
    case "daily":
      return new Date(startOfUtcDay(fromMs) + DAY_MS);
    case "weekly": {
      const anchor = day ?? 1;
      const today = startOfUtcDay(fromMs);
      let t = today + ((anchor - isoWeekday(today) + 7) % 7) * DAY_MS;
      if (t <= fromMs) t += 7 * DAY_MS;
      return new Date(t);
    }
    case "monthly": {
      const anchor = day ?? 1;
      const d = new Date(fromMs);
      let year = d.getUTCFullYear();
      let month = d.getUTCMonth();
      let t = monthlyResetIn(year, month, anchor);
      if (t <= fromMs) {
        month += 1;
        if (month === 12) {
          month = 0;
          year += 1;
        }
        t = monthlyResetIn(year, month, anchor);
      }
      return new Date(t);
    }
  }
}

/**
 * After a reset at `boundaryMs` (the scheduled instant, or now for a manual one), the next one.
 * Counted from the later of the boundary and now: a job that ran late (instance down for days)
 * resets once, not once per missed period, and a clock that went backwards never brings the
 * same boundary back.
 */
export function resetAfter(strategy: ResetStrategy, day: number | null, boundaryMs: number, nowMs: number): Date | null {
  return nextResetAfter(strategy, day, Math.max(boundaryMs, nowMs));
}

/** Whether a scheduled reset is due: only once its instant has come (a clock behind waits). */
export function resetDue(nextResetAt: Date | null, nowMs: number): boolean {
  return nextResetAt !== null && nextResetAt.getTime() <= nowMs;
}

/** The expiry of a subscriber on hold whose first traffic came at `firstUseMs`. */
export function holdExpiry(firstUseMs: number, holdDays: number): Date {
  return new Date(firstUseMs + holdDays * DAY_MS);
}

/**
 * Whether adding traffic took a subscriber from under the limit to at or over it: the fold
 * publishes a config change only then (journal.ts, foldTrafficTotals, applies
 * this same rule in SQL), not on every report of someone already over it.
 */
export function crossedLimit(limitBytes: number | null, usedBefore: number, usedAfter: number): boolean {
  return limitBytes !== null && usedBefore < limitBytes && usedAfter >= limitBytes;
}

/**
 * The columns a subscriber's limit settings set. The next reset counts from now when the
 * schedule is new or changed; an unchanged one keeps its next reset (even one due but not yet run).
 */
export function limitColumns(
  input: { trafficResetStrategy: ResetStrategy; trafficResetDay: number | null; holdDays: number | null },
  nowMs: number,
  before?: { trafficResetStrategy: ResetStrategy; trafficResetDay: number | null; nextResetAt: Date | null },
) {
  const day = input.trafficResetStrategy === "weekly" || input.trafficResetStrategy === "monthly" ? input.trafficResetDay : null;
  const unchanged = before !== undefined && before.trafficResetStrategy === input.trafficResetStrategy && before.trafficResetDay === day;
  return {
    trafficResetStrategy: input.trafficResetStrategy,
    trafficResetDay: day,
    nextResetAt: unchanged ? before.nextResetAt : nextResetAfter(input.trafficResetStrategy, day, nowMs),
    holdDays: input.holdDays,
  };
}

/** An edit must not move an expiry into the past; keeping one already past is fine. */
export function expiryMovedIntoPast(before: Date | null, after: Date | null, nowMs: number): boolean {
  if (after === null || after.getTime() > nowMs) return false;
  return before === null || before.getTime() !== after.getTime();
}

// ---------------------------------------------------------------------------------------------
// Resets in the database
// ---------------------------------------------------------------------------------------------

type Operator = Pick<SessionOperator, "operatorId" | "username"> | null;

export interface ResetOutcome {
  /** Subscribers whose usage went back to 0. */
  reset: number;
  /** Clusters whose agents' configs may change: publish "subscribers" for each. */
  clusterIds: string[];
}

const CHUNK = 5000;
const chunks = <T>(a: readonly T[]): T[][] => Array.from({ length: Math.ceil(a.length / CHUNK) }, (_, i) => a.slice(i * CHUNK, (i + 1) * CHUNK));

const REASON_WORDS: Record<UsageResetReason, string> = { schedule: "scheduled reset", manual: "reset by hand", bulk: "bulk reset" };

type Locked = Pick<typeof subscribers.$inferSelect, "id" | "clusterId" | "name" | "trafficUpBytes" | "trafficDownBytes" | "usagePeriodStart" | "trafficResetStrategy" | "trafficResetDay" | "nextResetAt">;

const lockedColumns = {
  id: subscribers.id,
  clusterId: subscribers.clusterId,
  name: subscribers.name,
  trafficUpBytes: subscribers.trafficUpBytes,
  trafficDownBytes: subscribers.trafficDownBytes,
  usagePeriodStart: subscribers.usagePeriodStart,
  trafficResetStrategy: subscribers.trafficResetStrategy,
  trafficResetDay: subscribers.trafficResetDay,
  nextResetAt: subscribers.nextResetAt,
};

/**
 * Ends the current period of each locked row at its boundary: stores it, zeroes the counters,
 * starts the next period there and sets the next scheduled reset. Rows sharing a boundary and
 * a next reset (at a month's start, nearly all of them) are updated by one statement.
 */
async function endPeriods(tx: DbOrTx, rows: Array<{ row: Locked; boundaryMs: number }>, reason: UsageResetReason, nowMs: number): Promise<void> {
  const periods = rows.map(({ row, boundaryMs }) => ({
    subscriberId: row.id,
    // A clock that went backwards must not give a period that ends before it starts.
    periodStart: new Date(Math.min(row.usagePeriodStart.getTime(), boundaryMs)),
    periodEnd: new Date(boundaryMs),
    upBytes: row.trafficUpBytes,
    downBytes: row.trafficDownBytes,
    reason,
  }));
  for (const part of chunks(periods)) await tx.insert(subscriberUsagePeriods).values(part);
  const groups = new Map<string, { boundary: Date; next: Date | null; ids: string[] }>();
  for (const { row, boundaryMs } of rows) {
    const next = resetAfter(row.trafficResetStrategy, row.trafficResetDay, boundaryMs, nowMs);
    const key = `${boundaryMs} ${next?.getTime() ?? "-"}`;
    const g = groups.get(key) ?? { boundary: new Date(boundaryMs), next, ids: [] };
    g.ids.push(row.id);
    groups.set(key, g);
  }
  for (const g of groups.values()) {
    for (const ids of chunks(g.ids)) {
      await tx
        .update(subscribers)
        .set({ trafficUpBytes: 0, trafficDownBytes: 0, trafficUsedBytes: 0, usagePeriodStart: g.boundary, nextResetAt: g.next, updatedAt: new Date(nowMs) })
        .where(inArray(subscribers.id, ids));
    }
  }
}

async function auditResets(tx: DbOrTx, rows: Locked[], reason: UsageResetReason, operator: Operator): Promise<void> {
  if (rows.length === 1) {
    const r = rows[0]!;
    await recordAudit(tx, operator, {
      clusterId: r.clusterId,
      action: "subscriber.reset-usage",
      entityType: "subscriber",
      entityId: r.id,
      summary: `Reset the usage of ${r.name} (${REASON_WORDS[reason]})`,
      before: { upBytes: r.trafficUpBytes, downBytes: r.trafficDownBytes, periodStart: r.usagePeriodStart.toISOString() },
      after: { upBytes: 0, downBytes: 0 },
    });
    return;
  }
  // Many at once (a schedule at a month's start, a bulk action): one entry per cluster.
  const byCluster = new Map<string, Locked[]>();
  for (const r of rows) byCluster.set(r.clusterId, [...(byCluster.get(r.clusterId) ?? []), r]);
  for (const [clusterId, list] of byCluster) {
    await recordAudit(tx, operator, {
      clusterId,
      action: "subscriber.reset-usage",
      entityType: "subscriber",
      summary: `Reset the usage of ${list.length} subscribers (${REASON_WORDS[reason]})`,
      after: { count: list.length, subscribers: list.slice(0, 100).map((r) => r.name) },
    });
  }
}

/**
 * Resets the usage of the given subscribers now (a manual or bulk reset): each one's finished
 * period is stored, used/up/down go to 0, their schedule carries on. Audited. Ids of
 * subscribers that no longer exist are skipped. Run it inside a transaction.
 */
export async function resetUsage(
  tx: DbOrTx,
  subscriberIds: readonly string[],
  reason: UsageResetReason,
  opts: { operator?: Operator; nowMs?: number; /** false when the caller writes its own audit entry (a bulk action) */ audit?: boolean } = {},
): Promise<ResetOutcome> {
  const nowMs = opts.nowMs ?? Date.now();
  const rows: Locked[] = [];
  for (const ids of chunks([...new Set(subscriberIds)])) {
    rows.push(...(await tx.select(lockedColumns).from(subscribers).where(inArray(subscribers.id, ids)).orderBy(asc(subscribers.id)).for("update")));
  }
  if (rows.length === 0) return { reset: 0, clusterIds: [] };
  await endPeriods(
    tx,
    rows.map((row) => ({ row, boundaryMs: nowMs })),
    reason,
    nowMs,
  );
  if (opts.audit !== false) await auditResets(tx, rows, reason, opts.operator ?? null);
  return { reset: rows.length, clusterIds: [...new Set(rows.map((r) => r.clusterId))] };
}

/**
 * Runs the scheduled resets that are due at `nowMs` (at most `max`, oldest first): each
 * period ends at its scheduled instant, so periods line up with the schedule even when the
 * job runs late. Rows another instance is resetting are skipped, and a row is due only once
 * (its next_reset_at moves forward in the same transaction). Audited as the system.
 */
export async function runDueResets(db: DbOrTx, nowMs: number, max = 1000): Promise<ResetOutcome> {
  return db.transaction(async (tx) => {
    const rows = await tx
      .select(lockedColumns)
      .from(subscribers)
      .where(and(isNotNull(subscribers.nextResetAt), lte(subscribers.nextResetAt, new Date(nowMs))))
      .orderBy(asc(subscribers.nextResetAt), asc(subscribers.id))
      .limit(max)
      .for("update", { skipLocked: true });
    if (rows.length === 0) return { reset: 0, clusterIds: [] };
    await endPeriods(
      tx,
      rows.map((row) => ({ row, boundaryMs: row.nextResetAt!.getTime() })),
      "schedule",
      nowMs,
    );
    await auditResets(tx, rows, "schedule", null);
    return { reset: rows.length, clusterIds: [...new Set(rows.map((r) => r.clusterId))] };
  });
}

/** The soonest scheduled reset of any subscriber (an index lookup), or null. */
export async function nextScheduledReset(db: DbOrTx): Promise<Date | null> {
  const [row] = await db.select({ at: min(subscribers.nextResetAt) }).from(subscribers).where(isNotNull(subscribers.nextResetAt));
  return row?.at ? new Date(row.at) : null;
}

/** A subscriber's finished periods, newest first. */
export async function usagePeriods(db: DbOrTx, subscriberId: string, limit = 24) {
  return db
    .select({
      periodStart: subscriberUsagePeriods.periodStart,
      periodEnd: subscriberUsagePeriods.periodEnd,
      upBytes: subscriberUsagePeriods.upBytes,
      downBytes: subscriberUsagePeriods.downBytes,
      reason: subscriberUsagePeriods.reason,
    })
    .from(subscriberUsagePeriods)
    .where(eq(subscriberUsagePeriods.subscriberId, subscriberId))
    .orderBy(desc(subscriberUsagePeriods.periodEnd), desc(subscriberUsagePeriods.id))
    .limit(limit);
}
