/**
 * Where every box of the diagram goes: a pure function of the topology (no DOM, no
 * randomness), so the same cluster always draws the same way and it can be unit-tested.
 *
 *   servers (with their inbound chips) │ Unassigned + routes in position order │ subscription
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

export function layoutTopology(input: LayoutInput): Layout {
  const perServer = new Map<string, number>();
  const perRoute = new Map<string, number>();
  const routeIds = new Set(input.routes.map((r) => r.id));
  let unassigned = 0;
  for (const i of input.inbounds) {
    perServer.set(i.serverId, (perServer.get(i.serverId) ?? 0) + 1);
    const routeId = effectiveRouteId(i, routeIds);
    if (routeId !== null) perRoute.set(routeId, (perRoute.get(routeId) ?? 0) + 1);
    else unassigned++;
  }

  const boxes: Box[] = [];
  const serverHeights = input.servers.map((s) => serverHeight(perServer.get(s.id) ?? 0));
  const totalServers = serverHeights.reduce((a, h) => a + h + ROW_GAP, 0);
  let routesColumn = unassignedHeight(unassigned) + ROW_GAP * 2;
  for (const r of input.routes) routesColumn += routeHeight(perRoute.get(r.id) ?? 0) + ROW_GAP;
  const columns = Math.max(1, Math.min(MAX_SERVER_COLUMNS, input.servers.length, Math.ceil(totalServers / Math.max(routesColumn, MIN_COLUMN_HEIGHT))));
  // Fill columns in order, each up to an even share of the total height.
  const share = totalServers / columns;
  let col = 0;
  let y = 0;
  let serversBottom = 0;
  input.servers.forEach((s, i) => {
    const height = serverHeights[i]!;
    if (y > 0 && col < columns - 1 && y + height / 2 > share) {
      col++;
      y = 0;
    }
    boxes.push({ id: serverNodeId(s.id), kind: "server", refId: s.id, x: col * (SERVER_WIDTH + SERVER_COL_GAP), y, width: SERVER_WIDTH, height });
    serversBottom = Math.max(serversBottom, y + height);
    y += height + ROW_GAP;
  });

  const routesX = columns * SERVER_WIDTH + (columns - 1) * SERVER_COL_GAP + SERVERS_TO_ROUTES;
  y = 0;
  const uHeight = unassignedHeight(unassigned);
  boxes.push({ id: UNASSIGNED_NODE_ID, kind: "unassigned", refId: null, x: routesX, y, width: ROUTE_WIDTH, height: uHeight });
  y += uHeight + ROW_GAP * 2;
  const routesTop = y;
  for (const r of input.routes) {
    const height = routeHeight(perRoute.get(r.id) ?? 0);
    boxes.push({ id: routeNodeId(r.id), kind: "route", refId: r.id, x: routesX, y, width: ROUTE_WIDTH, height });
    y += height + ROW_GAP;
  }
  const routesBottom = input.routes.length > 0 ? y - ROW_GAP : routesTop;

  const distX = routesX + ROUTE_WIDTH + ROUTES_TO_DIST;
  const routesSpan = routesBottom - routesTop;
  const distY = routesSpan <= CENTER_DIST_MAX ? Math.max(0, Math.round(routesTop + routesSpan / 2 - DIST_HEIGHT / 2)) : routesTop;
  boxes.push({ id: DISTRIBUTION_NODE_ID, kind: "distribution", refId: null, x: distX, y: distY, width: DIST_WIDTH, height: DIST_HEIGHT });

  return {
    boxes,
    width: distX + DIST_WIDTH,
    height: Math.max(serversBottom, routesBottom, distY + DIST_HEIGHT),
  };
}
