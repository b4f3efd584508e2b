import { describe, expect, it } from "vitest";
import { impactOf, type ImpactTopology } from "./impact";

const server = (id: string, status = "healthy", enabled = true) => ({ id, status, enabled });
const inbound = (id: string, serverId: string, routeId: string | null) => ({ id, serverId, routeId });

/** de: two inbounds on two healthy servers; us: one healthy inbound; br: on a down server; empty: none. */
function topo(over: Partial<ImpactTopology> = {}): ImpactTopology {
  return {
    servers: [server("s1"), server("s2"), server("s3"), server("s4", "probe-failing"), server("s5", "disabled", false)],
    inbounds: [inbound("de1", "s1", "de"), inbound("de2", "s2", "de"), inbound("us1", "s3", "us"), inbound("br1", "s4", "br"), inbound("off1", "s5", "us"), inbound("free", "s1", null)],
    routes: [
      { id: "de", name: "Germany" },
      { id: "us", name: "USA" },
      { id: "br", name: "Brazil" },
      { id: "empty", name: "Empty" },
    ],
    routeUsers: 42,
    ...over,
  };
}

describe("impactOf", () => {
  it("moving the last available inbound out of a route names that route and its users", () => {
    expect(impactOf({ kind: "move-inbound", inboundId: "us1", toRouteId: null }, topo())).toEqual({
      routes: [{ id: "us", name: "USA", reason: "no-available-inbound" }],
      users: 42,
    });
  });

  it("moving one of several available inbounds out is harmless", () => {
    expect(impactOf({ kind: "move-inbound", inboundId: "de1", toRouteId: "us" }, topo())).toEqual({ routes: [], users: 0 });
  });

  it("moving within the same route or into a route is harmless", () => {
    expect(impactOf({ kind: "move-inbound", inboundId: "us1", toRouteId: "us" }, topo()).routes).toEqual([]);
    expect(impactOf({ kind: "move-inbound", inboundId: "free", toRouteId: "br" }, topo()).routes).toEqual([]);
  });

  it("a route whose inbounds are all down already is not made worse", () => {
    expect(impactOf({ kind: "move-inbound", inboundId: "br1", toRouteId: null }, topo()).routes).toEqual([]);
    expect(impactOf({ kind: "disable-server", serverId: "s4" }, topo()).routes).toEqual([]);
  });

  it("a route with no candidates at all is not affected by anything", () => {
    for (const change of [
      { kind: "disable-server" as const, serverId: "s1" },
      { kind: "delete-server" as const, serverId: "s2" },
      { kind: "delete-route" as const, routeId: "empty" },
    ]) {
      expect(impactOf(change, topo()).routes.map((r) => r.id)).not.toContain("empty");
    }
  });

  it("disabling the only healthy server of a route asks; a disabled server's inbounds never counted", () => {
    // us has us1 (healthy, s3) and off1 (on the disabled s5): s3 is its only available server.
    expect(impactOf({ kind: "disable-server", serverId: "s3" }, topo())).toEqual({ routes: [{ id: "us", name: "USA", reason: "no-available-inbound" }], users: 42 });
    expect(impactOf({ kind: "disable-server", serverId: "s5" }, topo()).routes).toEqual([]);
    expect(impactOf({ kind: "delete-server", serverId: "s5" }, topo()).routes).toEqual([]);
  });

  it("a server feeding several routes can empty all of them", () => {
    const t = topo({ inbounds: [inbound("a", "s1", "de"), inbound("b", "s1", "us"), inbound("c", "s2", "de")] });
    expect(impactOf({ kind: "disable-server", serverId: "s1" }, t).routes.map((r) => r.name)).toEqual(["USA"]);
    expect(impactOf({ kind: "delete-server", serverId: "s2" }, topo({ inbounds: [inbound("a", "s2", "de"), inbound("b", "s2", "us")] })).routes.map((r) => r.name)).toEqual([
      "Germany",
      "USA",
    ]);
  });

  it("deleting the last available inbound vs one of several", () => {
    expect(impactOf({ kind: "delete-inbound", inboundId: "us1" }, topo()).routes.map((r) => r.id)).toEqual(["us"]);
    expect(impactOf({ kind: "delete-inbound", inboundId: "de2" }, topo()).routes).toEqual([]);
    expect(impactOf({ kind: "delete-inbound", inboundId: "free" }, topo()).routes).toEqual([]);
  });

  it("deleting a non-empty route always costs its users that route, working or not", () => {
    expect(impactOf({ kind: "delete-route", routeId: "br" }, topo())).toEqual({ routes: [{ id: "br", name: "Brazil", reason: "deleted" }], users: 42 });
    expect(impactOf({ kind: "delete-route", routeId: "de" }, topo()).routes).toEqual([{ id: "de", name: "Germany", reason: "deleted" }]);
  });

  it("an empty or unknown route's deletion costs nothing", () => {
    expect(impactOf({ kind: "delete-route", routeId: "empty" }, topo())).toEqual({ routes: [], users: 0 });
    expect(impactOf({ kind: "delete-route", routeId: "nope" }, topo())).toEqual({ routes: [], users: 0 });
  });

  it("zero users still names the routes", () => {
    expect(impactOf({ kind: "disable-server", serverId: "s3" }, topo({ routeUsers: 0 }))).toEqual({ routes: [{ id: "us", name: "USA", reason: "no-available-inbound" }], users: 0 });
  });

  it("a server that is enabled but not healthy does not count as available", () => {
    const t = topo({ servers: [server("s1", "pending"), server("s2", "unreachable"), server("s3")] });
    expect(impactOf({ kind: "disable-server", serverId: "s1" }, t).routes).toEqual([]);
  });

  it("an inbound whose route is gone counts as unassigned", () => {
    const t = topo({ inbounds: [inbound("x", "s1", "gone"), inbound("us1", "s3", "us")] });
    expect(impactOf({ kind: "move-inbound", inboundId: "x", toRouteId: null }, t).routes).toEqual([]);
  });
});
