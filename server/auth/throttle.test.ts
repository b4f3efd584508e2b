import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blockDurationMs, blockedSeconds, clearFailures, clearUserFailures, pruneThrottle, reserveAttempt, FREE_ATTEMPTS } from "./throttle";
import { loginThrottle } from "@/db/schema";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";

describe("blockDurationMs", () => {
  it("lets the free attempts through, then doubles up to 15 minutes", () => {
    expect(blockDurationMs(4, 5)).toBe(0);
    expect(blockDurationMs(5, 5)).toBe(2000);
    expect(blockDurationMs(6, 5)).toBe(4000);
    expect(blockDurationMs(1000, 5)).toBe(15 * 60_000);
  });
});

describe.each(testDbKinds())("stored throttle on %s", (kind) => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await openTestDatabase(kind);
  });
  afterAll(async () => t?.dispose());

  const login = (username: string, address = "10.0.0.1") => ({ kind: "login" as const, username, address });

  it("blocks a username after its free attempts, with backoff, and forgets on success", async () => {
    const now = new Date("2026-01-01T00:00:00Z");
    for (let i = 0; i < FREE_ATTEMPTS.user; i++) expect((await reserveAttempt(t.db, login("mallory"), now)).ok).toBe(true);
    expect(await reserveAttempt(t.db, login("mallory"), now)).toEqual({ ok: false, retryAfter: 2 });
    // Case does not make a new username.
    expect((await reserveAttempt(t.db, login("MALLORY"), now)).ok).toBe(false);
    const later = new Date(now.getTime() + 3000);
    const r = await reserveAttempt(t.db, login("mallory"), later);
    expect(r.ok).toBe(true);
    // The sixth failure doubles the wait.
    expect(await reserveAttempt(t.db, login("mallory"), later)).toEqual({ ok: false, retryAfter: 4 });
    if (r.ok) await r.release();
    expect((await reserveAttempt(t.db, login("mallory"), later)).ok).toBe(true);
  });

  it("forgets failures after an hour", async () => {
    const then = new Date("2026-01-01T00:00:00Z");
    for (let i = 0; i < FREE_ATTEMPTS.user; i++) await reserveAttempt(t.db, login("old"), then);
    expect((await reserveAttempt(t.db, login("old"), then)).ok).toBe(false);
    expect((await reserveAttempt(t.db, login("old"), new Date(then.getTime() + 2 * 3600_000))).ok).toBe(true);
  });

  it("takes the slot before the check: 60 parallel attempts get no more than the free ones", async () => {
    const now = new Date("2026-02-01T00:00:00Z");
    const results = await Promise.all(Array.from({ length: 60 }, () => reserveAttempt(t.db, login("parallel", "10.9.9.9"), now)));
    expect(results.filter((r) => r.ok)).toHaveLength(FREE_ATTEMPTS.user);
  });

  it("an address full of failures does not lock out a colleague who types their password right", async () => {
    const now = new Date("2026-03-01T00:00:00Z");
    const shared = "192.0.2.10";
    for (let i = 0; i < FREE_ATTEMPTS.ip + 5; i++) await reserveAttempt(t.db, login(`nobody-${i}`, shared), now);
    // A username that has failed before is held back by the address…
    for (let i = 0; i < 2; i++) await reserveAttempt(t.db, login("sloppy", "198.51.100.1"), now);
    expect((await reserveAttempt(t.db, login("sloppy", shared), now)).ok).toBe(false);
    // …one without failures of its own is not.
    const colleague = await reserveAttempt(t.db, login("colleague", shared), now);
    expect(colleague.ok).toBe(true);
  });

  it("guesses from anywhere never hold back the operator's own device; a success clears only its own counter (issue 21, point 9)", async () => {
    const now = new Date("2026-06-01T00:00:00Z");
    // Guesses from many addresses, none with the operator's device cookie.
    for (let i = 0; i < FREE_ATTEMPTS.user + 3; i++) await reserveAttempt(t.db, login("boss", `203.0.113.${i}`), now);
    expect((await reserveAttempt(t.db, login("boss", "203.0.113.99"), now)).ok).toBe(false);
    // The operator, from a browser they logged in with before, even behind the guesser's address.
    const device = { ...login("boss", "203.0.113.1"), device: "their-laptop" };
    const own = await reserveAttempt(t.db, device, now);
    expect(own.ok).toBe(true);
    if (own.ok) await own.release();
    // Their success does not lift the guessers' backoff.
    expect((await reserveAttempt(t.db, login("boss", "203.0.113.1"), now)).ok).toBe(false);
    // A device is throttled on its own failures, with the same backoff.
    for (let i = 0; i < FREE_ATTEMPTS.device; i++) expect((await reserveAttempt(t.db, { ...device, device: "stolen-cookie" }, now)).ok).toBe(true);
    expect(await reserveAttempt(t.db, { ...device, device: "stolen-cookie" }, now)).toEqual({ ok: false, retryAfter: 2 });
    expect((await reserveAttempt(t.db, device, now)).ok).toBe(true);
    // An owner's reset forgets the username's failures, its devices' included.
    await clearUserFailures(t.db, "BOSS");
    expect((await reserveAttempt(t.db, login("boss", "203.0.113.99"), now)).ok).toBe(true);
    expect((await reserveAttempt(t.db, { ...device, device: "stolen-cookie" }, now)).ok).toBe(true);
  });

  it("API tokens: counted per token id and address, unknown ones per address; a success clears its own counter", async () => {
    const now = new Date("2026-07-01T00:00:00Z");
    const tok = (tokenId: string | null, address = "10.7.0.1") => ({ kind: "token" as const, tokenId, address });
    for (let i = 0; i < FREE_ATTEMPTS.token; i++) expect((await reserveAttempt(t.db, tok(null), now)).ok).toBe(true);
    expect((await reserveAttempt(t.db, tok(null), now)).ok).toBe(false);
    expect(await blockedSeconds(t.db, tok(null), now)).toBeGreaterThan(0);
    // Unknown tokens from that address hold back no real token's id.
    expect(await blockedSeconds(t.db, tok("aaaa"), now)).toBe(0);
    for (let i = 0; i < FREE_ATTEMPTS.token + 1; i++) await reserveAttempt(t.db, tok("aaaa"), now);
    expect(await blockedSeconds(t.db, tok("aaaa"), now)).toBeGreaterThan(0);
    expect(await blockedSeconds(t.db, tok("aaaa", "10.7.0.2"), now)).toBe(0);
    await clearFailures(t.db, tok("aaaa"));
    expect(await blockedSeconds(t.db, tok("aaaa"), now)).toBe(0);
    expect(await blockedSeconds(t.db, tok(null), now)).toBeGreaterThan(0);
  });

  it("throttles setup codes per address", async () => {
    const now = new Date("2026-04-01T00:00:00Z");
    const attempt = { kind: "setup" as const, address: "203.0.113.5" };
    for (let i = 0; i < FREE_ATTEMPTS.setup; i++) expect((await reserveAttempt(t.db, attempt, now)).ok).toBe(true);
    expect((await reserveAttempt(t.db, attempt, now)).ok).toBe(false);
    expect((await reserveAttempt(t.db, { kind: "setup", address: "203.0.113.6" }, now)).ok).toBe(true);
  });

  it("prunes counters older than an hour", async () => {
    const then = new Date("2026-05-01T00:00:00Z");
    await reserveAttempt(t.db, login("forgotten"), then);
    const before = (await t.db.select().from(loginThrottle)).length;
    await pruneThrottle(t.db, new Date(then.getTime() + 2 * 3600_000));
    const after = await t.db.select().from(loginThrottle);
    expect(after.length).toBeLessThan(before);
    expect(after.some((r) => r.key === "user:forgotten")).toBe(false);
  });
});
