import { describe, expect, it } from "vitest";
import { TokenBuckets } from "./rate-limit";

describe("token buckets", () => {
  it("lets a burst through, then one per interval, with Retry-After in whole seconds", () => {
    const b = new TokenBuckets();
    const t0 = 1_000_000;
    const interval = 60;
    const take = (ms: number) => b.take("s1", 5, 1 / interval, ms);
    expect([0, 1, 2, 3, 4].map(() => take(t0))).toEqual([0, 0, 0, 0, 0]);
    expect(take(t0)).toBe(60);
    expect(take(t0 + 30_000)).toBe(30);
    expect(take(t0 + 60_000)).toBe(0);
    expect(take(t0 + 61_000)).toBe(59);
    // other keys have their own bucket
    expect(b.take("s2", 5, 1 / interval, t0)).toBe(0);
  });

  it("refills to the burst at most, and never answers Retry-After 0", () => {
    const b = new TokenBuckets();
    for (let i = 0; i < 5; i++) b.take("k", 5, 1, 0);
    expect(b.take("k", 5, 1, 100_000_000)).toBe(0);
    for (let i = 0; i < 4; i++) expect(b.take("k", 5, 1, 100_000_000)).toBe(0);
    expect(b.take("k", 5, 1, 100_000_000)).toBe(1);
    expect(b.take("k", 5, 1, 100_000_999)).toBe(1);
  });

  it("stays bounded in memory", () => {
    const b = new TokenBuckets(3);
    for (let i = 0; i < 10; i++) b.take(`k${i}`, 1, 1, 0);
    // Keys are only ever valid agent tokens (checked first); when full, the map starts afresh.
    expect(b.take("k0", 1, 1, 0)).toBe(0);
  });
});
