/**
 * Where every box of the diagram goes: a pure function of the topology (no DOM, no
 * randomness), so the same cluster always draws the same way and it can be unit-tested.
 *
 *   servers (with their inbound chips) │ Unassigned + routes in position order │ subscription
 *
 * Routes keep the operator's order. Servers are ordered against it so that their chips sit
 * beside the routes they feed: a one-sided barycentre ordering of the layered graph
 * chips → routes (route places, not pixels), refined by adjacent swaps, then stacked across
 * the server columns in that order. If the plain grid of the starting order (alphabetical,
 * or the previous layout's) would cross fewer edges, it is kept instead, so the ordering
 * never draws more crossings than the alphabetical grid did.
 *
 * The node components render with the same constants, so a box's content fits its size.
 */

import { effectiveRouteId } from "@/core/topology";

export const SERVER_WIDTH = 300;
export const SERVER_HEADER = 88;
export const CHIP_HEIGHT = 34;
export const CHIP_GAP = 6;
export const SERVER_PAD = 12;
export const SERVER_EMPTY_BODY = 26;

export const ROUTE_WIDTH = 300;
export const ROUTE_HEADER = 74;
export const ITEM_HEIGHT = 24;
export const ROUTE_PAD = 14;

export const UNASSIGNED_HEADER = 58;
/** The Unassigned zone lists this many inbounds, then "+ N more" (the warnings name all). */
export const UNASSIGNED_MAX_ITEMS = 8;

export const DIST_WIDTH = 250;
export const DIST_HEIGHT = 124;

export const ROW_GAP = 24;
export const SERVER_COL_GAP = 48;
/** Servers go in up to this many columns, so a big fleet is not one endless column. */
export const MAX_SERVER_COLUMNS = 4;
/** A server column may grow to the routes column's height, and at least to this. */
export const MIN_COLUMN_HEIGHT = 900;
export const SERVERS_TO_ROUTES = 260;
export const ROUTES_TO_DIST = 180;
/** Above this routes-column height the subscription box sits at the top, not the middle. */
export const CENTER_DIST_MAX = 1400;

export type BoxKind = "server" | "route" | "unassigned" | "distribution";

export interface Box {
  /** React Flow node id: `server:<id>`, `route:<id>`, `unassigned`, `distribution`. */
  id: string;
  kind: BoxKind;
  /** The server's or route's id; null for the unassigned zone and the subscription box. */
  refId: string | null;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface LayoutInput {
  servers: ReadonlyArray<{ id: string }>;
  inbounds: ReadonlyArray<{ id: string; serverId: string; routeId: string | null }>;
  /** In position order. */
  routes: ReadonlyArray<{ id: string }>;
}

export interface Layout {
  boxes: Box[];
  width: number;
  height: number;
  /** Server ids in the order they were placed; pass it back as `previousOrder` next time. */
  serverOrder: string[];
}

export interface LayoutOptions {
  /**
   * The server order of the previous layout. Servers that tie keep this order (then the
   * input's), so a move of one inbound does not reshuffle servers it did not touch.
   */
  previousOrder?: readonly string[];
}

export const serverNodeId = (id: string) => `server:${id}`;
export const routeNodeId = (id: string) => `route:${id}`;
export const UNASSIGNED_NODE_ID = "unassigned";
export const DISTRIBUTION_NODE_ID = "distribution";

export function serverHeight(inboundCount: number): number {
  const body = inboundCount === 0 ? SERVER_EMPTY_BODY : inboundCount * CHIP_HEIGHT + (inboundCount - 1) * CHIP_GAP;
  return SERVER_HEADER + body + SERVER_PAD;
}

/** Offset of a chip's top inside its server box. */
export function chipTop(index: number): number {
  return SERVER_HEADER + index * (CHIP_HEIGHT + CHIP_GAP);
}

export function routeHeight(inboundCount: number): number {
  return ROUTE_HEADER + Math.max(1, inboundCount) * ITEM_HEIGHT + ROUTE_PAD;
}

export function unassignedHeight(inboundCount: number): number {
  const lines = inboundCount > UNASSIGNED_MAX_ITEMS ? UNASSIGNED_MAX_ITEMS + 1 : Math.max(1, inboundCount);
  return UNASSIGNED_HEADER + lines * ITEM_HEIGHT + ROUTE_PAD;
}

/**
 * Crossings of a two-layer drawing: `sequence[k]` is the right-hand position that the k-th
 * left-hand item links to. Two links cross when their order flips between the layers;
 * links that share an end do not cross. Counted as inversions by merge sort, O(n log n).
 */
export function countLayeredCrossings(sequence: readonly number[]): number {
  return inversions(Float64Array.from(sequence));
}

/** Pairs i < j with a[i] > a[j], by a bottom-up merge sort that sorts `a` in place. */
function inversions(a: Float64Array<ArrayBuffer>): number {
  const n = a.length;
  let src = a;
  let dst = new Float64Array(n);
  let count = 0;
  for (let width = 1; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      let k = lo;
      while (i < mid && j < hi) {
        if (src[i]! <= src[j]!) dst[k++] = src[i++]!;
        else {
          count += mid - i;
          dst[k++] = src[j++]!;
        }
      }
      while (i < mid) dst[k++] = src[i++]!;
      while (j < hi) dst[k++] = src[j++]!;
    }
    [src, dst] = [dst, src];
  }
  return count;
}

