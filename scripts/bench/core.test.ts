import { describe, expect, it } from "vitest";
import { benchCore } from "./core";

describe("benchCore", () => {
  it("runs on a small fleet and reports decisions per second", () => {
    const r = benchCore({ servers: 20, routes: 5, inboundsPerRoute: 4, subscribers: 50 });
    expect(r.decisions).toBe(250);
    expect(r.decisionsPerSecond).toBeGreaterThan(0);
  });
});
