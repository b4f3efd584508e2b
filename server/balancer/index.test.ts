import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { Balancer, HELD_BACK_MIN_USERS } from "./index";
import { decideRoute } from "./decide";
import { MBIT, route, srv } from "./testing";
import type { RouteInput, ServerMetrics } from "./types";

const noPrev = new Map<string, string>();

describe("Balancer facade", () => {
  it("returns exactly one entry per non-empty route, in order", () => {
    const b = new Balancer();
    const routes: RouteInput[] = [
      { ...route(["a"]), routeId: "r1" },
      { ...route([]), routeId: "empty" },
      { ...route(["b"], { algorithm: "round-robin" }), routeId: "r2" },
    ];
    const out = b.decideForSubscriber({ userId: "u", routes, servers: { a: srv(), b: srv() }, previousAssignments: noPrev, nowMs: 0 });
    expect(out.map((o) => o.routeId)).toEqual(["r1", "r2"]);
  });

  it("first picks of many new users never name an inbound its server does not serve; it takes users again once served (issue 25)", () => {
    const b = new Balancer();
    const r = route(["a", "b"], { algorithm: "round-robin" });
    const routes = [r];
    const pick = (servers: Record<string, ServerMetrics>, from: number) =>
      Array.from({ length: 40 }, (_, i) => b.decideForSubscriber({ userId: `u${from + i}`, routes, servers, previousAssignments: noPrev, nowMs: 1, explain: false })[0]!.decision.inboundId);
    const unserved = pick({ a: srv({ unavailableInbounds: new Map([["in-a", "Reality needs Xray-core"]]) }), b: srv() }, 0);
    expect(new Set(unserved)).toEqual(new Set(["in-b"]));
    // Served again (a new metrics lookup, as every snapshot reload gives): a is chosen again.
    expect(pick({ a: srv(), b: srv() }, 100)).toContain("in-a");
  });

  it("records in-flight only for new or moved assignments", () => {
    const b = new Balancer();
    const servers = { a: srv({ reportedUsers: 10, reportedTrafficBps: 30 * MBIT }), b: srv({ reportedUsers: 10, reportedTrafficBps: 30 * MBIT }) };
    const routes = [route(["a", "b"])];
    const first = b.decideForSubscriber({ userId: "u", routes, servers, previousAssignments: noPrev, nowMs: 1 });
    const chosen = first[0]?.decision.serverId as string;
    expect(b.inflight.additions(chosen, 0)).toEqual({ users: 1, trafficBps: 3 * MBIT });
    // refresh: sticky → nothing recorded
    b.decideForSubscriber({ userId: "u", routes, servers, previousAssignments: new Map([["r1", `in-${chosen}`]]), nowMs: 2 });
    expect(b.inflight.size()).toBe(1);
  });

  it("records the departure from the previous server on a move", () => {
    const b = new Balancer();
    const servers = {
      a: srv({ available: false, reportedUsers: 10, reportedTrafficBps: 30 * MBIT }),
      b: srv({ reportedUsers: 10, reportedTrafficBps: 30 * MBIT }),
      c: srv({ capacityOverrideBps: 10, reportedUsers: 10, reportedTrafficBps: 30 * MBIT }),
    };
    // c's capacity is tiny: user on c moves to b; departure recorded on c.
    const out = b.decideForSubscriber({ userId: "u", routes: [route(["b", "c"])], servers, previousAssignments: new Map([["r1", "in-c"]]), nowMs: 5 });
    expect(out[0]?.decision.inboundId).toBe("in-b");
    expect(b.inflight.additions("c", 0)).toEqual({ users: -1, trafficBps: -3 * MBIT });
  });

  it("reads a new lookup afresh, and the same lookup with a newly learned peak", () => {
    const b = new Balancer();
    const routes = [route(["a", "b"])];
    const decide = (servers: Record<string, ServerMetrics>, userId: string) =>
      b.decideForSubscriber({ userId, routes, servers, previousAssignments: noPrev, nowMs: 100, explain: false })[0]?.decision;
    // a was seen holding its users back: capacities are shown, first picks go by free bandwidth.
    const both = { a: srv({ learnedPeakBps: 1000 * MBIT, reportedAt: 0, heldBack: true }), b: srv({ learnedPeakBps: 200 * MBIT, reportedAt: 0 }) };
    expect(decide(both, "u1")?.serverId).toBe("a");
    // The operator's view changes: a is down. A new lookup, so the next first pick avoids it.
    expect(decide({ ...both, a: srv({ available: false, learnedPeakBps: 1000 * MBIT, reportedAt: 0 }) }, "u2")?.serverId).toBe("b");
    // Back to the first lookup; b's agent reports a peak far above a's: learned peaks count at once.
    b.observeReport("b", { users: 0, trafficBps: 9000 * MBIT, atMs: 0 });
    expect(decide(both, "u3")?.serverId).toBe("b");
  });

  it("observeReport learns peaks and prunes in-flight", () => {
    const b = new Balancer();
    const servers = { a: srv({ reportedAt: 0 }) };
    b.decideForSubscriber({ userId: "u", routes: [route(["a"])], servers, previousAssignments: noPrev, nowMs: 10 });
    expect(b.inflight.size()).toBe(1);
    b.observeReport("a", { users: 1, trafficBps: 700 * MBIT, atMs: 20 });
    expect(b.inflight.size()).toBe(0);
    expect(b.learnedPeak("a")?.peakBps).toBe(700 * MBIT);
    b.observeReport("a", { users: 1, trafficBps: 1 * MBIT, atMs: 5 }); // clock backwards
    expect(b.learnedPeak("a")?.peakBps).toBe(700 * MBIT);
    const d = b.decideForSubscriber({ userId: "v", routes: [route(["a"])], servers: { a: srv({ reportedAt: 20 }) }, previousAssignments: noPrev, nowMs: 20 });
    expect(d[0]?.decision.candidates[0]?.score).toBeCloseTo(700 * MBIT);
  });

  it("spreads a burst of 1,000 users within one report interval in proportion to free capacity", () => {
    const b = new Balancer();
    const servers: Record<string, ServerMetrics> = {
      small: srv({ capacityOverrideBps: 1000 * MBIT, reportedUsers: 0, reportedTrafficBps: 0 }),
      big: srv({ capacityOverrideBps: 3000 * MBIT, reportedUsers: 0, reportedTrafficBps: 0 }),
    };
    const counts: Record<string, number> = { small: 0, big: 0 };
    for (let i = 0; i < 1000; i++) {
      const out = b.decideForSubscriber({ userId: `u${i}`, routes: [route(["small", "big"])], servers, previousAssignments: noPrev, nowMs: 1000 + i });
      const s = out[0]?.decision.serverId as string;
      counts[s] = (counts[s] ?? 0) + 1;
    }
    // 1:3 capacity → ≈250 : 750
    expect(counts.small).toBeGreaterThan(200);
    expect(counts.small).toBeLessThan(300);
    expect(counts.big).toBeGreaterThan(700);
  });

  it("round-robin: coefficient 2.0 takes about twice the users", () => {
    const b = new Balancer();
    const servers = { one: srv({ coefficient: 1 }), two: srv({ coefficient: 2 }) };
    const r = route(["one", "two"], { algorithm: "round-robin" });
    const counts: Record<string, number> = { one: 0, two: 0 };
    for (let i = 0; i < 900; i++) {
      const out = b.decideForSubscriber({ userId: `u${i}`, routes: [r], servers, previousAssignments: noPrev, nowMs: 10 });
      const s = out[0]?.decision.serverId as string;
      counts[s] = (counts[s] ?? 0) + 1;
    }
    expect(counts.two! / counts.one!).toBeGreaterThan(1.8);
    expect(counts.two! / counts.one!).toBeLessThan(2.2);
  });
});

