/**
 * Slows down password guessing: after a few failures for one key (username, client address)
 * further attempts wait, doubling up to 15 minutes. Pure policy + a small stored state, so
 * every instance on one database sees the same counters.
 */
import { eq } from "drizzle-orm";
import type { Db } from "@/db/client";
import { loginThrottle } from "@/db/schema";

/** Failures allowed before slowing down: per username, and (looser, NAT is common) per address. */
export const FREE_ATTEMPTS = { user: 5, ip: 30 } as const;
export type ThrottleKey = { kind: keyof typeof FREE_ATTEMPTS; value: string };
const BASE_DELAY_MS = 2_000;
const MAX_DELAY_MS = 15 * 60_000;
/** Failures older than this are forgotten. */
const FORGET_AFTER_MS = 60 * 60_000;

/** How long to block after `failures` consecutive failures (0 = not blocked). */
export function blockDurationMs(failures: number, free: number): number {
  if (failures < free) return 0;
  return Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** Math.min(30, failures - free));
}

const keyOf = (k: ThrottleKey) => `${k.kind}:${k.value}`;

/** Seconds to wait before trying again, or 0 when allowed. */
export async function retryAfterSeconds(db: Db, keys: ThrottleKey[], now = new Date()): Promise<number> {
  let wait = 0;
  for (const k of keys) {
    const [row] = await db.select().from(loginThrottle).where(eq(loginThrottle.key, keyOf(k)));
    if (row?.blockedUntil && row.blockedUntil > now) {
      wait = Math.max(wait, Math.ceil((row.blockedUntil.getTime() - now.getTime()) / 1000));
    }
  }
  return wait;
}

export async function recordFailure(db: Db, keys: ThrottleKey[], now = new Date()): Promise<void> {
  for (const k of keys) {
    const key = keyOf(k);
    const [row] = await db.select().from(loginThrottle).where(eq(loginThrottle.key, key));
    const stale = !row || now.getTime() - row.lastFailureAt.getTime() > FORGET_AFTER_MS;
    const failures = stale ? 1 : row.failures + 1;
    const block = blockDurationMs(failures, FREE_ATTEMPTS[k.kind]);
    const values = { key, failures, lastFailureAt: now, blockedUntil: block ? new Date(now.getTime() + block) : null };
    await db.insert(loginThrottle).values(values).onConflictDoUpdate({ target: loginThrottle.key, set: values });
  }
}

export async function clearFailures(db: Db, keys: ThrottleKey[]): Promise<void> {
  for (const k of keys) await db.delete(loginThrottle).where(eq(loginThrottle.key, keyOf(k)));
}
