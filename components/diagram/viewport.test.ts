import { describe, expect, it } from "vitest";
import { CHIP_HEIGHT, chipTop, type Box } from "./layout";
import { boxCenter, chipCenter, fitViewport, FIT_ALL_MAX_SERVERS, revealBox, showZoom } from "./viewport";

const box = (x: number, y: number, width = 300, height = 200): Box => ({ id: "b", kind: "route", refId: "r", x, y, width, height });
const screen = { width: 1200, height: 800 };

describe("fitViewport", () => {
  it("fits a small diagram whole and centres it", () => {
    const v = fitViewport({ width: 1000, height: 600 }, screen, { servers: 3, routes: 3 });
    expect(v.zoom).toBe(1);
    expect(v.x).toBe(100);
    expect(v.y).toBe(100);
  });

  it("shrinks a small but wide diagram to fit, not below 0.3", () => {
    const v = fitViewport({ width: 2304, height: 600 }, screen, { servers: 3, routes: 3 });
    expect(v.zoom).toBeCloseTo(0.5);
    expect(fitViewport({ width: 100_000, height: 600 }, screen, { servers: 3, routes: 3 }).zoom).toBe(0.3);
  });

  it("opens a big cluster at the top, at a readable zoom", () => {
    const v = fitViewport({ width: 4000, height: 20_000 }, screen, { servers: FIT_ALL_MAX_SERVERS + 1, routes: 3 });
    expect(v.zoom).toBe(0.45);
    expect(v.y).toBe(24);
    expect(v.x).toBe(24);
    const narrow = fitViewport({ width: 1000, height: 20_000 }, screen, { servers: 100, routes: 40 });
    expect(narrow.zoom).toBe(0.85);
  });

  it("copes with an empty layout and a zero-sized screen", () => {
    const v = fitViewport({ width: 0, height: 0 }, { width: 0, height: 0 }, { servers: 0, routes: 0 });
    expect(Number.isFinite(v.zoom) && Number.isFinite(v.x) && Number.isFinite(v.y)).toBe(true);
    expect(v.zoom).toBe(0.3);
  });
});

describe("revealBox", () => {
  const view = { x: 0, y: 0, zoom: 1 };
  it("does nothing when the box is in view", () => {
    expect(revealBox(box(10, 10), view, screen)).toBeNull();
  });

  it("centres a box that is off screen, never zooming out below 0.6", () => {
    expect(revealBox(box(2000, 100), view, screen)).toEqual({ center: { x: 2150, y: 200 }, zoom: 1 });
    expect(revealBox(box(7000, 100), { x: 0, y: 0, zoom: 0.2 }, screen)?.zoom).toBe(0.6);
  });

  it("only needs the top of a box taller than the screen", () => {
    expect(revealBox(box(10, 0, 300, 5000), view, screen)).toBeNull();
    expect(revealBox(box(10, -10, 300, 5000), view, screen)?.center).toEqual({ x: 160, y: -10 + 400 });
  });

  it("reveals the band around a focus point inside the box", () => {
    expect(revealBox(box(10, 0, 300, 5000), view, screen, 3000)).toEqual({ center: { x: 160, y: 3000 }, zoom: 1 });
    expect(revealBox(box(10, 0, 300, 5000), view, screen, 400)).toBeNull();
  });

  it("accounts for the current pan and zoom", () => {
    // At zoom 0.5 and panned left by 1000px, a box at flow x=2000 sits at screen x=0.
    expect(revealBox(box(2000, 100), { x: -1000, y: 0, zoom: 0.5 }, screen)).toBeNull();
    expect(revealBox(box(2000, 100), { x: -1001, y: 0, zoom: 0.5 }, screen)).not.toBeNull();
  });
});

describe("centres", () => {
  it("finds a chip's middle in its server box", () => {
    expect(chipCenter(box(100, 50), 2)).toEqual({ x: 250, y: 50 + chipTop(2) + CHIP_HEIGHT / 2 });
    expect(chipCenter(box(100, 50), -1)).toEqual(chipCenter(box(100, 50), 0));
  });
  it("finds a box's middle", () => {
    expect(boxCenter(box(100, 50, 300, 200))).toEqual({ x: 250, y: 150 });
  });
  it("zooms in to show, never out", () => {
    expect(showZoom(0.3)).toBe(0.9);
    expect(showZoom(1.5)).toBe(1.5);
  });
});