// ---- property tests ----
const serverArb = fc.record({
  enabled: fc.boolean(),
  available: fc.boolean(),
  coefficient: fc.double({ min: 0.1, max: 5, noNaN: true }),
  capacityOverrideBps: fc.option(fc.double({ min: 0, max: 1e10, noNaN: true }), { nil: null }),
  learnedPeakBps: fc.double({ min: 0, max: 1e10, noNaN: true }),
  reportedUsers: fc.nat(5000),
  reportedTrafficBps: fc.double({ min: 0, max: 1e10, noNaN: true }),
  reportedAt: fc.integer({ min: 0, max: 1e9 }),
  // When it came back, relative to now (negative: a clock gone backwards); mostly within the
  // fail-back dwell so its rules are exercised.
  availableSinceAgoMs: fc.option(fc.integer({ min: -3600_000, max: 24 * 3600_000 }), { nil: undefined }),
});

const scenarioArb = fc
  .record({
    servers: fc.array(serverArb, { minLength: 1, maxLength: 8 }),
    algorithm: fc.constantFrom("least-traffic" as const, "round-robin" as const),
    hysteresis: fc.double({ min: 0, max: 1, noNaN: true }),
    fallbackIdx: fc.integer({ min: -1, max: 7 }),
    prevIdx: fc.integer({ min: -2, max: 7 }),
    userId: fc.string(),
    nowMs: fc.integer({ min: 0, max: 2e9 }),
  })
  .map((s) => {
    const servers = new Map(
      s.servers.map(({ availableSinceAgoMs, ...m }, i) => [
        `s${i}`,
        { ...m, availableSinceMs: availableSinceAgoMs === undefined ? undefined : s.nowMs - availableSinceAgoMs } as ServerMetrics,
      ]),
    );
    const r: RouteInput = {
      routeId: "r",
      algorithm: s.algorithm,
      hysteresis: s.hysteresis,
      inbounds: s.servers.map((_, i) => ({ inboundId: `i${i}`, serverId: `s${i}`, isFallback: i === s.fallbackIdx })),
    };
    const prev = s.prevIdx === -1 ? null : s.prevIdx === -2 ? "gone" : `i${s.prevIdx}`;
    return { servers, route: r, prev, userId: s.userId, nowMs: s.nowMs };
  });

