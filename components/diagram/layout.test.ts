import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  layoutTopology,
  serverHeight,
  routeHeight,
  chipTop,
  countCrossings,
  countLayeredCrossings,
  CHIP_HEIGHT,
  MAX_SERVER_COLUMNS,
  MIN_COLUMN_HEIGHT,
  ROW_GAP,
  SERVER_COL_GAP,
  SERVER_WIDTH,
  type Box,
  type Layout,
  type LayoutInput,
  type Segment,
} from "./layout";

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

  // How fast: npm run bench:pure (a wall clock here failed on a busy machine).
  it("lays out 100 servers / 400 inbounds / 40 routes with no overlap", () => {
    const input = synthetic(100, 400, 40);
    const l = layoutTopology(input);
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

/** A small seeded generator (LCG), so the random topologies are the same on every run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const pad = (i: number) => String(i).padStart(4, "0");

/** Servers named in alphabetical order (as the API sends them), inbounds in random routes. */
function randomTopology(seed: number, servers: number, inbounds: number, routes: number, unassignedShare = 0.1): LayoutInput {
  const rnd = seeded(seed);
  return {
    servers: Array.from({ length: servers }, (_, i) => ({ id: `s${pad(i)}` })),
    routes: Array.from({ length: routes }, (_, i) => ({ id: `r${i}` })),
    inbounds: Array.from({ length: inbounds }, (_, i) => ({
      id: `i${pad(i)}`,
      serverId: `s${pad(Math.floor(rnd() * servers))}`,
      routeId: routes > 0 && rnd() >= unassignedShare ? `r${Math.floor(rnd() * routes)}` : null,
    })),
  };
}

/** The server boxes as the diagram drew them before the ordering: alphabetical, filled column by column. */
function alphabeticalGrid(input: LayoutInput, columns: number): Map<string, { x: number; y: number }> {
  const heights = input.servers.map((s) => serverHeight(input.inbounds.filter((i) => i.serverId === s.id).length));
  const share = heights.reduce((a, h) => a + h + ROW_GAP, 0) / columns;
  const placed = new Map<string, { x: number; y: number }>();
  let col = 0;
  let y = 0;
  input.servers.forEach((s, k) => {
    if (y > 0 && col < columns - 1 && y + heights[k]! / 2 > share) {
      col++;
      y = 0;
    }
    placed.set(s.id, { x: col * (SERVER_WIDTH + SERVER_COL_GAP), y });
    y += heights[k]! + ROW_GAP;
  });
  return placed;
}

/** The drawn chip → route edges; a server's chips are in the input's order. */
function segmentsOf(input: LayoutInput, layout: Layout, servers: ReadonlyMap<string, { x: number; y: number }>): { segments: Segment[]; toX: number } {
  const box = new Map(layout.boxes.map((b) => [b.id, b]));
  const segments: Segment[] = [];
  let toX = 0;
  for (const s of input.servers) {
    const at = servers.get(s.id)!;
    const own = input.inbounds.filter((i) => i.serverId === s.id);
    own.forEach((c, k) => {
      const route = c.routeId === null ? undefined : box.get(`route:${c.routeId}`);
      if (!route) return;
      toX = route.x;
      segments.push({ x: at.x + SERVER_WIDTH, y: at.y + chipTop(k) + CHIP_HEIGHT / 2, toY: route.y + route.height / 2 });
    });
  }
  return { segments, toX };
}

function serverPositions(layout: Layout): Map<string, { x: number; y: number }> {
  return new Map(layout.boxes.filter((b) => b.kind === "server").map((b) => [b.refId!, { x: b.x, y: b.y }]));
}

function serverColumns(layout: Layout): number {
  return new Set(layout.boxes.filter((b) => b.kind === "server").map((b) => b.x)).size;
}

/** Crossings of the new drawing and of the alphabetical grid, on the same routes column. */
function compare(input: LayoutInput): { ordered: number; alphabetical: number; layout: Layout } {
  const layout = layoutTopology(input);
  const columns = Math.round((layout.boxes.find((b) => b.kind === "unassigned")!.x - 260 + SERVER_COL_GAP) / (SERVER_WIDTH + SERVER_COL_GAP));
  const now = segmentsOf(input, layout, serverPositions(layout));
  const before = segmentsOf(input, layout, alphabeticalGrid(input, columns));
  return { ordered: countCrossings(now.segments, now.toX), alphabetical: countCrossings(before.segments, before.toX), layout };
}

function serverOrderTopToBottom(layout: Layout): string[] {
  return layout.boxes
    .filter((b) => b.kind === "server")
    .sort((a, b) => a.y - b.y || a.x - b.x)
    .map((b) => b.refId!);
}

describe("countLayeredCrossings", () => {
  it("counts the pairs whose order flips between the layers, not those sharing an end", () => {
    expect(countLayeredCrossings([])).toBe(0);
    expect(countLayeredCrossings([0, 1, 2])).toBe(0);
    expect(countLayeredCrossings([2, 1, 0])).toBe(3);
    expect(countLayeredCrossings([1, 1, 0])).toBe(2);
    expect(countLayeredCrossings([0, 0, 0])).toBe(0);
  });

  it("agrees with counting every pair", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 80 }), (seq) => {
        let brute = 0;
        for (let i = 0; i < seq.length; i++) for (let j = i + 1; j < seq.length; j++) if (seq[i]! > seq[j]!) brute++;
        expect(countLayeredCrossings(seq)).toBe(brute);
      }),
    );
  });
});

