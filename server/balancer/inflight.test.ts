import { describe, expect, it } from "vitest";
import { expectedUserBps, InflightLedger } from "./inflight";

describe("in-flight ledger", () => {
  it("adds recorded users and traffic", () => {
    const l = new InflightLedger();
    l.record("a", 100, 1, 2e6);
    l.record("a", 200, 1, 3e6);
    l.record("a", 250, -1, -1e6);
    expect(l.additions("a", 0)).toEqual({ users: 1, trafficBps: 4e6 });
    expect(l.additions("b", 0)).toBeUndefined();
  });
  it("drops entries older than the server's latest report", () => {
    const l = new InflightLedger();
    l.record("a", 100, 1, 2e6);
    l.record("a", 300, 1, 2e6);
    expect(l.additions("a", 200)).toEqual({ users: 1, trafficBps: 2e6 });
    expect(l.additions("a", 301)).toBeUndefined();
    expect(l.size()).toBe(0);
  });
  it("prunes correctly when entries arrive out of order (clock going backwards)", () => {
    const l = new InflightLedger();
    l.record("a", 500, 1, 1);
    l.record("a", 100, 1, 1);
    expect(l.additions("a", 200)).toEqual({ users: 1, trafficBps: 1 });
  });
  it("expected traffic per user: T / U, or the default when unknown", () => {
    expect(expectedUserBps(100e6, 50, 2e6)).toBe(2e6 * 1);
    expect(expectedUserBps(300e6, 50, 2e6)).toBe(6e6);
    expect(expectedUserBps(0, 0, 2e6)).toBe(2e6);
    expect(expectedUserBps(100e6, 0, 2e6)).toBe(2e6);
  });
});
