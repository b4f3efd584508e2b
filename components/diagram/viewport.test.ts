import { describe, expect, it } from "vitest";
import { CHIP_HEIGHT, chipTop, type Box } from "./layout";
import {
  boxCenter,
  chipCenter,
  COMPACT_BELOW_ZOOM,
  COMPACT_FONT_PX,
  fitViewport,
  FIT_ALL_MAX_SERVERS,
  FULL_MIN_FONT_PX,
  MIN_TEXT_PX,
  OVERVIEW_BELOW_ZOOM,
  revealBox,
  showZoom,
  zoomLevel,
} from "./viewport";

const box = (x: number, y: number, width = 300, height = 200): Box => ({ id: "b", kind: "route", refId: "r", x, y, width, height });
const screen = { width: 1200, height: 800 };

describe("fitViewport", () => {
  it("fits a small diagram whole and centres it", () => {
    const v = fitViewport({ width: 1000, height: 600 }, screen, { servers: 3, routes: 3 });
    expect(v.zoom).toBe(1);
    expect(v.x).toBe(100);
    expect(v.y).toBe(100);
  });

  it("opens a small but wide diagram at the smallest full-detail zoom, at the top", () => {
    const v = fitViewport({ width: 2304, height: 1600 }, screen, { servers: 3, routes: 7 });
    expect(v.zoom).toBe(COMPACT_BELOW_ZOOM);
    expect(v.y).toBe(24);
    expect(v.x).toBe(24);
  });

  it("fits it whole on the Fit button, compact if need be, but never below the overview zoom", () => {
    const v = fitViewport({ width: 2304, height: 600 }, screen, { servers: 3, routes: 3 }, "all");
    expect(v.zoom).toBeCloseTo(0.5);
    expect(zoomLevel(v.zoom)).toBe("compact");
    expect(fitViewport({ width: 100_000, height: 600 }, screen, { servers: 3, routes: 3 }, "all").zoom).toBe(OVERVIEW_BELOW_ZOOM);
  });

  it("opens a big cluster at the top, at a readable zoom, whatever the mode", () => {
    for (const mode of ["readable", "all"] as const) {
      const v = fitViewport({ width: 4000, height: 20_000 }, screen, { servers: FIT_ALL_MAX_SERVERS + 1, routes: 3 }, mode);
      expect(v.zoom).toBe(COMPACT_BELOW_ZOOM);
      expect(v.y).toBe(24);
      expect(v.x).toBe(24);
    }
    const narrow = fitViewport({ width: 1000, height: 20_000 }, screen, { servers: 100, routes: 40 });
    expect(narrow.zoom).toBe(0.85);
  });

  it("copes with an empty layout and a zero-sized screen", () => {
    const v = fitViewport({ width: 0, height: 0 }, { width: 0, height: 0 }, { servers: 0, routes: 0 });
    expect(Number.isFinite(v.zoom) && Number.isFinite(v.x) && Number.isFinite(v.y)).toBe(true);
    expect(v.zoom).toBe(COMPACT_BELOW_ZOOM);
    expect(fitViewport({ width: 0, height: 0 }, { width: 0, height: 0 }, { servers: 0, routes: 0 }, "all").zoom).toBe(OVERVIEW_BELOW_ZOOM);
  });
});

describe("zoomLevel", () => {
  it("keeps every text at 9 px or more on screen", () => {
    expect(MIN_TEXT_PX).toBe(9);
    expect(FULL_MIN_FONT_PX * COMPACT_BELOW_ZOOM).toBeGreaterThanOrEqual(MIN_TEXT_PX);
    expect(COMPACT_FONT_PX * OVERVIEW_BELOW_ZOOM).toBeGreaterThanOrEqual(MIN_TEXT_PX);
  });

  it("switches at the thresholds: full at and above 0.75, compact down to 0.3, then colours only", () => {
    expect(COMPACT_BELOW_ZOOM).toBe(0.75);
    expect(OVERVIEW_BELOW_ZOOM).toBe(0.3);
    expect(zoomLevel(2)).toBe("full");
    expect(zoomLevel(0.75)).toBe("full");
    expect(zoomLevel(0.7499)).toBe("compact");
    expect(zoomLevel(0.3)).toBe("compact");
    expect(zoomLevel(0.2999)).toBe("overview");
    expect(zoomLevel(0.05)).toBe("overview");
  });

  it("treats a broken zoom as the overview", () => {
    expect(zoomLevel(Number.NaN)).toBe("overview");
  });
});

describe("revealBox", () => {
  const view = { x: 0, y: 0, zoom: 1 };
  it("does nothing when the box is in view", () => {
    expect(revealBox(box(10, 10), view, screen)).toBeNull();
  });

  it("centres a box that is off screen, at full detail at least", () => {
    expect(revealBox(box(2000, 100), view, screen)).toEqual({ center: { x: 2150, y: 200 }, zoom: 1 });
    expect(revealBox(box(7000, 100), { x: 0, y: 0, zoom: 0.2 }, screen)?.zoom).toBe(COMPACT_BELOW_ZOOM);
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
