/**
 * Slows down password guessing, in the database so every instance sees the same counters.
 *
 * An attempt first *reserves* a failure slot, atomically (row locks), and only then is the
 * password checked; success gives the slot back. So parallel attempts queue on the same
 * counter as sequential ones, and no number of simultaneous requests gets more guesses.
 *
 * Counters are keyed so that a valid credential is never refused because of failures that
 * are not its own (issue 21, point 9):
 * - a login from a browser with the operator's device cookie (server/auth/device.ts): on
 *   that device alone. Nobody else's guesses, from any address, hold it back.
 * - a login from any other client: per username, shared by all such clients (that is what
 *   stops guessing one account from many addresses), and per address.
 *   Per username: after FREE_ATTEMPTS.user failures, each further failure doubles the wait
 *   (2 s … 15 min); a success clears it. Per address: looser (NAT and proxies put many
 *   operators on one address), and it only holds back usernames that have failed
 *   themselves, so somebody failing with many usernames from a shared address cannot lock
 *   out a colleague behind the same address who types their password right.
 * - a logged-in operator's password check (changing it): on their session.
 * - an API token's id from one address (server/accounts/api-tokens.ts): wrong secrets,
 *   expired and revoked tokens; unknown and malformed tokens share one counter per
 *   address. A valid token is checked before its counter and always accepted.
 * First-run setup codes are throttled per address.
 */
import { eq, inArray, lt, or, sql } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { loginThrottle } from "@/db/schema";

/** Failures allowed before slowing down. */
export const FREE_ATTEMPTS = { user: 5, device: 5, ip: 30, setup: 5, token: 10 } as const;
export type ThrottleKind = keyof typeof FREE_ATTEMPTS;
const BASE_DELAY_MS = 2_000;
const MAX_DELAY_MS = 15 * 60_000;
/** Failures older than this are forgotten. */
const FORGET_AFTER_MS = 60 * 60_000;

/** How long to block after `failures` consecutive failures (0 = not blocked). */
export function blockDurationMs(failures: number, free: number): number {
  if (failures < free) return 0;
  return Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** Math.min(30, failures - free));
}

export type Attempt =
  /** device: the id of the client's device cookie for this username (or its session), if any. */
  | { kind: "login"; username: string; address: string; device?: string | null }
  | { kind: "setup"; address: string }
  /** tokenId: the id of an existing token; null for unknown and malformed ones. */
  | { kind: "token"; tokenId: string | null; address: string };

export type Reservation =
  | { ok: true; /** Gives the slot back: call after a correct password. */ release(): Promise<void> }
  | { ok: false; /** Seconds to wait. */ retryAfter: number };

type Row = typeof loginThrottle.$inferSelect;
interface Key {
  kind: ThrottleKind;
  key: string;
}

// "|" separates a credential from where it is used: usernames (letters, digits, . _ @ -) and
// token ids (hex) never contain it.
const devicePrefix = (username: string) => `device:${username.toLowerCase()}|`;

function keysOf(a: Attempt): Key[] {
  if (a.kind === "setup") return [{ kind: "setup", key: `setup:${a.address}` }];
  if (a.kind === "token") return [{ kind: "token", key: `token:${a.tokenId ?? "?"}|${a.address}` }];
  if (a.device) return [{ kind: "device", key: `${devicePrefix(a.username)}${a.device}` }];
  return [
    { kind: "user", key: `user:${a.username.toLowerCase()}` },
    { kind: "ip", key: `ip:${a.address}` },
  ];
}

const isStale = (row: Row, now: Date) => now.getTime() - row.lastFailureAt.getTime() > FORGET_AFTER_MS;
const failuresOf = (row: Row | undefined, now: Date) => (!row || isStale(row, now) ? 0 : row.failures);
const blockedFor = (row: Row | undefined, now: Date) =>
  row?.blockedUntil && !isStale(row, now) && row.blockedUntil > now ? Math.ceil((row.blockedUntil.getTime() - now.getTime()) / 1000) : 0;

/** Deletes counters nobody has failed on for an hour (they count as zero anyway). */
export async function pruneThrottle(db: DbOrTx, now = new Date()): Promise<void> {
  await db.delete(loginThrottle).where(lt(loginThrottle.lastFailureAt, new Date(now.getTime() - FORGET_AFTER_MS)));
}

// Spraying random usernames makes a row per name: prune now and then, not on every attempt.
const PRUNE_EVERY_MS = 5 * 60_000;
let lastPrune = 0;

