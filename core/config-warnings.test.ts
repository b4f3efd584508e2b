import { describe, expect, it } from "vitest";
import { computeMonitoringWarnings, type MonitoringWarningInput } from "./config-warnings";

const base = (over: Partial<MonitoringWarningInput> = {}): MonitoringWarningInput => ({
  clusterProbesEnabled: true,
  servers: [
    { id: "a", name: "alpha", status: "healthy" },
    { id: "b", name: "beta", status: "probe-failing" },
  ],
  inbounds: [
    { id: "i1", name: "A main", serverId: "a", routeId: "r1", isFallback: false },
    { id: "i2", name: "B fallback", serverId: "b", routeId: "r1", isFallback: true },
    { id: "i3", name: "A fallback", serverId: "a", routeId: "r2", isFallback: true },
  ],
  routes: [
    { id: "r1", name: "USA" },
    { id: "r2", name: "Germany" },
  ],
  ...over,
});

describe("computeMonitoringWarnings", () => {
  it("warns about a fallback on a server that is down, not about a healthy one", () => {
    const w = computeMonitoringWarnings(base());
    expect(w).toHaveLength(1);
    expect(w[0]).toMatchObject({ kind: "fallback-down", id: "fallback-down:r1", routeName: "USA", inboundName: "B fallback", serverName: "beta", status: "probe-failing" });
    expect(w[0]!.message).toBe("The fallback of USA (B fallback) is on beta, which is itself down: Health probe failing");
  });

  it("a disabled server's fallback is down; unassigned or unknown routes are ignored", () => {
    const w = computeMonitoringWarnings(
      base({
        servers: [
          { id: "a", name: "alpha", status: "healthy", enabled: false },
          { id: "b", name: "beta", status: "healthy" },
        ],
        inbounds: [
          { id: "i3", name: "A fallback", serverId: "a", routeId: "r2", isFallback: true },
          { id: "i4", name: "gone", serverId: "a", routeId: "r9", isFallback: true },
        ],
      }),
    );
    expect(w.map((x) => [x.kind, x.id])).toEqual([["fallback-down", "fallback-down:r2"]]);
    expect(w[0]!.message).toMatch(/Disabled by operator$/);
  });

  it("no warnings when everything is fine", () => {
    expect(computeMonitoringWarnings(base({ servers: [{ id: "a", name: "alpha", status: "healthy" }, { id: "b", name: "beta", status: "healthy" }] }))).toEqual([]);
  });

  it("probes off for the cluster: one warning naming every server", () => {
    const w = computeMonitoringWarnings(base({ clusterProbesEnabled: false, inbounds: [] }));
    expect(w).toEqual([
      expect.objectContaining({ kind: "probes-disabled", id: "probes-disabled:cluster", serverIds: ["a", "b"] }),
    ]);
  });

  it("probes off by override: names the servers (not disabled ones)", () => {
    const w = computeMonitoringWarnings(
      base({
        inbounds: [],
        servers: [
          { id: "a", name: "alpha", status: "healthy", probesEnabled: false },
          { id: "b", name: "beta", status: "healthy", probesEnabled: true },
          { id: "c", name: "gamma", status: "disabled", enabled: false, probesEnabled: false },
        ],
      }),
    );
    expect(w).toHaveLength(1);
    expect(w[0]).toMatchObject({ kind: "probes-disabled", serverIds: ["a"] });
    expect(w[0]!.message).toMatch(/turned off for alpha/);
    const many = computeMonitoringWarnings(
      base({ inbounds: [], servers: ["a", "b", "c", "d", "e"].map((id) => ({ id, name: id, status: "healthy", probesEnabled: false })) }),
    );
    expect(many[0]!.message).toBe("Active health probes are turned off for 5 servers (a, b, c and 2 more)");
  });

  it("no-agent comes first and lists at most three names", () => {
    const servers = ["a", "b", "c", "d", "e"].map((id) => ({ id, name: `srv-${id}`, status: "probe-failing", neverReported: true }));
    const w = computeMonitoringWarnings(base({ servers }));
    expect(w[0]).toMatchObject({ kind: "no-agent", serverIds: ["a", "b", "c", "d", "e"] });
    expect(w[0]!.message).toContain("5 servers have never heard from their agent (srv-a, srv-b, srv-c and 2 more)");
    expect(computeMonitoringWarnings(base({ servers: servers.map((s) => ({ ...s, neverReported: false })) })).some((x) => x.kind === "no-agent")).toBe(false);
  });
});
