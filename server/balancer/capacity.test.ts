import { describe, expect, it } from "vitest";
import { decayPeak, effectiveCapacity, HELD_BACK_MIN_USERS, heldBackMargin, LatestUserRates, reportedUserRate, seenFullBps, updatePeak } from "./capacity";

const H = 24 * 3600 * 1000;

describe("peak learning", () => {
  it("takes the first observation as the peak", () => {
    expect(updatePeak(null, 500, 0)).toEqual({ peakBps: 500, atMs: 0 });
  });
  it("keeps the max of the new traffic and the decayed peak", () => {
    const p = updatePeak({ peakBps: 1000, atMs: 0 }, 100, H);
    expect(p.peakBps).toBeCloseTo(500);
    expect(updatePeak({ peakBps: 1000, atMs: 0 }, 900, H).peakBps).toBe(900);
  });
  it("halves every half-life", () => {
    expect(decayPeak(1000, 2 * H)).toBeCloseTo(250);
    expect(decayPeak(1000, H, H / 2)).toBeCloseTo(250);
  });
  it("a clock going backwards neither grows nor explodes the peak", () => {
    const p = updatePeak({ peakBps: 1000, atMs: 10 * H }, 10, 0);
    expect(p.peakBps).toBe(1000);
    expect(p.atMs).toBe(10 * H); // timeline stays monotone
    expect(decayPeak(1000, -5 * H)).toBe(1000);
    expect(decayPeak(1000, Number.NEGATIVE_INFINITY)).toBe(1000);
  });
  it("ignores garbage traffic values", () => {
    expect(updatePeak({ peakBps: 100, atMs: 0 }, Number.NaN, 0).peakBps).toBe(100);
    expect(updatePeak({ peakBps: 100, atMs: 0 }, -5, 0).peakBps).toBe(100);
    expect(updatePeak(null, Number.POSITIVE_INFINITY, 0).peakBps).toBe(0);
  });
  it("what a link carried when seen full counts only with the mark, and only as a positive finite rate", () => {
    expect(seenFullBps({ heldBack: true, heldBackBps: 9e8 })).toBe(9e8);
    expect(seenFullBps({ heldBack: false, heldBackBps: 9e8 })).toBe(0);
    expect(seenFullBps({ heldBackBps: 9e8 })).toBe(0);
    expect(seenFullBps({ heldBack: true })).toBe(0);
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) expect(seenFullBps({ heldBack: true, heldBackBps: bad })).toBe(0);
  });
  it("effective capacity: override, else max(peak, floor)", () => {
    expect(effectiveCapacity(50, 1000, 100)).toBe(50);
    expect(effectiveCapacity(null, 1000, 100)).toBe(1000);
    expect(effectiveCapacity(null, 10, 100)).toBe(100);
  });
});

describe("held back: a report against its pool's latest reports", () => {
  const M = 1e6;
  const MIN = 60_000;
  it("needs HELD_BACK_MIN_USERS users and sane numbers to say anything", () => {
    expect(reportedUserRate(HELD_BACK_MIN_USERS, 64 * M)).toBe(M);
    expect(reportedUserRate(HELD_BACK_MIN_USERS - 1, 63 * M)).toBeNull();
    expect(reportedUserRate(0, 0)).toBeNull();
    for (const bad of [Number.NaN, -1, Number.POSITIVE_INFINITY]) expect(reportedUserRate(100, bad)).toBeNull();
    expect(reportedUserRate(Number.POSITIVE_INFINITY, M)).toBeNull();
    expect(reportedUserRate(100, 0)).toBe(0); // users online, nothing carried: a rate of 0
  });

  it("marks a report more than the margin below another server's latest; not at the margin, not alone, not on equal rates", () => {
    const r = new LatestUserRates(0.25);
    expect(r.observe("a", 100, 200 * M, 0)).toBe(false); // alone: no reference but itself
    expect(r.observe("b", 100, 160 * M, 0)).toBe(false); // 1.6 × 1.25 = 2: at the margin
    expect(r.observe("c", 100, 200 * M, 0)).toBe(false); // equal to the best
    expect(r.observe("d", 100, 159 * M, 0)).toBe(true);
  });

  it("compares with the latest reports, not the best ever: a pool whose users all ask less (night) marks nobody", () => {
    const r = new LatestUserRates(0.25);
    r.observe("a", 100, 300 * M, 0); // evening: 3 Mbit/s each
    r.observe("a", 100, 100 * M, 6 * 60 * MIN); // night: 1 each
    expect(r.observe("b", 100, 100 * M, 6 * 60 * MIN)).toBe(false);
  });

  it("a report with too few users takes its server out of the reference; one older than maxAgeMs does not count", () => {
    const r = new LatestUserRates(0.25, 10 * MIN);
    r.observe("a", 100, 300 * M, 0);
    r.observe("a", 10, 30 * M, MIN); // 10 users: a says nothing now
    expect(r.observe("b", 100, 100 * M, MIN)).toBe(false);
    r.observe("c", 100, 300 * M, 2 * MIN);
    expect(r.observe("b", 100, 100 * M, 12 * MIN + 1)).toBe(false); // c's report is over 10 min old
    expect(r.observe("b", 100, 100 * M, 12 * MIN)).toBe(true); // exactly 10 min: still counts
  });

  it("a clock gone backwards: a reference from 'later' still counts; bad reports leave the reference as it was", () => {
    const r = new LatestUserRates(0.25, 10 * MIN);
    r.observe("a", 100, 300 * M, 60 * MIN);
    expect(r.observe("b", 100, 100 * M, 0)).toBe(true);
    const q = new LatestUserRates(0.25);
    q.observe("a", 100, 300 * M, 0);
    q.observe("b", 100, Number.NaN, 0);
    expect(q.observe("b", 100, 100 * M, 0)).toBe(true);
  });
});

describe("heldBackMargin", () => {
  it("is two standard errors (2 / √users), never below the margin; HELD_BACK_MIN_USERS is where they meet at 25 %", () => {
    expect(heldBackMargin(HELD_BACK_MIN_USERS, 0.25)).toBe(0.25);
    expect(heldBackMargin(16, 0.25)).toBe(0.5);
    expect(heldBackMargin(400, 0.25)).toBe(0.25);
    expect(heldBackMargin(4, 1.5)).toBe(1.5);
  });
  it("no users measure nothing: an infinite margin", () => {
    expect(heldBackMargin(0, 0.25)).toBe(Number.POSITIVE_INFINITY);
    expect(heldBackMargin(-3, 0.25)).toBe(Number.POSITIVE_INFINITY);
  });
});

