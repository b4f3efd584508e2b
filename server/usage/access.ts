/**
 * Whether a subscriber may connect now, in one place, in TypeScript (blockReason, mayConnect)
 * and in SQL (accessSql) side by side: the agents' configs leave out whoever may not
 * (server/dataplane/config.ts), /sub tells them why (server/subscription), the subscribers
 * list filters by it (server/accounts/subscriber-list.ts), routes count their users by it
 * (route-users.ts) and block alerts look for it (block-alerts.ts). access.test.ts runs both
 * over every combination and asserts they agree row by row.
 */
import { sql, type SQL } from "drizzle-orm";
import { subscribers } from "@/db/schema";

/** Why a subscriber who exists and is enabled may not connect now. */
export type BlockReason = { kind: "expired"; at: Date } | { kind: "limited"; usedBytes: number; limitBytes: number; renewsAt: Date | null };

export interface SubscriberAccess {
  enabled: boolean;
  expiresAt: Date | null;
  trafficLimitBytes: number | null;
  trafficUsedBytes: number;
  /** The next scheduled usage reset (server/usage/limits.ts), if any. */
  nextResetAt?: Date | null;
}

/** Expired: the expiry is set and not after `nowMs` (accessSql's `expired`). */
export function isExpired(s: Pick<SubscriberAccess, "expiresAt">, nowMs: number): boolean {
  return s.expiresAt !== null && s.expiresAt.getTime() <= nowMs;
}

/** Over the limit: a limit is set and the used traffic reached it (accessSql's `overLimit`). */
export function isOverLimit(s: Pick<SubscriberAccess, "trafficLimitBytes" | "trafficUsedBytes">): boolean {
  return s.trafficLimitBytes !== null && s.trafficUsedBytes >= s.trafficLimitBytes;
}

/** The reason, or null when the subscriber may connect (enabled or not: see mayConnect). */
export function blockReason(s: Omit<SubscriberAccess, "enabled">, nowMs: number): BlockReason | null {
  // Expiry first: a renewed limit would not help an expired subscription.
  if (isExpired(s, nowMs)) return { kind: "expired", at: s.expiresAt! };
  if (isOverLimit(s)) return { kind: "limited", usedBytes: s.trafficUsedBytes, limitBytes: s.trafficLimitBytes!, renewsAt: s.nextResetAt ?? null };
  return null;
}

/** Who may connect now: enabled, not expired, under the traffic limit. */
export function mayConnect(s: SubscriberAccess, nowMs: number): boolean {
  return s.enabled && blockReason(s, nowMs) === null;
}

/**
 * The same rule as conditions on the subscribers table at `now`, never NULL: `expired` and
 * `overLimit` are blockReason's two reasons (blockReason names expiry first when both hold),
 * `mayConnect` is mayConnect.
 */
export function accessSql(now: Date): { expired: SQL; overLimit: SQL; mayConnect: SQL } {
  const expired = sql`(${subscribers.expiresAt} is not null and ${subscribers.expiresAt} <= ${now.toISOString()}::timestamptz)`;
  const overLimit = sql`(${subscribers.trafficLimitBytes} is not null and ${subscribers.trafficUsedBytes} >= ${subscribers.trafficLimitBytes})`;
  return { expired, overLimit, mayConnect: sql`(${subscribers.enabled} and not ${expired} and not ${overLimit})` };
}
