import { describe, expect, it } from "vitest";
import { balancerMetrics, withStatuses, type SnapshotServer, type FleetSnapshot } from "./snapshot";

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
});