/** A straight edge from (x, y) to (toX, toY); every edge of a drawing ends on the same x. */
export interface Segment {
  x: number;
  y: number;
  toY: number;
}

/** Crossings among edges that all start on one x, given their starts and ends. */
function crossingsAtStart(ys: Float64Array, toYs: Float64Array): number {
  const order = new Uint32Array(ys.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  // Same start: no crossing, whatever the ends (ties sort by end, so they count nothing).
  order.sort((i, j) => ys[i]! - ys[j]! || toYs[i]! - toYs[j]!);
  const ends = new Float64Array(order.length);
  for (let k = 0; k < order.length; k++) ends[k] = toYs[order[k]!]!;
  return inversions(ends);
}

function concat(a: Float64Array, b: Float64Array): Float64Array<ArrayBuffer> {
  const out = new Float64Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/**
 * Crossings between straight edges that start anywhere left of `toX` and all end on it (the
 * routes column). Two edges starting at x1 ≤ x2 cross when their order at x2 differs from
 * their order at `toX`, so edges are grouped by start column and each pair of columns is
 * compared at the right one. O(C² · E log E) for C distinct start columns. React Flow's
 * bezier edges between the same two columns cross exactly when these segments do.
 */
export function countCrossings(edges: readonly Segment[], toX: number): number {
  const byX = new Map<number, Segment[]>();
  for (const e of edges) {
    const list = byX.get(e.x);
    if (list) list.push(e);
    else byX.set(e.x, [e]);
  }
  const xs = [...byX.keys()].sort((a, b) => a - b);
  const columns = xs.map((x) => {
    const list = byX.get(x)!;
    return { x, ys: Float64Array.from(list, (e) => e.y), toYs: Float64Array.from(list, (e) => e.toY) };
  });
  let total = 0;
  columns.forEach((right, b) => {
    const own = crossingsAtStart(right.ys, right.toYs);
    total += own;
    for (let a = 0; a < b; a++) {
      const left = columns[a]!;
      const t = (right.x - left.x) / (toX - left.x);
      const projected = left.ys.map((y, k) => y + (left.toYs[k]! - y) * t);
      total += crossingsAtStart(concat(projected, right.ys), concat(left.toYs, right.toYs)) - crossingsAtStart(projected, left.toYs) - own;
    }
  });
  return total;
}

interface Placed {
  x: number;
  y: number;
}

interface ServerFacts {
  id: string;
  height: number;
  /** Route indices of its routed chips, in the chips' order. */
  ranks: number[];
  /** The same, ascending: how its edges cross another server's does not depend on chip order. */
  sortedRanks: number[];
  /**
   * The ordering key: the barycentre of its routes' places in the route order. Places, not
   * pixels, so a route growing or shrinking reorders nothing.
   */
  key: number;
}

/** a above b: how many of their edges cross. Both rank lists are ascending. */
function pairCrossings(a: readonly number[], b: readonly number[]): number {
  // Pairs (p in a, q in b) with p > q.
  let count = 0;
  let j = 0;
  for (const p of a) {
    while (j < b.length && b[j]! < p) j++;
    count += j;
  }
  return count;
}

const MAX_SWAP_PASSES = 8;

/** Barycentre order (ties: the starting order), then adjacent swaps while one removes crossings. */
function orderServers(facts: readonly ServerFacts[], startRank: ReadonlyMap<string, number>): ServerFacts[] {
  const order = [...facts].sort((a, b) => a.key - b.key || startRank.get(a.id)! - startRank.get(b.id)!);
  for (let pass = 0; pass < MAX_SWAP_PASSES; pass++) {
    let swapped = false;
    for (let i = 0; i + 1 < order.length; i++) {
      const u = order[i]!;
      const v = order[i + 1]!;
      if (u.ranks.length === 0 || v.ranks.length === 0) continue;
      if (pairCrossings(u.sortedRanks, v.sortedRanks) > pairCrossings(v.sortedRanks, u.sortedRanks)) {
        order[i] = v;
        order[i + 1] = u;
        swapped = true;
      }
    }
    if (!swapped) break;
  }
  return order;
}

const columnX = (col: number) => col * (SERVER_WIDTH + SERVER_COL_GAP);

/** The plain grid: columns filled in order, each up to an even share of the total height. */
function gridPlacement(order: readonly ServerFacts[], columns: number): Map<string, Placed> {
  const total = order.reduce((a, s) => a + s.height + ROW_GAP, 0);
  const share = total / columns;
  const placed = new Map<string, Placed>();
  let col = 0;
  let y = 0;
  for (const s of order) {
    if (y > 0 && col < columns - 1 && y + s.height / 2 > share) {
      col++;
      y = 0;
    }
    placed.set(s.id, { x: columnX(col), y });
    y += s.height + ROW_GAP;
  }
  return placed;
}

/**
 * Servers in order, each into the shortest column so far (ties: the one nearest the
 * routes), stacked without gaps: servers that are next in the order sit side by side,
 * level with one another, so their edges run to neighbouring routes. Boxes move only when
 * the order changes, not when a route grows or shrinks.
 */
function stackedPlacement(order: readonly ServerFacts[], columns: number): Map<string, Placed> {
  const bottoms = new Array<number>(columns).fill(0);
  const placed = new Map<string, Placed>();
  for (const s of order) {
    let best = columns - 1;
    for (let c = columns - 2; c >= 0; c--) if (bottoms[c]! < bottoms[best]!) best = c;
    placed.set(s.id, { x: columnX(best), y: bottoms[best]! });
    bottoms[best] = bottoms[best]! + s.height + ROW_GAP;
  }
  return placed;
}

/** The chip → route edges of a placement, as straight segments ending on the routes column. */
function placementSegments(facts: readonly ServerFacts[], placed: ReadonlyMap<string, Placed>, chipY: ReadonlyMap<string, number[]>, routeYs: readonly number[]): Segment[] {
  const segments: Segment[] = [];
  for (const s of facts) {
    const p = placed.get(s.id)!;
    const ys = chipY.get(s.id)!;
    s.ranks.forEach((r, k) => segments.push({ x: p.x + SERVER_WIDTH, y: p.y + ys[k]!, toY: routeYs[r]! }));
  }
  return segments;
}

export function layoutTopology(input: LayoutInput, options: LayoutOptions = {}): Layout {
  const routeIndex = new Map(input.routes.map((r, i) => [r.id, i]));
  const byServer = new Map<string, Array<{ routeId: string | null }>>();
  const perRoute = new Map<string, number>();
  let unassigned = 0;
  for (const i of input.inbounds) {
    const routeId = effectiveRouteId(i, routeIndex);
    const list = byServer.get(i.serverId);
    if (list) list.push({ routeId });
    else byServer.set(i.serverId, [{ routeId }]);
    if (routeId !== null) perRoute.set(routeId, (perRoute.get(routeId) ?? 0) + 1);
    else unassigned++;
  }

  // The routes column does not depend on the servers: lay it out first (its x comes once
  // the number of server columns is known).
  const uHeight = unassignedHeight(unassigned);
  const routeBoxes: Array<{ id: string; y: number; height: number }> = [];
  let y = uHeight + ROW_GAP * 2;
  const routesTop = y;
  for (const r of input.routes) {
    const height = routeHeight(perRoute.get(r.id) ?? 0);
    routeBoxes.push({ id: r.id, y, height });
    y += height + ROW_GAP;
  }
  const routesBottom = input.routes.length > 0 ? y - ROW_GAP : routesTop;
  const routesColumn = y;
  /** Where an edge meets each route: the middle of its left side. */
  const routeYs = routeBoxes.map((b) => b.y + b.height / 2);

  const chipY = new Map<string, number[]>();
  const facts: ServerFacts[] = input.servers.map((s) => {
    // Chips keep their given order (by name): reordering them inside a server would move
    // the DOM node of a chip just moved from the keyboard, and with it the focus.
    const chips = byServer.get(s.id) ?? [];
    const ranks: number[] = [];
    const ys: number[] = [];
    chips.forEach((c, k) => {
      if (c.routeId === null) return;
      ranks.push(routeIndex.get(c.routeId)!);
      ys.push(chipTop(k) + CHIP_HEIGHT / 2);
    });
    chipY.set(s.id, ys);
    const height = serverHeight(chips.length);
    // No edges: servers with only unassigned inbounds go first, by the Unassigned zone;
    // servers with no inbound at all go last.
    const key = ranks.length > 0 ? ranks.reduce((a, r) => a + r, 0) / ranks.length : chips.length > 0 ? -1 : Infinity;
    return { id: s.id, height, ranks, sortedRanks: [...ranks].sort((a, b) => a - b), key };
  });

  const startRank = new Map<string, number>();
  for (const id of options.previousOrder ?? []) if (!startRank.has(id)) startRank.set(id, startRank.size);
  for (const s of input.servers) if (!startRank.has(s.id)) startRank.set(s.id, startRank.size);

  const totalServers = facts.reduce((a, s) => a + s.height + ROW_GAP, 0);
  const columns = Math.max(1, Math.min(MAX_SERVER_COLUMNS, input.servers.length, Math.ceil(totalServers / Math.max(routesColumn, MIN_COLUMN_HEIGHT))));
  const routesX = columns * SERVER_WIDTH + (columns - 1) * SERVER_COL_GAP + SERVERS_TO_ROUTES;

  const ordered = orderServers(facts, startRank);
  let placed = stackedPlacement(ordered, columns);
  let order = ordered;
  if (ordered.some((s) => s.ranks.length > 0)) {
    const start = [...facts].sort((a, b) => startRank.get(a.id)! - startRank.get(b.id)!);
    const grid = gridPlacement(start, columns);
    const crossings = (p: ReadonlyMap<string, Placed>) => countCrossings(placementSegments(facts, p, chipY, routeYs), routesX);
    if (crossings(grid) < crossings(placed)) {
      placed = grid;
      order = start;
    }
  }

  const boxes: Box[] = [];
  let serversBottom = 0;
  for (const s of order) {
    const p = placed.get(s.id)!;
    boxes.push({ id: serverNodeId(s.id), kind: "server", refId: s.id, x: p.x, y: p.y, width: SERVER_WIDTH, height: s.height });
    serversBottom = Math.max(serversBottom, p.y + s.height);
  }
  boxes.push({ id: UNASSIGNED_NODE_ID, kind: "unassigned", refId: null, x: routesX, y: 0, width: ROUTE_WIDTH, height: uHeight });
  for (const r of routeBoxes) boxes.push({ id: routeNodeId(r.id), kind: "route", refId: r.id, x: routesX, y: r.y, width: ROUTE_WIDTH, height: r.height });

  const distX = routesX + ROUTE_WIDTH + ROUTES_TO_DIST;
  const routesSpan = routesBottom - routesTop;
  const distY = routesSpan <= CENTER_DIST_MAX ? Math.max(0, Math.round(routesTop + routesSpan / 2 - DIST_HEIGHT / 2)) : routesTop;
  boxes.push({ id: DISTRIBUTION_NODE_ID, kind: "distribution", refId: null, x: distX, y: distY, width: DIST_WIDTH, height: DIST_HEIGHT });

  return {
    boxes,
    width: distX + DIST_WIDTH,
    height: Math.max(serversBottom, routesBottom, distY + DIST_HEIGHT),
    serverOrder: order.map((s) => s.id),
  };
}
