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

/**
 * The first view: the whole diagram when small; for a big cluster, its top at a readable
 * zoom (React Flow's own fitView cannot be used: with onlyRenderVisibleElements, boxes
 * off-screen are never measured; the layout knows every box's size already).
 */
export function fitViewport(layout: Size, screen: Size, counts: { servers: number; routes: number }): Viewport {
  const small = counts.servers <= FIT_ALL_MAX_SERVERS && counts.routes <= FIT_ALL_MAX_ROUTES;
  const byWidth = (screen.width - 2 * FIT_PAD) / Math.max(1, layout.width);
  const byHeight = (screen.height - 2 * FIT_PAD) / Math.max(1, layout.height);
  const zoom = small ? Math.max(0.3, Math.min(1, byWidth, byHeight)) : Math.max(0.45, Math.min(0.85, byWidth));
  const x = Math.max(FIT_PAD, (screen.width - layout.width * zoom) / 2);
  const y = small ? Math.max(FIT_PAD, (screen.height - layout.height * zoom) / 2) : FIT_PAD;
  return { x, y, zoom };
}

/**
 * Where to centre so `box` is in view (its top part, if taller than the screen; or the
 * band around `focusY`), and at what zoom; null when it is already in view.
 */
export function revealBox(box: Box, view: Viewport, screen: Size, focusY?: number): { center: Point; zoom: number } | null {
  const { x, y, zoom } = view;
  const visibleHeight = Math.min(box.height, screen.height / zoom);
  const left = box.x * zoom + x;
  const top = (focusY !== undefined ? focusY - 20 : box.y) * zoom + y;
  const right = (box.x + box.width) * zoom + x;
  const bottom = (focusY !== undefined ? focusY + 20 : box.y + visibleHeight) * zoom + y;
  if (left >= 0 && top >= 0 && right <= screen.width && bottom <= screen.height) return null;
  return { center: { x: box.x + box.width / 2, y: focusY ?? box.y + visibleHeight / 2 }, zoom: Math.max(zoom, 0.6) };
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
