import { describe, expect, it } from "vitest";
import { DEFAULT_HEARTBEAT_SOAK, runHeartbeatSoak } from "./soak-heartbeats";

describe("the heartbeats soak phase (seeded, simulated clock)", () => {
  it("routes around every death it saw, marks no healthy server down, and survives the panel's outages and stall", () => {
    const r = runHeartbeatSoak({ ...DEFAULT_HEARTBEAT_SOAK, agents: 300, minutes: 20, seed: 7 });
    expect(r.heartbeatsLost).toBeGreaterThan(0);
    expect(r.heartbeatsLate).toBeGreaterThan(0);
    expect(r.machineStalls).toBeGreaterThan(0);
    expect(r.probeTimeoutsOnLiveServers).toBeGreaterThan(0);
    expect(r.blindTicks).toBeGreaterThan(0);
    expect(r.deaths).toBeGreaterThan(10);
    expect(r.deathsRoutedAround).toBeGreaterThanOrEqual(r.deaths - 1); // one may die in the last seconds
    expect(r.failoverMs).not.toBeNull();
    expect(r.healthyMarkedDown).toBe(0);
  });
  it("is repeatable for a seed", () => {
    const a = runHeartbeatSoak({ ...DEFAULT_HEARTBEAT_SOAK, agents: 50, minutes: 3, seed: 3 });
    const b = runHeartbeatSoak({ ...DEFAULT_HEARTBEAT_SOAK, agents: 50, minutes: 3, seed: 3 });
    expect({ ...a, wallMs: 0 }).toEqual({ ...b, wallMs: 0 });
  });
});
