import { describe, expect, it } from "vitest";
import { groupTopology } from "@/core/topology";
import { boxHandles, buildEdges, buildNodes, DOWN_DASH, inboundTraffic, MAX_ANIMATED_ROUTES, NO_LINE_DASH, PANIC_COLOR, type FlowTopology } from "./flow";
import { routeColor } from "@/core/format";
import { CHIP_HEIGHT, chipTop, layoutTopology, ROUTE_WIDTH, SERVER_WIDTH } from "./layout";

const servers = [
  { id: "s1", status: "healthy" },
  { id: "s2", status: "healthy" },
];
const topo = (inbounds: FlowTopology["inbounds"], routes: FlowTopology["routes"] = [{ id: "r1", name: "One" }, { id: "r2", name: "Two" }]) => ({
  servers,
  inbounds,
  routes,
});
const ib = (id: string, serverId: string, routeId: string | null) => ({ id, name: `ib-${id}`, serverId, routeId });

/** The lookups buildNodes reads, with the fields the boxes draw filled in. */
function indexOf(t: ReturnType<typeof topo>) {
  const full = {
    servers: t.servers.map((s) => ({ name: `srv-${s.id}`, address: "127.0.0.1", statusReason: null, usersOnline: 0, trafficBps: 0, ...s })),
    inbounds: t.inbounds.map((i) => ({ port: 443, users: 0, isFallback: false, ...i, unavailable: i.unavailable ?? null })),
    routes: t.routes.map((r) => ({ flag: null, algorithm: "balanced", ...r })),
  };
  return { ...groupTopology(full), panicByRoute: new Map(), trafficByInbound: inboundTraffic(full.servers, full.inbounds) };
}

describe("buildNodes", () => {
  it("makes one fixed, non-interactive node per layout box", () => {
    const t = topo([ib("a", "s1", "r1")]);
    const layout = layoutTopology(t);
    const { nodes, cache } = buildNodes(layout, indexOf(t), new Map());
    expect(nodes.map((n) => n.id)).toEqual(layout.boxes.map((b) => b.id));
    const server = nodes.find((n) => n.id === "server:s1")!;
    const box = layout.boxes.find((b) => b.id === "server:s1")!;
    expect(server).toMatchObject({ type: "server", position: { x: box.x, y: box.y }, width: box.width, height: box.height, data: { id: "s1", name: "srv-s1" } });
    expect(server).toMatchObject({ draggable: false, selectable: false, connectable: false, focusable: false });
    expect(cache.size).toBe(nodes.length);
  });

  it("keeps the identity of boxes that did not move and replaces those that did", () => {
    const first = nodesOf(topo([ib("a", "s1", "r1"), ib("b", "s2", "r2")]), new Map());
    // Moving b from r2 to r1 grows r1 (so r2 shifts down) and leaves the servers where they were.
    const second = nodesOf(topo([ib("a", "s1", "r1"), ib("b", "s2", "r1")]), first.cache);
    const same = (id: string) => second.nodes.find((n) => n.id === id) === first.nodes.find((n) => n.id === id);
    expect(same("server:s1")).toBe(true);
    // s2 stays in place, but its chip b now draws r1's name and colour.
    expect(same("server:s2")).toBe(false);
    expect(same("unassigned")).toBe(true);
    expect(same("route:r1")).toBe(false);
    expect(same("route:r2")).toBe(false);
  });

  it("forgets boxes that are gone", () => {
    const first = nodesOf(topo([]), new Map());
    const second = nodesOf(topo([], [{ id: "r1", name: "One" }]), first.cache);
    expect(second.cache.has("route:r2")).toBe(false);
  });

  it("replaces a box whose handles changed though it kept its place and size", () => {
    // a's route empties (its pipe's handle goes; one row or none: the same height), and s1's
    // two chips swap places (same count, same box).
    const first = nodesOf(topo([ib("a", "s1", "r1"), ib("b", "s1", "r2")]), new Map());
    const second = nodesOf(topo([ib("b", "s1", "r2"), ib("a", "s1", null)]), first.cache);
    const pick = (r: typeof first, id: string) => r.nodes.find((n) => n.id === id)!;
    expect(pick(second, "route:r1").height).toBe(pick(first, "route:r1").height);
    expect(pick(second, "route:r1")).not.toBe(pick(first, "route:r1"));
    expect(pick(second, "route:r1").handles!.map((h) => h.id)).toEqual(["in"]);
    expect(pick(second, "server:s1")).not.toBe(pick(first, "server:s1"));
    expect(pick(second, "server:s1").handles!.map((h) => h.id)).toEqual(["ib:b", "ib:a"]);
    expect(pick(second, "route:r2")).toBe(pick(first, "route:r2"));
  });
});