/** Takes a failure slot for this attempt, or says how long to wait. */
export async function reserveAttempt(db: Db, attempt: Attempt, now = new Date()): Promise<Reservation> {
  if (Date.now() - lastPrune > PRUNE_EVERY_MS) {
    lastPrune = Date.now();
    await pruneThrottle(db, now);
  }
  const keys = keysOf(attempt);
  const wait = await db.transaction(async (tx) => {
    // Rows are created and locked in key order, so two attempts never wait for each other's second row.
    const ordered = keys.map((k) => k.key).sort();
    await tx
      .insert(loginThrottle)
      .values(ordered.map((key) => ({ key, failures: 0, lastFailureAt: now })))
      .onConflictDoNothing();
    const rows = await tx
      .select()
      .from(loginThrottle)
      .where(inArray(loginThrottle.key, ordered))
      .orderBy(loginThrottle.key)
      .for("update");
    const byKey = new Map(rows.map((r) => [r.key, r]));
    const user = keys.find((k) => k.kind === "user");
    const userClean = user ? failuresOf(byKey.get(user.key), now) === 0 : false;
    let wait = 0;
    for (const k of keys) {
      // The address limit does not hold back a username with no recent failure of its own.
      if (k.kind === "ip" && userClean) continue;
      wait = Math.max(wait, blockedFor(byKey.get(k.key), now));
    }
    if (wait > 0) return wait;
    for (const k of keys) {
      const failures = failuresOf(byKey.get(k.key), now) + 1;
      const block = blockDurationMs(failures, FREE_ATTEMPTS[k.kind]);
      await tx
        .update(loginThrottle)
        .set({ failures, lastFailureAt: now, blockedUntil: block ? new Date(now.getTime() + block) : null })
        .where(eq(loginThrottle.key, k.key));
    }
    return 0;
  });
  if (wait > 0) return { ok: false, retryAfter: wait };
  return { ok: true, release: () => release(db, keys) };
}

/**
 * Seconds this attempt must wait, without taking a slot: for wrong API tokens, so one that
 * is already held back costs a read, not a transaction. Parallel wrong tokens may each be
 * checked before the first failure is counted: harmless for a 256-bit secret, where the
 * throttle limits the cost of hammering, not the odds of guessing.
 */
export async function blockedSeconds(db: DbOrTx, attempt: Attempt, now = new Date()): Promise<number> {
  const keys = keysOf(attempt).map((k) => k.key);
  const rows = await db.select().from(loginThrottle).where(inArray(loginThrottle.key, keys));
  return Math.max(0, ...rows.map((r) => blockedFor(r, now)));
}

/**
 * A valid credential's success: forgets its own failures (an API token from this address),
 * if it has any. One read when it has none, as valid tokens are checked on every request.
 */
export async function clearFailures(db: DbOrTx, attempt: Attempt): Promise<void> {
  const keys = keysOf(attempt)
    .filter((k) => k.kind !== "ip")
    .map((k) => k.key);
  const rows = await db.select({ key: loginThrottle.key }).from(loginThrottle).where(inArray(loginThrottle.key, keys));
  if (rows.length > 0) await db.delete(loginThrottle).where(inArray(loginThrottle.key, rows.map((r) => r.key)));
}

/** A success forgets the username's (and the setup's) failures, and returns the address's slot. */
async function release(db: Db, keys: Key[]): Promise<void> {
  await db.transaction(async (tx) => {
    // In key order, as reserveAttempt locks them: in the keys' own order (the username's row,
    // then the address's) a release and a concurrent reservation deadlocked on PostgreSQL.
    for (const k of [...keys].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))) {
      if (k.kind !== "ip") {
        await tx.delete(loginThrottle).where(eq(loginThrottle.key, k.key));
        continue;
      }
      const [row] = await tx.select().from(loginThrottle).where(eq(loginThrottle.key, k.key)).for("update");
      if (!row) continue;
      const failures = Math.max(0, row.failures - 1);
      await tx
        .update(loginThrottle)
        .set({ failures, blockedUntil: failures < FREE_ATTEMPTS.ip ? null : row.blockedUntil })
        .where(eq(loginThrottle.key, k.key));
    }
  });
}

/** Forgets a username's failures, its devices' included (an owner reset its password). */
export async function clearUserFailures(db: DbOrTx, username: string): Promise<void> {
  await db.delete(loginThrottle).where(or(eq(loginThrottle.key, `user:${username.toLowerCase()}`), sql`starts_with(${loginThrottle.key}, ${devicePrefix(username)})`));
}
