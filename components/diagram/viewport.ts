/**
 * Viewport maths for the diagram, pure: where to look so a box, a chip or the whole
 * layout is in view. React Flow's viewport is { x, y, zoom }: screen = flow * zoom + offset.
 */
import { CHIP_HEIGHT, chipTop, type Box } from "./layout";

export interface Viewport {
  x: number;
  y: number;
  zoom: number;
}
export interface Size {
  width: number;
  height: number;
}
export interface Point {
  x: number;
  y: number;
}

/** Above this size the diagram opens at a readable zoom at the top instead of fitting all. */
export const FIT_ALL_MAX_SERVERS = 16;
export const FIT_ALL_MAX_ROUTES = 16;
const FIT_PAD = 24;

/** Smallest text, in screen pixels, the diagram ever shows. */
export const MIN_TEXT_PX = 9;
/** Smallest font (CSS px) inside the boxes at full detail: every node uses at least this. */
export const FULL_MIN_FONT_PX = 12;
/** Font (CSS px) of the compact summaries. */
export const COMPACT_FONT_PX = 30;
/** Below this zoom full-detail text would be under MIN_TEXT_PX: the boxes turn compact. */
export const COMPACT_BELOW_ZOOM = MIN_TEXT_PX / FULL_MIN_FONT_PX;
/** Below this zoom even the compact summaries would be under MIN_TEXT_PX: the boxes show no text. */
export const OVERVIEW_BELOW_ZOOM = MIN_TEXT_PX / COMPACT_FONT_PX;

/**
 * What the boxes show at a zoom: every detail, a compact summary in large type (name,
 * status, counts), or colours only. Each level keeps text at MIN_TEXT_PX or more.
 */
export type ZoomLevel = "full" | "compact" | "overview";
export function zoomLevel(zoom: number): ZoomLevel {
  if (!(zoom >= OVERVIEW_BELOW_ZOOM)) return "overview";
  return zoom < COMPACT_BELOW_ZOOM ? "compact" : "full";
}

/**
 * Where to look.
 * - "readable" (the first view): the whole diagram if it fits at full detail, otherwise its
 *   top at the smallest full-detail zoom, so the page opens with every label readable and
 *   every inbound draggable.
 * - "all" (the Fit view button): the whole diagram, compact if need be; a big cluster opens
 *   at the top as in "readable" (fitting hundreds of servers would draw every box at once).
 * React Flow's own fitView cannot be used: with onlyRenderVisibleElements, boxes off-screen
 * are never measured; the layout knows every box's size already.
 */
export function fitViewport(layout: Size, screen: Size, counts: { servers: number; routes: number }, mode: "readable" | "all" = "readable"): Viewport {
  const small = counts.servers <= FIT_ALL_MAX_SERVERS && counts.routes <= FIT_ALL_MAX_ROUTES;
  const byWidth = (screen.width - 2 * FIT_PAD) / Math.max(1, layout.width);
  const byHeight = (screen.height - 2 * FIT_PAD) / Math.max(1, layout.height);
  let zoom: number;
  if (small && mode === "all") zoom = Math.max(OVERVIEW_BELOW_ZOOM, Math.min(1, byWidth, byHeight));
  else if (small) zoom = Math.max(COMPACT_BELOW_ZOOM, Math.min(1, byWidth, byHeight));
  else zoom = Math.max(COMPACT_BELOW_ZOOM, Math.min(0.85, byWidth));
  const fitsHeight = layout.height * zoom <= screen.height - 2 * FIT_PAD;
  const x = Math.max(FIT_PAD, (screen.width - layout.width * zoom) / 2);
  const y = small && fitsHeight ? Math.max(FIT_PAD, (screen.height - layout.height * zoom) / 2) : FIT_PAD;
  return { x, y, zoom };
}

/**
 * Where to centre so `box` is in view (its top part, if taller than the screen; or the
 * band around `focusY`), and at what zoom (full detail at least); null when it is already in view.
 */
export function revealBox(box: Box, view: Viewport, screen: Size, focusY?: number): { center: Point; zoom: number } | null {
  const { x, y, zoom } = view;
  const visibleHeight = Math.min(box.height, screen.height / zoom);
  const left = box.x * zoom + x;
  const top = (focusY !== undefined ? focusY - 20 : box.y) * zoom + y;
  const right = (box.x + box.width) * zoom + x;
  const bottom = (focusY !== undefined ? focusY + 20 : box.y + visibleHeight) * zoom + y;
  if (left >= 0 && top >= 0 && right <= screen.width && bottom <= screen.height) return null;
  return { center: { x: box.x + box.width / 2, y: focusY ?? box.y + visibleHeight / 2 }, zoom: Math.max(zoom, COMPACT_BELOW_ZOOM) };
}

/** The middle of the chip at `position` in a server box (a negative position = the first). */
export function chipCenter(serverBox: Box, position: number): Point {
  return { x: serverBox.x + serverBox.width / 2, y: serverBox.y + chipTop(Math.max(0, position)) + CHIP_HEIGHT / 2 };
}

export function boxCenter(box: Box): Point {
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

/** Showing something zooms in to a readable size, never out. */
export const showZoom = (current: number) => Math.max(current, 0.9);