describe("buildNodes: each box's data", () => {
  const pick = (r: ReturnType<typeof nodesOf>, id: string) => r.nodes.find((n) => n.id === id)!;

  it("holds what the box draws", () => {
    const { nodes } = nodesOf(topo([ib("a", "s1", "r1"), ib("b", "s1", null), ib("c", "s2", "gone")]), new Map());
    expect(pick({ nodes, cache: new Map() }, "server:s1")).toMatchObject({
      type: "server",
      data: {
        id: "s1",
        status: "healthy",
        chips: [
          { id: "a", name: "ib-a", route: { id: "r1", name: "One", color: routeColor(0) } },
          { id: "b", name: "ib-b", route: null },
        ],
      },
    });
    // An inbound in a route that is gone is in none, as everywhere else.
    expect(nodes.find((n) => n.id === "server:s2")!.data).toMatchObject({ chips: [{ id: "c", route: null }] });
    expect(nodes.find((n) => n.id === "route:r1")).toMatchObject({
      type: "route",
      data: { id: "r1", position: 0, last: false, color: routeColor(0), panic: null, members: [{ id: "a", server: { name: "srv-s1", status: "healthy" } }] },
    });
    expect(nodes.find((n) => n.id === "route:r2")!.data).toMatchObject({ position: 1, last: true, members: [] });
    expect(nodes.find((n) => n.id === "unassigned")).toMatchObject({ type: "unassigned", data: { count: 2, shown: [{ id: "b", serverName: "srv-s1" }, { id: "c", serverName: "srv-s2" }] } });
    expect(nodes.find((n) => n.id === "distribution")).toMatchObject({ type: "distribution", data: { lines: 1 } });
  });

  it("a refetch that changes nothing a box draws keeps every node and data object", () => {
    const first = nodesOf(topo([ib("a", "s1", "r1"), ib("b", "s2", "r2")]), new Map());
    // New row objects, with a field no box draws changed (as a version bump brings).
    const bumped = { ...ib("a", "s1", "r1"), version: 2 };
    const second = nodesOf(topo([bumped, ib("b", "s2", "r2")]), first.cache);
    for (const n of second.nodes) expect(n, n.id).toBe(pick(first, n.id));
  });

  it("a change to one inbound gives new data to its server's and its route's boxes only, and keeps their other parts", () => {
    const first = nodesOf(topo([ib("a", "s1", "r1"), ib("b", "s1", "r1"), ib("c", "s2", "r2")]), new Map());
    const second = nodesOf(topo([{ ...ib("a", "s1", "r1"), name: "renamed" }, ib("b", "s1", "r1"), ib("c", "s2", "r2")]), first.cache);
    const changed = second.nodes.filter((n) => n.data !== pick(first, n.id).data).map((n) => n.id);
    expect(changed.sort()).toEqual(["route:r1", "server:s1"]);
    const chips = (r: typeof first) => (pick(r, "server:s1").data as { chips: unknown[] }).chips;
    expect(chips(second)[0]).not.toBe(chips(first)[0]);
    expect(chips(second)[1]).toBe(chips(first)[1]);
  });
});

function nodesOf(t: ReturnType<typeof topo>, cache: Parameters<typeof buildNodes>[2]) {
  return buildNodes(layoutTopology(t), indexOf(t), cache);
}

