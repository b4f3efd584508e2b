/**
 * The hot path (explain: false) skips candidate notes and explanations and reuses its working
 * rows; it must pick exactly what the explained path picks.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decideRoute } from "./decide";
import { rendezvousHash, rendezvousHashFrom, rendezvousSeed } from "./hash";
import { Balancer } from "./index";
import type { DecideInput, RouteInput, ServerMetrics } from "./types";

// Few distinct values, so equal scores (ties broken by the hash) are common.
const serverArb = fc.record({
  enabled: fc.constantFrom(true, true, true, false),
  available: fc.constantFrom(true, true, false),
  coefficient: fc.constantFrom(0, 1, 2),
  capacityOverrideBps: fc.constantFrom(null, null, 0, 1e9),
  learnedPeakBps: fc.constantFrom(0, 1e8, 1e9, 1e10),
  reportedUsers: fc.constantFrom(0, 1, 10, 100),
  reportedTrafficBps: fc.constantFrom(0, 5e7, 1e9, 2e10),
  reportedAt: fc.constantFrom(0, 1000, 5e8),
  availableSinceMs: fc.option(fc.constantFrom(0, 9e8, 1e9), { nil: undefined }),
  /** Seen holding its users back (rule 0 off for a pool that has one). */
  heldBack: fc.option(fc.constant(true), { nil: undefined }),
  /** What the link carried when last seen full: the peak never counts below it (with heldBack). */
  heldBackBps: fc.option(fc.constantFrom(0, 1e8, 5e9, Number.NaN), { nil: undefined }),
  /** The server's agent does not serve this inbound (ServerMetrics.unavailableInbounds). */
  inboundOut: fc.constantFrom(false, false, false, true),
});

const routeArb = (k: number) =>
  fc
    .record({
      servers: fc.array(serverArb, { minLength: 0, maxLength: 9 }),
      algorithm: fc.constantFrom("least-traffic" as const, "round-robin" as const),
      hysteresis: fc.option(fc.constantFrom(0, 0.1, 0.5), { nil: undefined }),
      fallbackIdx: fc.integer({ min: -1, max: 8 }),
      prevIdx: fc.integer({ min: -2, max: 8 }),
    })
    .map((s) => {
      const servers = new Map(
        s.servers.map(({ inboundOut, ...m }, i): [string, ServerMetrics] => [`r${k}s${i}`, inboundOut ? { ...m, unavailableInbounds: new Map([[`r${k}i${i}`, "not served"]]) } : m]),
      );
      const route: RouteInput = {
        routeId: `r${k}`,
        algorithm: s.algorithm,
        hysteresis: s.hysteresis,
        inbounds: s.servers.map((_, i) => ({ inboundId: `r${k}i${i}`, serverId: `r${k}s${i}`, isFallback: i === s.fallbackIdx, name: `Inbound ${i}` })),
      };
      const prev = s.prevIdx === -1 ? null : s.prevIdx === -2 ? "gone" : `r${k}i${s.prevIdx}`;
      return { servers, route, prev };
    });

// The rules that move a user, each on and off (the defaults: the fail-back dwell, keepSatisfied and rule 0 on).
const optionsArb = fc.constantFrom(undefined, { failBackDwellMs: 0 }, { keepSatisfied: false }, { failBackDwellMs: 0, keepSatisfied: false }, { evenWhileBlind: false });

const pick = (d: { inboundId: string | null; serverId: string | null; reason: string }) => ({ inboundId: d.inboundId, serverId: d.serverId, reason: d.reason });

