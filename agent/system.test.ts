import { describe, expect, it } from "vitest";
import { cpuPercent, parseMeminfo, parseProcStat, SystemSampler } from "./system";

describe("/proc parsing", () => {
  it("computes CPU from two /proc/stat readings", () => {
    const a = parseProcStat("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n")!;
    const b = parseProcStat("cpu  150 0 150 800 100 0 0 0 0 0\n")!;
    expect(a).toEqual({ idle: 800, total: 1000 });
    expect(cpuPercent(a, b)).toBe(50);
    expect(parseProcStat("nothing")).toBeNull();
  });
  it("computes memory from MemAvailable", () => {
    expect(parseMeminfo("MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    250 kB\n")).toBe(75);
    expect(parseMeminfo("")).toBeNull();
  });
  it("samples this machine within 0–100", () => {
    const s = new SystemSampler();
    s.sample();
    const { cpu, memory } = s.sample();
    expect(cpu).toBeGreaterThanOrEqual(0);
    expect(cpu).toBeLessThanOrEqual(100);
    expect(memory).toBeGreaterThan(0);
    expect(memory).toBeLessThanOrEqual(100);
  });
});