describe("countCrossings", () => {
  /** Proper intersection of two segments (touching or sharing an end does not count). */
  function properlyCross(a: Segment, b: Segment, toX: number): boolean {
    const orient = (px: number, py: number, qx: number, qy: number, rx: number, ry: number) => Math.sign((qx - px) * (ry - py) - (qy - py) * (rx - px));
    const [ax, ay, bx, by, cx, cy, dx, dy] = [a.x, a.y, toX, a.toY, b.x, b.y, toX, b.toY];
    return orient(ax, ay, bx, by, cx, cy) * orient(ax, ay, bx, by, dx, dy) < 0 && orient(cx, cy, dx, dy, ax, ay) * orient(cx, cy, dx, dy, bx, by) < 0;
  }

  it("counts crossings of edges from one column as order flips", () => {
    const toX = 100;
    expect(countCrossings([{ x: 0, y: 0, toY: 10 }, { x: 0, y: 10, toY: 0 }], toX)).toBe(1);
    expect(countCrossings([{ x: 0, y: 0, toY: 0 }, { x: 0, y: 10, toY: 10 }], toX)).toBe(0);
    // Two edges into the same route handle meet there; they do not cross.
    expect(countCrossings([{ x: 0, y: 0, toY: 5 }, { x: 0, y: 10, toY: 5 }], toX)).toBe(0);
  });

  it("compares edges from different columns where the right one starts", () => {
    // From x=0 going down steeply; from x=50 flat, starting below the first one's y at x=50.
    expect(countCrossings([{ x: 0, y: 0, toY: 100 }, { x: 50, y: 60, toY: 60 }], 100)).toBe(1);
    // Same ends, but the right edge starts above where the left one is at x=50: no crossing.
    expect(countCrossings([{ x: 0, y: 0, toY: 100 }, { x: 50, y: 40, toY: 60 }], 100)).toBe(0);
  });

  it("agrees with intersecting every pair of segments", () => {
    const segment = fc.record({ x: fc.constantFrom(0, 300, 600, 900), y: fc.integer({ min: 0, max: 997 }), toY: fc.integer({ min: 0, max: 991 }) });
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 60 }), (segments) => {
        const toX = 1201;
        let brute = 0;
        for (let i = 0; i < segments.length; i++) for (let j = i + 1; j < segments.length; j++) if (properlyCross(segments[i]!, segments[j]!, toX)) brute++;
        expect(countCrossings(segments, toX)).toBe(brute);
      }),
      { numRuns: 200 },
    );
  });
});

