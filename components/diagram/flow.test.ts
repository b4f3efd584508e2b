import { describe, expect, it } from "vitest";
import { buildEdges, buildNodes, MAX_ANIMATED_ROUTES, type FlowTopology } from "./flow";
import { routeColor } from "@/core/format";
import { layoutTopology } from "./layout";

const servers = [{ id: "s1" }, { id: "s2" }];
const topo = (inbounds: FlowTopology["inbounds"], routes: FlowTopology["routes"] = [{ id: "r1", name: "One" }, { id: "r2", name: "Two" }]) => ({
  servers,
  inbounds,
  routes,
});
const ib = (id: string, serverId: string, routeId: string | null) => ({ id, name: `ib-${id}`, serverId, routeId });

describe("buildNodes", () => {
  it("makes one fixed, non-interactive node per layout box", () => {
    const layout = layoutTopology(topo([ib("a", "s1", "r1")]));
    const { nodes, cache } = buildNodes(layout, new Map());
    expect(nodes.map((n) => n.id)).toEqual(layout.boxes.map((b) => b.id));
    const server = nodes.find((n) => n.id === "server:s1")!;
    const box = layout.boxes.find((b) => b.id === "server:s1")!;
    expect(server).toMatchObject({ type: "server", position: { x: box.x, y: box.y }, width: box.width, height: box.height, data: { refId: "s1" } });
    expect(server).toMatchObject({ draggable: false, selectable: false, connectable: false, focusable: false });
    expect(cache.size).toBe(nodes.length);
  });

  it("keeps the identity of boxes that did not move and replaces those that did", () => {
    const first = buildNodes(layoutTopology(topo([ib("a", "s1", "r1"), ib("b", "s2", "r2")])), new Map());
    // Moving b from r2 to r1 grows r1 (so r2 shifts down) and leaves the servers as they were.
    const second = buildNodes(layoutTopology(topo([ib("a", "s1", "r1"), ib("b", "s2", "r1")])), first.cache);
    const same = (id: string) => second.nodes.find((n) => n.id === id) === first.nodes.find((n) => n.id === id);
    expect(same("server:s1")).toBe(true);
    expect(same("server:s2")).toBe(true);
    expect(same("unassigned")).toBe(true);
    expect(same("route:r1")).toBe(false);
    expect(same("route:r2")).toBe(false);
  });

  it("forgets boxes that are gone", () => {
    const first = buildNodes(layoutTopology(topo([])), new Map());
    const second = buildNodes(layoutTopology(topo([], [{ id: "r1", name: "One" }])), first.cache);
    expect(second.cache.has("route:r2")).toBe(false);
  });
});

describe("buildEdges", () => {
  it("draws a chip-to-route edge per routed inbound and a pipe per non-empty route", () => {
    const { edges } = buildEdges(topo([ib("a", "s1", "r1"), ib("b", "s2", "r1"), ib("c", "s1", null)]), new Map());
    expect(edges.map((e) => e.id)).toEqual(["ib:a", "ib:b", "pipe:r1"]);
    expect(edges[0]).toMatchObject({ source: "server:s1", sourceHandle: "ib:a", target: "route:r1", targetHandle: "in", ariaLabel: "ib-a is in One" });
    expect(edges[2]).toMatchObject({ source: "route:r1", sourceHandle: "out", target: "distribution", animated: true });
    expect(edges[0]!.style?.stroke).toBe(routeColor(0));
  });

  it("draws no edge for an inbound whose route is gone, and no pipe for an empty route", () => {
    const { edges } = buildEdges(topo([ib("a", "s1", "deleted"), ib("b", "s1", "r2")]), new Map());
    expect(edges.map((e) => e.id)).toEqual(["ib:b", "pipe:r2"]);
    expect(edges[0]!.style?.stroke).toBe(routeColor(1));
  });

  it("draws nothing for an empty topology", () => {
    expect(buildEdges({ inbounds: [], routes: [] }, new Map()).edges).toEqual([]);
  });

  it("keeps unchanged edges and rebuilds those whose route, colour or name changed", () => {
    const first = buildEdges(topo([ib("a", "s1", "r1"), ib("b", "s2", "r2")]), new Map());
    const moved = buildEdges(topo([ib("a", "s1", "r1"), ib("b", "s2", "r1")]), first.cache);
    const get = (r: { edges: { id: string }[] }, id: string) => r.edges.find((e) => e.id === id);
    expect(get(moved, "ib:a")).toBe(get(first, "ib:a"));
    expect(get(moved, "pipe:r1")).toBe(get(first, "pipe:r1"));
    expect(get(moved, "ib:b")).not.toBe(get(first, "ib:b"));
    expect(get(moved, "ib:b")).toMatchObject({ target: "route:r1" });
    expect(get(moved, "pipe:r2")).toBeUndefined();
    // Reordering changes the colours: every edge is rebuilt.
    const reordered = buildEdges(topo([ib("a", "s1", "r1"), ib("b", "s2", "r1")], [{ id: "r2", name: "Two" }, { id: "r1", name: "One" }]), moved.cache);
    expect(get(reordered, "ib:a")).not.toBe(get(moved, "ib:a"));
    expect(get(reordered, "ib:a")!).toMatchObject({ style: { stroke: routeColor(1) } });
  });

  it("animates the pipes only up to a readable number of routes", () => {
    const routes = Array.from({ length: MAX_ANIMATED_ROUTES + 1 }, (_, i) => ({ id: `r${i}`, name: `R${i}` }));
    const { edges } = buildEdges({ inbounds: [ib("a", "s1", "r0")], routes }, new Map());
    expect(edges.find((e) => e.id === "pipe:r0")?.animated).toBe(false);
    const few = buildEdges({ inbounds: [ib("a", "s1", "r0")], routes: routes.slice(0, MAX_ANIMATED_ROUTES) }, new Map());
    expect(few.edges.find((e) => e.id === "pipe:r0")?.animated).toBe(true);
  });
});
