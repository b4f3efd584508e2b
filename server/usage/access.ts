/**
 * Whether a subscriber may connect now, in one place: the agents' configs leave out whoever
 * may not (server/dataplane/config.ts), and /sub tells them why (server/subscription).
 */

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

/** The reason, or null when the subscriber may connect (enabled or not: see mayConnect). */
export function blockReason(s: Omit<SubscriberAccess, "enabled">, nowMs: number): BlockReason | null {
  // Expiry first: a renewed limit would not help an expired subscription.
  if (s.expiresAt !== null && s.expiresAt.getTime() <= nowMs) return { kind: "expired", at: s.expiresAt };
  if (s.trafficLimitBytes !== null && s.trafficUsedBytes >= s.trafficLimitBytes) return { kind: "limited", usedBytes: s.trafficUsedBytes, limitBytes: s.trafficLimitBytes, renewsAt: s.nextResetAt ?? null };
  return null;
}

/** Who may connect now: enabled, not expired, under the traffic limit. */
export function mayConnect(s: SubscriberAccess, nowMs: number): boolean {
  return s.enabled && blockReason(s, nowMs) === null;
}