describe("boxHandles", () => {
  const t = topo([ib("a", "s1", "r1"), ib("b", "s1", null), ib("c", "s2", "r1")]);
  const layout = layoutTopology(t);
  const groups = groupTopology(t);
  const box = (id: string) => layout.boxes.find((b) => b.id === id)!;
  const centre = (h: { x: number; y: number; width?: number; height?: number }) => ({ x: h.x + h.width! / 2, y: h.y + h.height! / 2 });

  it("gives a server one source handle per chip, in chip order, at the chip's middle by the box's right edge", () => {
    const hs = boxHandles(box("server:s1"), groups);
    expect(hs.map((h) => [h.id, h.type, h.position])).toEqual([
      ["ib:a", "source", "right"],
      ["ib:b", "source", "right"],
    ]);
    // Below the box's 2 px border, 2 px inside its right edge (the chip's handle, measured in Chromium).
    expect(centre(hs[0]!)).toEqual({ x: SERVER_WIDTH - 2, y: 2 + chipTop(0) + CHIP_HEIGHT / 2 });
    expect(centre(hs[1]!)).toEqual({ x: SERVER_WIDTH - 2, y: 2 + chipTop(1) + CHIP_HEIGHT / 2 });
    expect(hs[0]).toMatchObject({ width: 8, height: 8 });
  });

  it("gives a route its entry on the left and, with members, its pipe's start on the right, both half-way down", () => {
    const r1 = box("route:r1");
    const hs = boxHandles(r1, groups);
    expect(hs.map((h) => [h.id, h.type, h.position, centre(h)])).toEqual([
      ["in", "target", "left", { x: 0, y: r1.height / 2 }],
      ["out", "source", "right", { x: ROUTE_WIDTH, y: r1.height / 2 }],
    ]);
    expect(boxHandles(box("route:r2"), groups).map((h) => h.id)).toEqual(["in"]);
  });

  it("gives the subscription box one entry and the unassigned zone none", () => {
    const d = box("distribution");
    expect(boxHandles(d, groups).map((h) => [h.id, h.type, centre(h)])).toEqual([["in", "target", { x: 0, y: d.height / 2 }]]);
    expect(boxHandles(box("unassigned"), groups)).toEqual([]);
  });

  it("gives a server without inbounds no handle", () => {
    expect(boxHandles({ ...box("server:s2"), refId: "nope" }, groups)).toEqual([]);
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

  it("dashes the edge of an inbound whose server is not available, and keeps the others solid", () => {
    const t = { ...topo([ib("a", "s1", "r1"), ib("b", "s2", "r1")]), servers: [{ id: "s1", status: "healthy" }, { id: "s2", status: "probe-failing" }] };
    const { edges } = buildEdges(t, new Map());
    expect(edges.find((e) => e.id === "ib:a")!.style?.strokeDasharray).toBeUndefined();
    expect(edges.find((e) => e.id === "ib:b")!.style?.strokeDasharray).toBe(DOWN_DASH);
    // One inbound is up: no panic, the pipe keeps the route's colour.
    expect(edges.find((e) => e.id === "pipe:r1")!.style?.stroke).toBe(routeColor(0));
  });

  it("each chip carries its protocol·transport·security, none when the topology does not say (issue 26)", () => {
    const t = topo([{ ...ib("a", "s1", "r1"), protocol: "vmess", transport: "ws", security: "tls" } as ReturnType<typeof ib>, { ...ib("b", "s1", "r1"), protocol: "vless", transport: "tcp", security: "reality" } as ReturnType<typeof ib>, ib("c", "s2", "r2")]);
    const { nodes } = buildNodes(layoutTopology(t), indexOf(t), new Map());
    const chips = (id: string) => nodes.flatMap((n) => (n.id === id && n.type === "server" ? n.data.chips : []));
    expect(chips("server:s1").map((c) => c.kind)).toEqual(["VMess·ws·TLS", "VLESS·tcp·Reality"]);
    expect(chips("server:s2").map((c) => c.kind)).toEqual([null]);
  });

  it("an inbound its healthy server does not serve: dashed edge, not served in its chip and row, and as the only one, a pipe with no line (issue 25)", () => {
    const unserved = { ...ib("a", "s1", "r1"), unavailable: "Reality needs Xray-core" };
    const t = topo([unserved, ib("b", "s2", "r2")]);
    const { edges, cache } = buildEdges(t, new Map());
    expect(edges.find((e) => e.id === "ib:a")!.style?.strokeDasharray).toBe(DOWN_DASH);
    expect(edges.find((e) => e.id === "ib:b")!.style?.strokeDasharray).toBeUndefined();
    expect(edges.find((e) => e.id === "pipe:r1")).toMatchObject({ animated: false, style: { stroke: PANIC_COLOR, strokeDasharray: NO_LINE_DASH } });
    const { nodes } = buildNodes(layoutTopology(t), indexOf(t), new Map());
    const server = nodes.find((n) => n.id === "server:s1")!;
    expect(server.type === "server" && server.data.chips[0]).toMatchObject({ id: "a", unavailable: "Reality needs Xray-core" });
    const route = nodes.find((n) => n.id === "route:r1")!;
    expect(route.type === "route" && route.data.members[0]).toMatchObject({ id: "a", unavailable: "Reality needs Xray-core" });
    // Served again: a solid edge and the route's own colour.
    const back = buildEdges(topo([{ ...unserved, unavailable: null }, ib("b", "s2", "r2")]), cache);
    expect(back.edges.find((e) => e.id === "ib:a")!.style?.strokeDasharray).toBeUndefined();
    expect(back.edges.find((e) => e.id === "pipe:r1")!.style?.stroke).toBe(routeColor(0));
  });

  it("draws the pipe of a route in panic red, thin, dotted and still when no server is even enabled", () => {
    const down = { ...topo([ib("a", "s1", "r1"), ib("b", "s2", "r2")]), servers: [{ id: "s1", status: "unavailable" }, { id: "s2", status: "disabled" }] };
    const { edges, cache } = buildEdges(down, new Map());
    const p1 = edges.find((e) => e.id === "pipe:r1")!;
    const p2 = edges.find((e) => e.id === "pipe:r2")!;
    expect(p1).toMatchObject({ animated: true, ariaLabel: "Pipe from One to the subscription", style: { stroke: PANIC_COLOR } });
    expect(p1.style?.strokeDasharray).toBeUndefined();
    expect(p2).toMatchObject({ animated: false, style: { stroke: PANIC_COLOR, strokeDasharray: NO_LINE_DASH } });
    // Recovery rebuilds the pipe and the edge; nothing else changed.
    const healed = buildEdges({ ...down, servers: [{ id: "s1", status: "healthy" }, { id: "s2", status: "disabled" }] }, cache);
    expect(healed.edges.find((e) => e.id === "pipe:r1")!.style?.stroke).toBe(routeColor(0));
    expect(healed.edges.find((e) => e.id === "ib:a")!.style?.strokeDasharray).toBeUndefined();
    expect(healed.edges.find((e) => e.id === "pipe:r2")).toBe(p2);
  });
});

describe("inboundTraffic", () => {
  const servers = [
    { id: "s1", trafficBps: 90e6 },
    { id: "s2", trafficBps: 40e6 },
    { id: "s3", trafficBps: 0 },
  ];
  it("gives a server's only inbound all of its traffic, exactly", () => {
    expect(inboundTraffic(servers, [{ id: "a", serverId: "s2", users: 0 }]).get("a")).toEqual({ bps: 40e6, estimated: false });
  });
  it("splits a server's traffic by assigned users, marked as an estimate", () => {
    const t = inboundTraffic(servers, [
      { id: "a", serverId: "s1", users: 2 },
      { id: "b", serverId: "s1", users: 1 },
      { id: "c", serverId: "s1", users: 0 },
    ]);
    expect(t.get("a")).toEqual({ bps: 60e6, estimated: true });
    expect(t.get("b")).toEqual({ bps: 30e6, estimated: true });
    expect(t.get("c")).toEqual({ bps: 0, estimated: true });
  });
  it("splits evenly when nobody is assigned, and gives 0 for an idle or unknown server", () => {
    const t = inboundTraffic(servers, [
      { id: "a", serverId: "s2", users: 0 },
      { id: "b", serverId: "s2", users: 0 },
      { id: "c", serverId: "s3", users: 5 },
      { id: "d", serverId: "gone", users: 1 },
    ]);
    expect(t.get("a")!.bps).toBe(20e6);
    expect(t.get("b")!.bps).toBe(20e6);
    expect(t.get("c")!.bps).toBe(0);
    expect(t.get("d")).toEqual({ bps: 0, estimated: false });
  });
  it("credits nothing to an inbound its server does not serve: the served ones share all of it (issue 25)", () => {
    const t = inboundTraffic(servers, [
      { id: "reality", serverId: "s1", users: 5, unavailable: "Reality needs Xray-core" },
      { id: "plain", serverId: "s1", users: 1, unavailable: null },
    ]);
    expect(t.get("reality")).toEqual({ bps: 0, estimated: false });
    expect(t.get("plain")).toEqual({ bps: 90e6, estimated: false });
  });
});
