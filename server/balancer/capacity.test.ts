import { describe, expect, it } from "vitest";
import { decayPeak, effectiveCapacity, updatePeak } from "./capacity";

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
  it("effective capacity: override, else max(peak, floor)", () => {
    expect(effectiveCapacity(50, 1000, 100)).toBe(50);
    expect(effectiveCapacity(null, 1000, 100)).toBe(1000);
    expect(effectiveCapacity(null, 10, 100)).toBe(100);
  });
});
