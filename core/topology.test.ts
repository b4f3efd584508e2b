import { describe, expect, it } from "vitest";
import { applyMove, effectiveRouteId, groupTopology, moveChanges } from "./topology";

const servers = [{ id: "s1" }, { id: "s2" }];
const routes = [{ id: "r1" }, { id: "r2" }];
const ib = (id: string, serverId: string, routeId: string | null, isFallback = false) => ({ id, serverId, routeId, isFallback });

describe("effectiveRouteId", () => {
  const ids = new Set(["r1", "r2"]);
  it("is the route when it exists", () => {
    expect(effectiveRouteId(ib("a", "s1", "r1"), ids)).toBe("r1");
  });
  it("is null for an inbound in no route", () => {
    expect(effectiveRouteId(ib("a", "s1", null), ids)).toBeNull();
  });
  it("counts an inbound whose route is gone as unassigned", () => {
    expect(effectiveRouteId(ib("a", "s1", "deleted"), ids)).toBeNull();
  });
  it("accepts a Map of routes as the lookup", () => {
    expect(effectiveRouteId(ib("a", "s1", "r2"), new Map([["r2", {}]]))).toBe("r2");
    expect(effectiveRouteId(ib("a", "s1", "r1"), new Map())).toBeNull();
  });
});

describe("applyMove", () => {
  it("puts the inbound in the new route and clears its fallback mark", () => {
    const before = ib("a", "s1", "r1", true);
    const after = applyMove(before, "r2");
    expect(after).toEqual({ id: "a", serverId: "s1", routeId: "r2", isFallback: false });
    expect(before.routeId).toBe("r1");
    expect(before.isFallback).toBe(true);
  });
  it("moves to Unassigned with null, clearing the fallback mark", () => {
    expect(applyMove(ib("a", "s1", "r1", true), null)).toMatchObject({ routeId: null, isFallback: false });
  });
  it("changes nothing when moved to the route it is already in, fallback kept", () => {
    const same = ib("a", "s1", "r1", true);
    expect(applyMove(same, "r1")).toBe(same);
    const none = ib("b", "s1", null);
    expect(applyMove(none, null)).toBe(none);
  });
  it("moves an inbound out of a deleted route to Unassigned (its stored route id differs)", () => {
    expect(applyMove(ib("a", "s1", "deleted", true), null)).toMatchObject({ routeId: null, isFallback: false });
  });
  it("keeps every other field", () => {
    const rich = { ...ib("a", "s1", "r1"), name: "A", version: 3 };
    expect(applyMove(rich, "r2")).toEqual({ ...rich, routeId: "r2" });
  });
  it("moveChanges is the write a move makes", () => {
    expect(moveChanges("r9")).toEqual({ routeId: "r9", isFallback: false });
    expect(moveChanges(null)).toEqual({ routeId: null, isFallback: false });
  });
});

describe("groupTopology", () => {
  it("groups inbounds by server, by route and unassigned, in input order", () => {
    const inbounds = [ib("a", "s1", "r1"), ib("b", "s2", "r1"), ib("c", "s1", null), ib("d", "s2", "r2"), ib("e", "s1", "gone")];
    const g = groupTopology({ servers, inbounds, routes });
    expect(g.inboundsByServer.get("s1")?.map((i) => i.id)).toEqual(["a", "c", "e"]);
    expect(g.inboundsByServer.get("s2")?.map((i) => i.id)).toEqual(["b", "d"]);
    expect(g.inboundsByRoute.get("r1")?.map((i) => i.id)).toEqual(["a", "b"]);
    expect(g.inboundsByRoute.get("r2")?.map((i) => i.id)).toEqual(["d"]);
    expect(g.inboundsByRoute.has("gone")).toBe(false);
    expect(g.unassigned.map((i) => i.id)).toEqual(["c", "e"]);
    expect(g.serverById.get("s2")).toBe(servers[1]);
    expect(g.inboundById.get("d")).toBe(inbounds[3]);
    expect(g.routeById.get("r2")).toBe(routes[1]);
  });
  it("orders the targets Unassigned first, then routes by position", () => {
    const g = groupTopology({ servers, inbounds: [], routes: [{ id: "r2" }, { id: "r1" }] });
    expect(g.targets).toEqual([null, "r2", "r1"]);
    expect(g.routeIndex.get("r2")).toBe(0);
    expect(g.routeIndex.get("r1")).toBe(1);
  });
  it("leaves an empty route and a server without inbounds out of the member lists", () => {
    const g = groupTopology({ servers, inbounds: [ib("a", "s1", "r1")], routes });
    expect(g.inboundsByRoute.has("r2")).toBe(false);
    expect(g.inboundsByServer.has("s2")).toBe(false);
  });
  it("handles an empty topology", () => {
    const g = groupTopology({ servers: [], inbounds: [], routes: [] });
    expect(g.unassigned).toEqual([]);
    expect(g.targets).toEqual([null]);
    expect(g.inboundsByRoute.size).toBe(0);
    expect(g.serverById.size).toBe(0);
  });
  it("regroups after a route is deleted: its inbounds become unassigned", () => {
    const inbounds = [ib("a", "s1", "r1"), ib("b", "s1", "r2")];
    const g = groupTopology({ servers, inbounds, routes: [{ id: "r2" }] });
    expect(g.unassigned.map((i) => i.id)).toEqual(["a"]);
    expect(g.inboundsByRoute.get("r2")?.map((i) => i.id)).toEqual(["b"]);
  });
  it("regroups after applyMove", () => {
    const inbounds = [ib("a", "s1", "r1"), ib("b", "s1", "r1")].map((i) => (i.id === "a" ? applyMove(i, "r2") : i));
    const g = groupTopology({ servers, inbounds, routes });
    expect(g.inboundsByRoute.get("r1")?.map((i) => i.id)).toEqual(["b"]);
    expect(g.inboundsByRoute.get("r2")?.map((i) => i.id)).toEqual(["a"]);
  });
});
