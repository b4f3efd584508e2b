import { describe, expect, it } from "vitest";
import { balancerMetrics, entryFor, withStatuses, type SnapshotInbound, type SnapshotServer, type FleetSnapshot } from "./snapshot";

const server = (id: string, p: Partial<SnapshotServer> = {}): SnapshotServer => ({
  id,
  clusterId: "c",
  name: id,
  address: "127.0.0.1",
  enabled: true,
  status: "healthy",
  recoveredAtMs: null,
  coefficient: 1,
  capacityMbps: null,
  ...p,
});
const topology = (...servers: SnapshotServer[]): FleetSnapshot => ({ clusters: new Map(), servers: new Map(servers.map((s) => [s.id, s])), inbounds: new Map(), routeNames: new Map() });

describe("balancerMetrics: when a server came back", () => {
  it("passes the recovery time of a healthy server to the balancer, and nothing otherwise", () => {
    const m = balancerMetrics(
      topology(server("back", { recoveredAtMs: 5000 }), server("always"), server("down", { status: "no-data", recoveredAtMs: 5000 }), server("off", { enabled: false, recoveredAtMs: 5000 })),
      new Map(),
    );
    expect(m.get("back")).toMatchObject({ available: true, availableSinceMs: 5000 });
    expect(m.get("always")!.availableSinceMs).toBeUndefined();
    expect(m.get("down")).toMatchObject({ available: false, availableSinceMs: undefined });
    expect(m.get("off")).toMatchObject({ available: false, availableSinceMs: undefined });
  });

  it("takes the recovery time along with a new status", () => {
    const t = topology(server("a", { status: "probe-failing" }));
    const { topology: next, changed } = withStatuses(t, new Map([["a", { status: "healthy", recoveredAtMs: 9000 }]]));
    expect(changed).toEqual(["a"]);
    expect(balancerMetrics(next, new Map()).get("a")).toMatchObject({ available: true, availableSinceMs: 9000 });
    expect(t.servers.get("a")!.status).toBe("probe-failing"); // the old snapshot is never mutated
  });

  it("an inbound the server stops or starts serving is a change of that server, carried to the balancer (issue 25)", () => {
    const t = topology(server("a"));
    const notServed = new Map([["ib-reality", "Reality needs Xray-core"]]);
    const out = withStatuses(t, new Map([["a", { status: "healthy", recoveredAtMs: null, unavailableInbounds: notServed }]]));
    expect(out.changed).toEqual(["a"]);
    expect(balancerMetrics(out.topology, new Map()).get("a")!.unavailableInbounds).toEqual(notServed);
    // The same again: no change.
    expect(withStatuses(out.topology, new Map([["a", { status: "healthy", recoveredAtMs: null, unavailableInbounds: new Map(notServed) }]])).changed).toEqual([]);
    // Served again.
    const back = withStatuses(out.topology, new Map([["a", { status: "healthy", recoveredAtMs: null }]]));
    expect(back.changed).toEqual(["a"]);
    expect(balancerMetrics(back.topology, new Map()).get("a")!.unavailableInbounds).toBeUndefined();
  });
});

describe("entryFor: one entry per topology and inbound", () => {
  const inbound = (id: string, serverId: string, routeId: string | null): SnapshotInbound => ({
    id,
    serverId,
    routeId,
    name: `in ${id}`,
    port: 443,
    security: "none",
    sni: null,
    realityPublicKey: null,
    realityShortId: null,
    isFallback: false,
  });
  const fleet = (address: string): FleetSnapshot => {
    const t = topology(server("s1", { address }), server("s2"));
    t.inbounds.set("i1", inbound("i1", "s1", "r1"));
    t.inbounds.set("i2", inbound("i2", "s2", "r2"));
    t.inbounds.set("lost", inbound("lost", "gone", "r1"));
    t.routeNames.set("r1", "Route 1");
    t.routeNames.set("r2", "Route 2");
    return t;
  };

  it("gives the same object for the same inbound of one topology, and new ones for another topology", () => {
    const a = fleet("10.0.0.1");
    const b = fleet("10.0.0.2");
    const e = entryFor(a, "r1", "i1")!;
    expect(e).toMatchObject({ routeId: "r1", route: "Route 1", inboundId: "i1", inbound: "in i1", server: "s1", address: "10.0.0.1", port: 443 });
    expect(entryFor(a, "r2", "i2")).toMatchObject({ routeId: "r2", route: "Route 2", server: "s2" });
    expect(entryFor(b, "r1", "i1")).toMatchObject({ address: "10.0.0.2" });
    // Back to the first topology: its own entries, not the other's.
    expect(entryFor(a, "r1", "i1")).toBe(e);
    expect(entryFor(b, "r1", "i1")).not.toBe(e);
  });

  it("is null for an unknown inbound or one whose server is gone, and names the route it is asked for", () => {
    const t = fleet("10.0.0.1");
    expect(entryFor(t, "r1", "nope")).toBeNull();
    expect(entryFor(t, "r1", "lost")).toBeNull();
    // Asked under another route than its own: that route's name, not the cached entry.
    expect(entryFor(t, "r2", "i1")).toMatchObject({ routeId: "r2", route: "Route 2", inboundId: "i1" });
    expect(entryFor(t, "r1", "i1")).toMatchObject({ routeId: "r1", route: "Route 1" });
  });
});
