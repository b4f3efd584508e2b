import { describe, expect, it } from "vitest";
import { aims, FULL, onlineShare, parseScaleArgs, percentile, QUICK } from "./scale-args";

describe("bench:scale flags", () => {
  it("defaults to the issue's full size on PostgreSQL; --quick to PGlite, later flags override", () => {
    expect(parseScaleArgs([])).toEqual(FULL);
    expect(parseScaleArgs(["--quick"])).toEqual(QUICK);
    expect(parseScaleArgs(["--subscribers", "200_000", "--quick", "--agents", "300", "--postgres", "--pg-port", "55511"])).toEqual({
      ...QUICK,
      subscribers: 200_000,
      agents: 300,
      database: "postgres",
      pgPort: 55511,
    });
  });

  it("names the flag at fault", () => {
    expect(parseScaleArgs(["--agents"])).toEqual({ error: "--agents: expected a whole number after it" });
    expect(parseScaleArgs(["--agents", "1001"])).toEqual({ error: '--agents: expected a whole number from 1 to 1000, got "1001"' });
    expect(parseScaleArgs(["--duration-s", "1.5"])).toEqual({ error: '--duration-s: expected a whole number from 1 to 3600, got "1.5"' });
    expect((parseScaleArgs(["--fast"]) as { error: string }).error).toMatch(/^unknown flag --fast\nnpm run bench:scale/);
    expect(parseScaleArgs(["--subscribers", "10", "--online", "11"])).toEqual({ error: "--online: 11 is more than the 10 subscribers" });
  });
});

describe("bench:scale figures", () => {
  it("percentile is the nearest rank", () => {
    const xs = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 99)).toBe(99);
    expect(percentile(xs, 100)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
  });

  it("every online user belongs to exactly one agent", () => {
    const shares = Array.from({ length: 7 }, (_, k) => onlineShare(k, 7, 100));
    expect(shares[0]!.from).toBe(0);
    expect(shares[6]!.to).toBe(100);
    for (let k = 1; k < 7; k++) expect(shares[k]!.from).toBe(shares[k - 1]!.to);
  });

  it("an aim is met only under its bound, and never by a figure not measured", () => {
    const ok = { propagation: { p50Ms: 100, p99Ms: 1999 }, bytesPerAgentPerChange: 2047, foldLagS: 5, healthP99Ms: 99, panelRssMb: 2047 };
    expect(Object.values(aims(ok)).every((a) => a.met)).toBe(true);
    const missed = aims({ ...ok, propagation: { p50Ms: 100, p99Ms: 2000 }, foldLagS: NaN });
    expect(missed.propagation!.met).toBe(false);
    expect(missed.foldLagS!.met).toBe(false);
    expect(missed.healthP99Ms!.met).toBe(true);
  });
});
