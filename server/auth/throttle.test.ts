import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blockDurationMs, clearFailures, recordFailure, retryAfterSeconds, FREE_ATTEMPTS } from "./throttle";
import { openTestDatabase, type TestDatabase } from "@/db/testing";

describe("blockDurationMs", () => {
  it("lets the free attempts through, then doubles up to 15 minutes", () => {
    expect(blockDurationMs(4, 5)).toBe(0);
    expect(blockDurationMs(5, 5)).toBe(2000);
    expect(blockDurationMs(6, 5)).toBe(4000);
    expect(blockDurationMs(1000, 5)).toBe(15 * 60_000);
  });
});

describe("stored throttle", () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await openTestDatabase("pglite");
  });
  afterAll(async () => t?.dispose());

  it("blocks a username after its free attempts and forgets on success", async () => {
    const key = [{ kind: "user" as const, value: "mallory" }];
    const now = new Date("2026-01-01T00:00:00Z");
    for (let i = 0; i < FREE_ATTEMPTS.user - 1; i++) await recordFailure(t.db, key, now);
    expect(await retryAfterSeconds(t.db, key, now)).toBe(0);
    await recordFailure(t.db, key, now);
    expect(await retryAfterSeconds(t.db, key, now)).toBe(2);
    expect(await retryAfterSeconds(t.db, key, new Date(now.getTime() + 3000))).toBe(0);
    await clearFailures(t.db, key);
    await recordFailure(t.db, key, now);
    expect(await retryAfterSeconds(t.db, key, now)).toBe(0);
  });

  it("forgets failures after an hour", async () => {
    const key = [{ kind: "user" as const, value: "old" }];
    const then = new Date("2026-01-01T00:00:00Z");
    for (let i = 0; i < FREE_ATTEMPTS.user; i++) await recordFailure(t.db, key, then);
    const later = new Date(then.getTime() + 2 * 3600_000);
    await recordFailure(t.db, key, later);
    expect(await retryAfterSeconds(t.db, key, later)).toBe(0);
  });
});
