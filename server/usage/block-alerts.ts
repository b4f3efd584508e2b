/**
 * Subscriber blocked alerts (subscriber.limited, subscriber.expired): the transition rule and
 * the one place that stores them, in the transaction of the write that may have blocked a
 * subscriber (the traffic fold, a usage reset, an expiry change), or periodically for expiry
 * (checkSubscriberBlocks, run by the alert worker: server/services.ts hands it over).
 */
import { and, eq, inArray, sql } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { subscriberAlertState, subscribers } from "@/db/schema";
import { enqueueAlerts, type NewAlertEvent } from "@/server/alerts/outbox";
import { accessSql, blockReason, type BlockReason } from "./access";

/** Stored last announced block of a subscriber (subscriber_alert_state); null = none. */
export interface SubscriberBlockState {
  kind: BlockReason["kind"];
  /** The expiry announced with an "expired" block (ms), else null. */
  expiresAtMs: number | null;
}

/**
 * The next stored state and the event when a subscriber's block reason (blockReason) is
 * `reason` now. An event when a block starts or changes kind (limited → expired). A block
 * ends when the reason is gone — except that an expired block is lifted only by a changed
 * expiry: a clock that went backwards makes the same expiry look future again, and must not
 * bring a second "expired" when it catches up.
 */
export function subscriberBlockTransition(
  prev: SubscriberBlockState | null,
  reason: BlockReason | null,
  expiresAtMs: number | null,
): { next: SubscriberBlockState | null; event: "subscriber.limited" | "subscriber.expired" | null } {
  if (reason === null) {
    if (prev?.kind === "expired" && prev.expiresAtMs !== null && prev.expiresAtMs === expiresAtMs) return { next: prev, event: null };
    return { next: null, event: null };
  }
  const next: SubscriberBlockState = { kind: reason.kind, expiresAtMs: reason.kind === "expired" ? reason.at.getTime() : null };
  if (prev && prev.kind === next.kind && (next.kind !== "expired" || prev.expiresAtMs === next.expiresAtMs)) return { next: prev, event: null };
  return { next, event: reason.kind === "expired" ? "subscriber.expired" : "subscriber.limited" };
}

/**
 * The one place that turns subscribers' block reasons (limited, expired: blockReason) into
 * events: call it inside the transaction that may have changed them (the traffic fold, a usage
 * reset, an expiry change) with their ids, or with null to check every subscriber that is
 * blocked or was announced blocked (the periodic expiry check). Disabled subscribers are
 * left alone. Returns the events stored.
 */
export async function emitSubscriberBlocked(tx: DbOrTx, subscriberIds: readonly string[] | null, nowMs: number): Promise<NewAlertEvent[]> {
  if (subscriberIds !== null && subscriberIds.length === 0) return [];
  const now = new Date(nowMs);
  const s = subscribers;
  const a = subscriberAlertState;
  const { expired, overLimit: limited } = accessSql(now);
  // The full check reads only subscribers whose stored state may differ from now: a new or
  // changed block, or a stored block that looks lifted (at 100,000 subscribers with many long
  // expired, reading every blocked one each time would be most of the table).
  const candidates =
    subscriberIds !== null
      ? inArray(s.id, [...subscriberIds])
      : sql`((${expired} and (${a.kind} is distinct from 'expired' or ${a.expiresAt} is distinct from ${s.expiresAt}))
          or (not ${expired} and ${limited} and ${a.kind} is distinct from 'limited')
          or (${a.subscriberId} is not null and not ${expired} and not ${limited}))`;
  const rows = await tx
    .select({
      id: s.id,
      name: s.name,
      clusterId: s.clusterId,
      expiresAt: s.expiresAt,
      trafficLimitBytes: s.trafficLimitBytes,
      trafficUsedBytes: s.trafficUsedBytes,
      stateKind: subscriberAlertState.kind,
      stateExpiresAt: subscriberAlertState.expiresAt,
    })
    .from(s)
    .leftJoin(subscriberAlertState, eq(subscriberAlertState.subscriberId, s.id))
    .where(and(eq(s.enabled, true), candidates))
    .orderBy(s.id);
  const events: NewAlertEvent[] = [];
  const cleared: string[] = [];
  for (const r of rows) {
    const prev = r.stateKind ? { kind: r.stateKind as "limited" | "expired", expiresAtMs: r.stateExpiresAt ? r.stateExpiresAt.getTime() : null } : null;
    const reason = blockReason(r, nowMs);
    const { next, event } = subscriberBlockTransition(prev, reason, r.expiresAt ? r.expiresAt.getTime() : null);
    if (next === null) {
      if (prev) cleared.push(r.id);
      continue;
    }
    if (!event) continue;
    // Claims the announcement: a concurrent check that stored the same block first wins, and
    // this one returns no row (so each block is announced once across instances).
    const claimed = await tx
      .insert(subscriberAlertState)
      .values({ subscriberId: r.id, kind: next.kind, expiresAt: next.expiresAtMs === null ? null : new Date(next.expiresAtMs), changedAt: now })
      .onConflictDoUpdate({
        target: subscriberAlertState.subscriberId,
        set: { kind: sql`excluded.kind`, expiresAt: sql`excluded.expires_at`, changedAt: sql`excluded.changed_at` },
        setWhere: sql`(${subscriberAlertState.kind}, ${subscriberAlertState.expiresAt}) is distinct from (excluded.kind, excluded.expires_at)`,
      })
      .returning({ id: subscriberAlertState.subscriberId });
    if (claimed.length === 0) continue;
    const subscriber = { id: r.id, name: r.name };
    events.push(
      event === "subscriber.expired"
        ? { type: event, clusterId: r.clusterId, data: { subscriber, expiresAt: new Date(next.expiresAtMs!).toISOString() } }
        : { type: event, clusterId: r.clusterId, data: { subscriber, usedBytes: r.trafficUsedBytes, limitBytes: r.trafficLimitBytes } },
    );
  }
  if (cleared.length > 0) await tx.delete(subscriberAlertState).where(inArray(subscriberAlertState.subscriberId, cleared));
  await enqueueAlerts(tx, events, nowMs);
  return events;
}

/** The periodic check (expiry has no write that could call emitSubscriberBlocked), or of the subscribers an edit named. */
export async function checkSubscriberBlocks(db: Db, nowMs: number, subscriberIds: readonly string[] | null = null): Promise<NewAlertEvent[]> {
  return db.transaction((tx) => emitSubscriberBlocked(tx, subscriberIds, nowMs));
}