describe("Balancer: a burst of first picks, and a server seen holding its users back (rule 0)", () => {
  const routes = [route(["a", "b"])];
  // a: fewer users, and no spare by its peak; b: more users, much spare.
  const servers = {
    a: srv({ learnedPeakBps: 120 * MBIT, reportedTrafficBps: 120 * MBIT, reportedUsers: 100 }),
    b: srv({ learnedPeakBps: 1000 * MBIT, reportedTrafficBps: 300 * MBIT, reportedUsers: 150 }),
  };
  /** n new users fetch one after another (before any new report): where they went. */
  const burst = (b: Balancer, n: number, fleet: Record<string, ServerMetrics> = servers) => {
    const got = { a: 0, b: 0 };
    for (let i = 0; i < n; i++) {
      const req = { userId: `u${i}`, routes, servers: fleet, previousAssignments: noPrev, nowMs: 1000 };
      const explained = b.explainForSubscriber(req)[0]?.decision.serverId;
      const id = b.decideForSubscriber({ ...req, explain: false })[0]?.decision.serverId as "a" | "b";
      expect(id).toBe(explained);
      got[id]++;
    }
    return got;
  };
  const heldBackA = (b: Balancer) => {
    b.observeReport("b", { users: 150, trafficBps: 300 * MBIT, atMs: 0 }); // 2 Mbit/s each: the best
    b.observeReport("a", { users: 100, trafficBps: 120 * MBIT, atMs: 0 }); // 1.2 × 1.25 = 1.5 < 2
  };

  it("with no capacity shown, users even out from the first pick, the arrivals in flight counted", () => {
    // a has 50 users fewer: the first 50 all go there, though b has far more spare by its peak.
    expect(burst(new Balancer(), 50)).toEqual({ a: 50, b: 0 });
    // Then one each in turn: 100 + 125 = 150 + 75.
    expect(burst(new Balancer(), 200)).toEqual({ a: 125, b: 75 });
  });

  it("reports that count the users (nothing in flight) and equal user counts: the burst alternates", () => {
    // After a burst evened out, both servers reported it: 225 users each, a's link full by its
    // peak, b's with 880 Mbit/s spare. Neither is marked held back (stored mark absent).
    const reported = {
      a: srv({ learnedPeakBps: 120 * MBIT, reportedTrafficBps: 120 * MBIT, reportedUsers: 225 }),
      b: srv({ learnedPeakBps: 1000 * MBIT, reportedTrafficBps: 120 * MBIT, reportedUsers: 225 }),
    };
    expect(burst(new Balancer(), 20, reported)).toEqual({ a: 10, b: 10 });
    expect(burst(new Balancer({ evenWhileBlind: false }), 20, reported)).toEqual({ a: 0, b: 20 });
  });

  it("a report whose traffic per user is more than the default margin below the best seen marks its server: free bandwidth decides the whole burst", () => {
    const b = new Balancer();
    heldBackA(b);
    expect(burst(b, 200)).toEqual({ a: 0, b: 200 });
  });

  it("within the margin, with fewer than HELD_BACK_MIN_USERS users, or from a few heavy users, nothing is marked", () => {
    const b = new Balancer();
    b.observeReport("b", { users: 150, trafficBps: 300 * MBIT, atMs: 0 });
    b.observeReport("a", { users: 100, trafficBps: 160 * MBIT, atMs: 0 }); // 1.6 × 1.25 = 2: not below
    b.observeReport("a", { users: HELD_BACK_MIN_USERS - 1, trafficBps: 1 * MBIT, atMs: 0 }); // too few users to say
    b.observeReport("c", { users: 5, trafficBps: 500 * MBIT, atMs: 0 }); // 100 Mbit/s each, but 5 users set no reference
    b.observeReport("a", { users: 100, trafficBps: 160 * MBIT, atMs: 0 });
    expect(burst(b, 200).a).toBeGreaterThan(0);
  });

  it("bad reports mark nothing and set no reference; equal rates mark nothing; a clock gone backwards changes nothing", () => {
    const b = new Balancer();
    b.observeReport("b", { users: 150, trafficBps: Number.NaN, atMs: 0 });
    b.observeReport("b", { users: 150, trafficBps: -1, atMs: 0 });
    b.observeReport("b", { users: Number.NaN, trafficBps: 300 * MBIT, atMs: 0 });
    b.observeReport("a", { users: 100, trafficBps: 120 * MBIT, atMs: 0 });
    b.observeReport("b", { users: 100, trafficBps: 120 * MBIT, atMs: -5 }); // the same rate, an older clock
    expect(burst(b, 200).a).toBeGreaterThan(0);
  });

  it("the first server to report is not held back beside itself; a better rate later marks it at its next report", () => {
    const b = new Balancer();
    b.observeReport("a", { users: 100, trafficBps: 100 * MBIT, atMs: 0 }); // 1 Mbit/s each: the best so far
    b.observeReport("b", { users: 150, trafficBps: 450 * MBIT, atMs: 0 }); // 3 each
    expect(burst(b, 200).a).toBeGreaterThan(0);
    const again = new Balancer();
    again.observeReport("a", { users: 100, trafficBps: 100 * MBIT, atMs: 0 });
    again.observeReport("b", { users: 150, trafficBps: 450 * MBIT, atMs: 0 });
    again.observeReport("a", { users: 100, trafficBps: 100 * MBIT, atMs: 0 });
    expect(burst(again, 200).a).toBe(0);
  });

  it("the reference is each server's latest report: a server whose rate fell with everyone's (night) is not marked", () => {
    const b = new Balancer();
    b.observeReport("b", { users: 150, trafficBps: 300 * MBIT, atMs: 0 }); // evening: 2 Mbit/s each
    b.observeReport("b", { users: 150, trafficBps: 150 * MBIT, atMs: 6 * 3600_000 }); // night: 1 each
    b.observeReport("a", { users: 100, trafficBps: 100 * MBIT, atMs: 6 * 3600_000 }); // 1 each: as b gets now
    expect(burst(b, 200).a).toBeGreaterThan(0);
  });

  it("marksHeldBack false (the panel): reports mark nothing, ServerMetrics.heldBack (stored with the report) does", () => {
    const b = new Balancer(undefined, { marksHeldBack: false });
    heldBackA(b);
    expect(burst(b, 200).a).toBeGreaterThan(0);
    const stored = { ...servers, a: { ...servers.a, heldBack: true } };
    expect(burst(new Balancer(undefined, { marksHeldBack: false }), 200, stored)).toEqual({ a: 0, b: 200 });
  });

  it("a link seen full keeps what it carried then through quiet days, though its learned peak decays", () => {
    // a carried 1 Gbit/s when seen full a week ago; the peak stored since has decayed to
    // 1/128 of it (24 h half-life, reports all week), below b's 300 Mbit/s link seen full today.
    const week = 7 * 24 * 3600_000;
    const quiet = {
      a: srv({ learnedPeakBps: (1000 * MBIT) / 128, reportedTrafficBps: 5 * MBIT, reportedUsers: 10, reportedAt: week, heldBack: true, heldBackBps: 1000 * MBIT }),
      b: srv({ learnedPeakBps: 300 * MBIT, reportedTrafficBps: 5 * MBIT, reportedUsers: 10, reportedAt: week, heldBack: true, heldBackBps: 300 * MBIT }),
    };
    const first = (fleet: Record<string, ServerMetrics>) => {
      const req = { userId: "u", routes, servers: fleet, previousAssignments: noPrev, nowMs: week + 1000 };
      const explained = new Balancer(undefined, { marksHeldBack: false }).explainForSubscriber(req)[0]!.decision;
      expect(new Balancer(undefined, { marksHeldBack: false }).decideForSubscriber({ ...req, explain: false })[0]!.decision.serverId).toBe(explained.serverId);
      return explained;
    };
    const kept = first(quiet);
    expect(kept.serverId).toBe("a");
    expect(kept.candidates.find((c) => c.serverId === "a")?.note).toContain("C 1000 [learned peak, link seen full]");
    // Without what it carried then (a report stored before it was kept), the decayed peak is all there is.
    const { heldBackBps: _, ...bare } = quiet.a;
    expect(first({ ...quiet, a: bare }).serverId).toBe("b");
    // Not held back: the traffic of an old full report says nothing (the mark is what counts).
    expect(first({ ...quiet, a: { ...quiet.a, heldBack: false } }).serverId).toBe("b");
  });

  it("evenWhileBlind false: free bandwidth decides the whole burst", () => {
    expect(burst(new Balancer({ evenWhileBlind: false }), 200)).toEqual({ a: 0, b: 200 });
  });
});