describe("decideRoute without explain", () => {
  it("picks the same inbound, server and reason as with explain, decision after decision", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 3 }).chain((ks) => fc.tuple(fc.tuple(...ks.map((_, k) => routeArb(k))), fc.string({ maxLength: 8 }), fc.integer({ min: 0, max: 2e9 }), optionsArb)), ([routes, userId, nowMs, options]) => {
        // Several routes of different sizes one after another: the reused rows of one
        // decision must not leak into the next.
        // Arrivals on one server, departures from another (keepSatisfied counts only arrivals).
        const inflight = (serverId: string) => (serverId.endsWith("1") ? { users: 3, trafficBps: 4e8 } : serverId.endsWith("2") ? { users: -2, trafficBps: -3e8 } : undefined);
        const inputs: DecideInput[] = routes.map((r) => ({ userId, route: r.route, servers: r.servers, previousInboundId: r.prev, nowMs, inflight, options }));
        const lean = inputs.map((inp) => decideRoute({ ...inp, explain: false }));
        const explained = inputs.map((inp) => decideRoute(inp));
        expect(lean.map(pick)).toEqual(explained.map(pick));
        for (const d of lean) {
          expect(d.candidates).toEqual([]);
          expect(d.explanation).toBe("");
        }
        // The explained path is untouched by the lean one run before it.
        expect(inputs.map((inp) => decideRoute(inp))).toEqual(explained);
      }),
      { numRuns: 1000 },
    );
  });

  it("first picks (no current inbound) of user after user are the explained path's, ties and in-flight load included", () => {
    fc.assert(
      fc.property(routeArb(0), fc.integer({ min: 1, max: 60 }), fc.array(fc.record({ idx: fc.nat(8), users: fc.constantFrom(1, 100), trafficBps: fc.constantFrom(0, 1e9, 3e10), atMs: fc.constantFrom(0, 2000) }), { maxLength: 6 }), (r, users, reports) => {
        const lean = new Balancer();
        const explained = new Balancer();
        for (const rep of reports) {
          for (const b of [lean, explained]) b.observeReport(`r0s${rep.idx}`, { users: rep.users, trafficBps: rep.trafficBps, atMs: rep.atMs });
        }
        for (let i = 0; i < users; i++) {
          const req = { userId: `u${i}`, routes: [r.route, r.route], servers: r.servers, previousAssignments: new Map<string, string>(), nowMs: 3000 + (i >> 2) };
          const a = lean.decideForSubscriber({ ...req, explain: false });
          const b = explained.decideForSubscriber(req);
          expect(a.map((x) => pick(x.decision))).toEqual(b.map((x) => pick(x.decision)));
        }
      }),
      { numRuns: 500 },
    );
  });

  it("the facade makes the same choices, in-flight load and learned peaks included", () => {
    fc.assert(
      fc.property(routeArb(0), fc.array(fc.string({ minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 30 }), fc.array(fc.record({ idx: fc.nat(8), users: fc.constantFrom(1, 100), trafficBps: fc.constantFrom(0, 1e9, 3e10), atMs: fc.constantFrom(0, 2000) }), { maxLength: 6 }), (r, users, reports) => {
        const lean = new Balancer();
        const explained = new Balancer();
        for (const rep of reports) {
          for (const b of [lean, explained]) b.observeReport(`r0s${rep.idx}`, { users: rep.users, trafficBps: rep.trafficBps, atMs: rep.atMs });
        }
        for (const [i, userId] of users.entries()) {
          const prev = new Map(r.prev === null ? [] : [[r.route.routeId, r.prev]]);
          const req = { userId, routes: [r.route], servers: r.servers, previousAssignments: prev, nowMs: 3000 + i };
          const a = lean.decideForSubscriber({ ...req, explain: false });
          const b = explained.decideForSubscriber(req);
          expect(a.map((x) => pick(x.decision))).toEqual(b.map((x) => pick(x.decision)));
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("rendezvous hash", () => {
  it("the user's half hashed once gives the same hash", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (u, i) => {
        expect(rendezvousHashFrom(rendezvousSeed(u), i)).toBe(rendezvousHash(u, i));
      }),
    );
    // Pinned (values of the one-pass version): ties must keep falling the same way.
    expect(rendezvousHash("user-1", "inbound-1")).toBe(1293766226);
    expect(rendezvousHash("", "")).toBe(3099819549);
    expect(rendezvousHash("0b9f1d2e-0000-4000-8000-000000000001", "5a1c3e2b-1111-4111-8111-111111111111")).toBe(91810776);
    expect(rendezvousHash("ab", "c")).not.toBe(rendezvousHash("a", "bc"));
  });
});