describe("server ordering", () => {
  it("puts the server feeding a higher route above the one feeding a lower route", () => {
    // Alphabetically a, b, c feed the routes bottom-up: the grid draws 3 crossings.
    const input: LayoutInput = {
      servers: [{ id: "a" }, { id: "b" }, { id: "c" }],
      routes: [{ id: "r0" }, { id: "r1" }, { id: "r2" }],
      inbounds: [
        { id: "ia", serverId: "a", routeId: "r2" },
        { id: "ib", serverId: "b", routeId: "r1" },
        { id: "ic", serverId: "c", routeId: "r0" },
      ],
    };
    const { ordered, alphabetical, layout } = compare(input);
    expect(alphabetical).toBe(3);
    expect(ordered).toBe(0);
    expect(serverOrderTopToBottom(layout)).toEqual(["c", "b", "a"]);
    expect(layout.serverOrder).toEqual(["c", "b", "a"]);
  });

  it("strictly reduces crossings of a big fleet fed in reverse, over several columns", () => {
    const servers = 60;
    const input: LayoutInput = {
      servers: Array.from({ length: servers }, (_, i) => ({ id: `s${pad(i)}` })),
      routes: Array.from({ length: 12 }, (_, i) => ({ id: `r${i}` })),
      inbounds: Array.from({ length: servers * 3 }, (_, i) => ({ id: `i${pad(i)}`, serverId: `s${pad(i % servers)}`, routeId: `r${11 - Math.floor(((i % servers) * 12) / servers)}` })),
    };
    const { ordered, alphabetical, layout } = compare(input);
    expect(serverColumns(layout)).toBeGreaterThan(1);
    expect(ordered).toBeLessThan(alphabetical / 2);
    // The five servers feeding the first route come first, tied, in name order.
    expect(layout.serverOrder.slice(0, 5)).toEqual([55, 56, 57, 58, 59].map((i) => `s${pad(i)}`));
  });

  it("moves a server that feeds one route out of the way of two that cross", () => {
    // b feeds r0 and r2, a and c feed r1; the best order puts b between… or a and c together.
    const input: LayoutInput = {
      servers: [{ id: "a" }, { id: "b" }, { id: "c" }, { id: "d" }],
      routes: [{ id: "r0" }, { id: "r1" }, { id: "r2" }, { id: "r3" }],
      inbounds: [
        { id: "a1", serverId: "a", routeId: "r3" },
        { id: "b1", serverId: "b", routeId: "r0" },
        { id: "b2", serverId: "b", routeId: "r2" },
        { id: "c1", serverId: "c", routeId: "r1" },
        { id: "d1", serverId: "d", routeId: "r0" },
      ],
    };
    const { ordered, alphabetical } = compare(input);
    expect(ordered).toBeLessThan(alphabetical);
    expect(ordered).toBe(1); // b's r0 and r2 straddle c's r1: one crossing is unavoidable
  });

  it("never draws more crossings than the alphabetical grid, on random topologies", () => {
    let better = 0;
    const sizes: Array<[number, number, number]> = [
      [1, 3, 2],
      [3, 6, 3],
      [8, 20, 4],
      [20, 60, 8],
      [40, 160, 12],
      [120, 480, 30],
    ];
    for (let seed = 1; seed <= 10; seed++) {
      for (const [s, i, r] of sizes) {
        const { ordered, alphabetical } = compare(randomTopology(seed * 7919 + s, s, i, r));
        expect(ordered, `seed ${seed}, ${s} servers`).toBeLessThanOrEqual(alphabetical);
        if (ordered < alphabetical) better++;
      }
    }
    // And it is not merely as good: on most of them it is strictly better.
    expect(better).toBeGreaterThan(40);
  });

  it("is deterministic, and keeps the previous order for ties", () => {
    const input = randomTopology(42, 40, 120, 10);
    expect(layoutTopology(input)).toEqual(layoutTopology(structuredClone(input)));
    // Three servers that tie (each feeds route r0 only): without history, input order;
    // with a previous order, that order.
    const tie: LayoutInput = {
      servers: [{ id: "a" }, { id: "b" }, { id: "c" }],
      routes: [{ id: "r0" }],
      inbounds: ["a", "b", "c"].map((s) => ({ id: `i${s}`, serverId: s, routeId: "r0" })),
    };
    expect(layoutTopology(tie).serverOrder).toEqual(["a", "b", "c"]);
    expect(layoutTopology(tie, { previousOrder: ["c", "a", "b"] }).serverOrder).toEqual(["c", "a", "b"]);
    expect(layoutTopology(tie, { previousOrder: ["c", "a", "b"] })).toEqual(layoutTopology(tie, { previousOrder: ["c", "a", "b"] }));
  });

  it("moving one inbound reorders only its server: the others keep their order and, above it, their places", () => {
    const input = randomTopology(5, 60, 120, 12);
    const before = layoutTopology(input);
    const moved = input.inbounds.find((i) => i.routeId !== null)!;
    const next: LayoutInput = { ...input, inbounds: input.inbounds.map((i) => (i.id === moved.id ? { ...i, routeId: "r11" } : i)) };
    const after = layoutTopology(next, { previousOrder: before.serverOrder });
    const others = (order: string[]) => order.filter((id) => id !== moved.serverId);
    expect(others(after.serverOrder)).toEqual(others(before.serverOrder));
    // Servers before both the old and the new place of the moved one do not move at all.
    const firstChange = Math.min(before.serverOrder.indexOf(moved.serverId), after.serverOrder.indexOf(moved.serverId));
    const was = serverPositions(before);
    const now = serverPositions(after);
    for (const id of before.serverOrder.slice(0, firstChange)) expect(now.get(id)).toEqual(was.get(id));
  });

  it("handles no routes, unassigned-only inbounds, one server and servers with no inbound", () => {
    const noRoutes = layoutTopology({ servers: [{ id: "b" }, { id: "a" }], routes: [], inbounds: [{ id: "1", serverId: "a", routeId: null }] });
    // No edges at all: the input order stands; the server with inbounds first, the empty one last.
    expect(noRoutes.serverOrder).toEqual(["a", "b"]);
    assertNoOverlap(noRoutes.boxes);

    const unassignedOnly = layoutTopology({
      servers: [{ id: "a" }, { id: "b" }, { id: "c" }],
      routes: [{ id: "r0" }],
      inbounds: [
        { id: "1", serverId: "a", routeId: "r0" },
        { id: "2", serverId: "b", routeId: null },
        { id: "3", serverId: "c", routeId: "gone" },
      ],
    });
    // Servers with only unassigned inbounds (a missing route counts as none) sit up by the Unassigned zone.
    expect(unassignedOnly.serverOrder).toEqual(["b", "c", "a"]);

    const one = layoutTopology({ servers: [{ id: "a" }], routes: [{ id: "r0" }], inbounds: [{ id: "1", serverId: "a", routeId: "r0" }] });
    expect(one.boxes.find((b) => b.kind === "server")).toMatchObject({ x: 0, y: 0, height: serverHeight(1) });

    const none = layoutTopology({ servers: [], routes: [{ id: "r0" }], inbounds: [] });
    expect(none.boxes.filter((b) => b.kind === "server")).toEqual([]);
    expect(none.serverOrder).toEqual([]);
  });

  it("handles servers with inbounds in many routes", () => {
    const routes = Array.from({ length: 30 }, (_, i) => ({ id: `r${i}` }));
    const input: LayoutInput = {
      servers: [{ id: "hub" }, { id: "x" }, { id: "y" }, { id: "z" }],
      routes,
      inbounds: [
        ...routes.map((r, i) => ({ id: `hub${pad(i)}`, serverId: "hub", routeId: r.id })),
        { id: "x1", serverId: "x", routeId: "r29" },
        { id: "y1", serverId: "y", routeId: "r0" },
        { id: "z1", serverId: "z", routeId: "r15" },
      ],
    };
    const { ordered, alphabetical, layout } = compare(input);
    expect(ordered).toBeLessThan(alphabetical);
    expect(layout.serverOrder.indexOf("y")).toBeLessThan(layout.serverOrder.indexOf("x"));
    assertNoOverlap(layout.boxes);
  });

  it("keeps server columns within the limit and never overlaps boxes, for random topologies", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const l = layoutTopology(randomTopology(seed, 1 + (seed * 37) % 300, (seed * 113) % 900, (seed * 7) % 40));
      expect(serverColumns(l)).toBeLessThanOrEqual(MAX_SERVER_COLUMNS);
      assertNoOverlap(l.boxes);
    }
  });

  it("stacks servers no taller than the grid would need (bench: 500 servers × 2,000 inbounds × 100 routes)", () => {
    const input = randomTopology(2026, 500, 2000, 100);
    const t0 = performance.now();
    const first = layoutTopology(input);
    const t1 = performance.now();
    const runs = 5;
    for (let k = 0; k < runs; k++) layoutTopology(input, { previousOrder: first.serverOrder });
    const t2 = performance.now();
    const { ordered, alphabetical } = compare(input);
    // Measured, not asserted: the figure depends on the machine.
    console.info(
      `layout bench 500/2000/100: first ${(t1 - t0).toFixed(1)} ms, then ${((t2 - t1) / runs).toFixed(1)} ms a layout; crossings ${ordered} (alphabetical grid: ${alphabetical})`,
    );
    expect(first.boxes.length).toBe(602);
    assertNoOverlap(first.boxes);
    const serversBottom = Math.max(...first.boxes.filter((b) => b.kind === "server").map((b) => b.y + b.height));
    expect(serversBottom).toBeLessThanOrEqual(Math.max(first.height, MIN_COLUMN_HEIGHT));
    expect(ordered).toBeLessThan(alphabetical);
  });
});