describe("properties", () => {
  it("never picks an unavailable inbound while an available (enabled) one exists", () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const d = decideRoute({ userId: s.userId, route: s.route, servers: s.servers, previousInboundId: s.prev, nowMs: s.nowMs });
        const anyUp = s.route.inbounds.some((ib) => {
          const m = s.servers.get(ib.serverId);
          return m?.enabled && m.available;
        });
        if (anyUp) {
          const m = s.servers.get(d.serverId as string);
          expect(m?.enabled && m.available).toBe(true);
        }
        if (d.inboundId === null) expect(s.route.inbounds.every((ib) => !s.servers.get(ib.serverId)?.enabled)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it("same inputs always give the same choice", () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const inp = { userId: s.userId, route: s.route, servers: s.servers, previousInboundId: s.prev, nowMs: s.nowMs };
        const a = decideRoute(inp);
        const b = decideRoute(inp);
        expect(b).toEqual(a);
      }),
      { numRuns: 300 },
    );
  });

  it("exactly one entry per non-empty route", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(4), { maxLength: 10 }), fc.string(), (sizes, userId) => {
        const servers = { a: srv(), b: srv({ available: false }), c: srv({ enabled: false }), d: srv() };
        const ids = ["a", "b", "c", "d"];
        const routes = sizes.map((n, k) => ({ ...route(ids.slice(0, n)), routeId: `r${k}` }));
        const out = new Balancer().decideForSubscriber({ userId, routes, servers, previousAssignments: noPrev, nowMs: 0 });
        expect(out.map((o) => o.routeId)).toEqual(routes.filter((r) => r.inbounds.length > 0).map((r) => r.routeId));
      }),
      { numRuns: 200 },
    );
  });

  it("explain gives the decision the next fetch makes: learned peaks and in-flight load included, nothing recorded", () => {
    const observedArb = fc.array(
      fc.record({ idx: fc.nat(7), users: fc.nat(5000), trafficBps: fc.double({ min: 0, max: 2e10, noNaN: true }), atMs: fc.integer({ min: 0, max: 1e9 }) }),
      { maxLength: 12 },
    );
    const earlierUsersArb = fc.array(fc.string({ minLength: 1, maxLength: 6 }), { maxLength: 20 });
    fc.assert(
      fc.property(scenarioArb, observedArb, earlierUsersArb, (s, observed, earlierUsers) => {
        const b = new Balancer();
        // Peaks the facade learned from reports (may exceed what the metrics carry) ...
        for (const o of observed) if (s.servers.has(`s${o.idx}`)) b.observeReport(`s${o.idx}`, o);
        // ... and users it just placed, not yet in any report (in-flight load).
        for (const u of earlierUsers) b.decideForSubscriber({ userId: u, routes: [s.route], servers: s.servers, previousAssignments: noPrev, nowMs: s.nowMs });
        const previousAssignments = new Map(s.prev === null ? [] : [[s.route.routeId, s.prev]]);
        const req = { userId: s.userId, routes: [s.route], servers: s.servers, previousAssignments, nowMs: s.nowMs };
        const explained = b.explainForSubscriber(req);
        const again = b.explainForSubscriber(req);
        const fetched = b.decideForSubscriber({ ...req, explain: false });
        expect(explained.map((r) => r.decision.inboundId)).toEqual(fetched.map((r) => r.decision.inboundId));
        expect(explained.map((r) => r.decision.reason)).toEqual(fetched.map((r) => r.decision.reason));
        // A dry run changes nothing: explaining twice gives the same scores.
        expect(again).toEqual(explained);
      }),
      { numRuns: 400 },
    );
  });
});
