import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { layoutTopology, serverHeight, routeHeight, chipTop, CHIP_HEIGHT, type Box, type LayoutInput } from "./layout";

function synthetic(servers: number, inbounds: number, routes: number, unassignedEvery = 10): LayoutInput {
  return {
    servers: Array.from({ length: servers }, (_, i) => ({ id: `s${i}` })),
    routes: Array.from({ length: routes }, (_, i) => ({ id: `r${i}` })),
    inbounds: Array.from({ length: inbounds }, (_, i) => ({
      id: `i${i}`,
      serverId: `s${i % servers}`,
      routeId: routes > 0 && i % unassignedEvery !== 0 ? `r${(i * 7) % routes}` : null,
    })),
  };
}

function overlaps(a: Box, b: Box): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

function assertNoOverlap(boxes: Box[]) {
  // Sweep by x column then y: O(n log n) instead of all pairs.
  const sorted = [...boxes].sort((a, b) => a.x - b.x || a.y - b.y);
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i + 1; j < sorted.length && sorted[j]!.x < sorted[i]!.x + sorted[i]!.width; j++) {
      if (overlaps(sorted[i]!, sorted[j]!)) throw new Error(`${sorted[i]!.id} overlaps ${sorted[j]!.id}`);
    }
  }
}

describe("layoutTopology", () => {
  it("places servers left, Unassigned and routes in the middle in position order, the subscription right", () => {
    const l = layoutTopology(synthetic(3, 8, 3));
    const servers = l.boxes.filter((b) => b.kind === "server");
    const routes = l.boxes.filter((b) => b.kind === "route");
    const unassigned = l.boxes.find((b) => b.kind === "unassigned")!;
    const dist = l.boxes.find((b) => b.kind === "distribution")!;
    expect(servers.map((s) => s.refId)).toEqual(["s0", "s1", "s2"]);
    expect(routes.map((r) => r.refId)).toEqual(["r0", "r1", "r2"]);
    for (let i = 1; i < routes.length; i++) expect(routes[i]!.y).toBeGreaterThan(routes[i - 1]!.y);
    expect(unassigned.y).toBeLessThan(routes[0]!.y);
    expect(Math.max(...servers.map((s) => s.x + s.width))).toBeLessThan(routes[0]!.x);
    expect(routes[0]!.x + routes[0]!.width).toBeLessThan(dist.x);
  });

  it("sizes each box for its content: chips in servers, inbound lines in routes", () => {
    const input: LayoutInput = {
      servers: [{ id: "a" }, { id: "b" }],
      routes: [{ id: "r" }, { id: "empty" }],
      inbounds: [
        { id: "1", serverId: "a", routeId: "r" },
        { id: "2", serverId: "a", routeId: "r" },
        { id: "3", serverId: "a", routeId: null },
      ],
    };
    const l = layoutTopology(input);
    const a = l.boxes.find((b) => b.id === "server:a")!;
    expect(a.height).toBe(serverHeight(3));
    expect(chipTop(2) + CHIP_HEIGHT).toBeLessThanOrEqual(a.height);
    expect(l.boxes.find((b) => b.id === "server:b")!.height).toBe(serverHeight(0));
    expect(l.boxes.find((b) => b.id === "route:r")!.height).toBe(routeHeight(2));
    // An empty route still has room for its "Hidden from users (empty)" line.
    expect(l.boxes.find((b) => b.id === "route:empty")!.height).toBe(routeHeight(1));
  });

  it("spreads a big fleet over a few server columns, balanced against the routes column", () => {
    const small = layoutTopology(synthetic(2, 4, 2));
    expect(new Set(small.boxes.filter((b) => b.kind === "server").map((b) => b.x)).size).toBe(1);
    const big = layoutTopology(synthetic(100, 400, 40));
    const xs = new Set(big.boxes.filter((b) => b.kind === "server").map((b) => b.x));
    expect(xs.size).toBeGreaterThan(1);
    expect(xs.size).toBeLessThanOrEqual(4);
    const routes = big.boxes.filter((b) => b.kind === "route");
    const routesBottom = Math.max(...routes.map((r) => r.y + r.height));
    const serversBottom = Math.max(...big.boxes.filter((b) => b.kind === "server").map((b) => b.y + b.height));
    expect(serversBottom).toBeLessThan(routesBottom * 1.5);
  });

  it("is deterministic", () => {
    const input = synthetic(40, 160, 12);
    expect(layoutTopology(input)).toEqual(layoutTopology(structuredClone(input)));
  });

  it("never overlaps two boxes, for any topology", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 0, max: 200 }), fc.integer({ min: 0, max: 30 }), fc.integer({ min: 1, max: 12 }), (s, i, r, u) => {
        const l = layoutTopology(synthetic(s, i, r, u));
        assertNoOverlap(l.boxes);
        for (const b of l.boxes) {
          expect(b.x + b.width).toBeLessThanOrEqual(l.width);
          expect(b.y + b.height).toBeLessThanOrEqual(l.height);
        }
      }),
      { numRuns: 60 },
    );
  });

  it("lays out 100 servers / 400 inbounds / 40 routes quickly, with no overlap", () => {
    const input = synthetic(100, 400, 40);
    const t0 = performance.now();
    const l = layoutTopology(input);
    expect(performance.now() - t0).toBeLessThan(50);
    expect(l.boxes.length).toBe(100 + 40 + 2);
    assertNoOverlap(l.boxes);
  });

  it("handles 500 servers / 2,000 inbounds / 100 routes", () => {
    const l = layoutTopology(synthetic(500, 2000, 100));
    expect(l.boxes.length).toBe(602);
    assertNoOverlap(l.boxes);
  });

  it("keeps the subscription box next to the routes: centred for a short column, at the top for a tall one", () => {
    const small = layoutTopology(synthetic(3, 6, 2));
    const sd = small.boxes.find((b) => b.kind === "distribution")!;
    const sr = small.boxes.filter((b) => b.kind === "route");
    expect(sd.y).toBeGreaterThanOrEqual(sr[0]!.y - sd.height);
    const big = layoutTopology(synthetic(100, 400, 40));
    const bd = big.boxes.find((b) => b.kind === "distribution")!;
    expect(bd.y).toBe(big.boxes.find((b) => b.kind === "route")!.y);
  });
});
