/**
 * The dashboard shows a route red by core/panic's rule; the balancer decides by its pools.
 * They must agree on every route: checked over every status combination of small routes,
 * with and without a fallback, with equal and unequal loads.
 */
import { describe, expect, it } from "vitest";
import { routePanic } from "@/core/panic";
import { isAvailable, SERVER_STATUSES } from "@/core/status";
import { decideRoute } from "./decide";
import { MBIT, route, srv } from "./testing";
import type { ServerMetrics } from "./types";

/** Metrics as the subscription snapshot builds them from a status (balancerMetrics). */
function metricsFor(status: string, users: number): ServerMetrics {
  const enabled = status !== "disabled";
  return srv({ enabled, available: enabled && isAvailable(status), reportedUsers: users, reportedTrafficBps: users * MBIT });
}

describe("the balancer's panic and core/panic agree", () => {
  const combos: string[][] = [];
  for (const a of SERVER_STATUSES) for (const b of SERVER_STATUSES) combos.push([a, b]);

  for (const withFallback of [false, true]) {
    for (const equalLoad of [true, false]) {
      it(`on every pair of statuses (fallback ${withFallback}, equal load ${equalLoad})`, () => {
        for (const [sa, sb] of combos) {
          const status: Record<string, string> = { a: sa!, b: sb! };
          const servers = { a: metricsFor(sa!, 3), b: metricsFor(sb!, equalLoad ? 3 : 7) };
          const r = withFallback ? route(["a"], {}, ["b"]) : route(["a", "b"]);
          const d = decideRoute({ userId: "u1", route: r, servers, previousInboundId: null, nowMs: 1000 });
          const balancerPanics = d.reason === "panic" || d.reason === "none";
          const p = routePanic(r.inbounds, (id) => status[id]);
          expect({ sa, sb, panic: p !== null }).toEqual({ sa, sb, panic: balancerPanics });
          // In panic the balancer still serves from enabled servers; all disabled gives no line.
          if (p) expect({ sa, sb, serving: p.serving }).toEqual({ sa, sb, serving: d.reason === "panic" });
        }
      });
    }
  }

  it("an empty route is neither", () => {
    const d = decideRoute({ userId: "u1", route: route([]), servers: {}, previousInboundId: null, nowMs: 0 });
    expect(d.reason).toBe("none");
    expect(routePanic([], () => "healthy")).toBeNull();
  });
});
