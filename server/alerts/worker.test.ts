import { describe, expect, it } from "vitest";
import { FULL_CHECK_TIME_SHARE, periodicFullCheckDue } from "./worker";

describe("the periodic full check of every subscriber", () => {
  const every = 15_000;
  const t0 = 1_000_000;

  it("runs first at once, then every `watchMs` while it is quick", () => {
    expect(periodicFullCheckDue(t0, -Infinity, 0, every)).toBe(true);
    expect(periodicFullCheckDue(t0 + every - 1, t0, 40, every)).toBe(false);
    expect(periodicFullCheckDue(t0 + every, t0, 40, every)).toBe(true);
    expect(periodicFullCheckDue(t0 + every, t0, 0, every)).toBe(true);
  });

  it("a check that took long waits until it is at most FULL_CHECK_TIME_SHARE of the time", () => {
    const took = 2_300;
    const wait = took / FULL_CHECK_TIME_SHARE;
    expect(wait).toBe(46_000);
    expect(periodicFullCheckDue(t0 + every, t0, took, every)).toBe(false);
    expect(periodicFullCheckDue(t0 + wait - 1, t0, took, every)).toBe(false);
    expect(periodicFullCheckDue(t0 + wait, t0, took, every)).toBe(true);
  });

  it("a clock that stepped back before the last check makes it due, not never", () => {
    expect(periodicFullCheckDue(t0 - 1, t0, 2_300, every)).toBe(true);
    expect(periodicFullCheckDue(t0 - 3_600_000, t0, 0, every)).toBe(true);
  });
});
