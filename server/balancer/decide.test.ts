import { describe, expect, it } from "vitest";
import { decideRoute, RATE_MIN_USERS } from "./decide";
import { rendezvousHash } from "./hash";
import { MBIT, route, srv } from "./testing";
import type { DecideInput, ServerMetrics } from "./types";

const base = (servers: Record<string, ServerMetrics>, over: Partial<DecideInput> = {}): DecideInput => ({
  userId: "u1",
  route: route(Object.keys(servers)),
  servers,
  previousInboundId: null,
  nowMs: 1000,
  ...over,
});

describe("decideRoute: an inbound its server does not serve (issue 25)", () => {
  const out = (inboundId: string, reason = "Reality needs Xray-core") => new Map([[inboundId, reason]]);

  it("is never picked while its server is healthy: the route's other inbound is, whatever the scores", () => {
    // a is far emptier, so it would win on scores.
    const servers = { a: srv({ reportedTrafficBps: 0, unavailableInbounds: out("in-a") }), b: srv({ reportedTrafficBps: 900 * MBIT, reportedUsers: 90 }) };
    for (const previousInboundId of [null, "in-a"]) {
      const d = decideRoute(base(servers, { previousInboundId }));
      expect(d.inboundId).toBe("in-b");
      expect(d.reason).toBe("best");
      expect(d.candidates.find((c) => c.inboundId === "in-a")).toMatchObject({ excluded: "inbound-unavailable", score: null, note: "inbound not served: Reality needs Xray-core" });
      expect(decideRoute(base(servers, { previousInboundId, explain: false })).inboundId).toBe("in-b");
    }
    expect(decideRoute(base(servers, { previousInboundId: "in-a" })).explanation).toContain("Previous inbound in-a is not usable (inbound-unavailable)");
  });

  it("only its own inbound is out: another inbound of the same server is still a candidate", () => {
    const r = route(["a"]);
    r.inbounds = [
      { inboundId: "reality", serverId: "a", isFallback: false },
      { inboundId: "plain", serverId: "a", isFallback: false },
    ];
    const d = decideRoute(base({ a: srv({ unavailableInbounds: out("reality") }) }, { route: r }));
    expect(d.inboundId).toBe("plain");
    expect(d.reason).toBe("best");
  });

  it("a healthy server whose only inbound is unavailable: the route falls to its fallback, and with none gives no line", () => {
    const servers = { a: srv({ unavailableInbounds: out("in-a") }), f: srv() };
    const withFallback = decideRoute(base(servers, { route: route(["a"], {}, ["f"]) }));
    expect(withFallback).toMatchObject({ inboundId: "in-f", reason: "fallback" });
    const alone = decideRoute(base({ a: servers.a }, { route: route(["a"]) }));
    expect(alone).toMatchObject({ inboundId: null, serverId: null, reason: "none" });
    expect(alone.explanation).toBe("No inbound: every inbound of this route is unavailable (not served by its server) or on a disabled server.");
  });

  it("an unavailable fallback is not used, and panic never picks an unavailable inbound", () => {
    // Every server down: panic picks among enabled servers' inbounds, but not b's, which b does not serve.
    const servers = {
      a: srv({ available: false, reportedTrafficBps: 90 * MBIT }),
      b: srv({ available: false, reportedTrafficBps: 0, unavailableInbounds: out("in-b") }),
      f: srv({ unavailableInbounds: out("in-f") }),
    };
    const d = decideRoute(base(servers, { route: route(["a", "b"], {}, ["f"]) }));
    expect(d).toMatchObject({ inboundId: "in-a", reason: "panic" });
    expect(d.candidates.find((c) => c.inboundId === "in-f")?.excluded).toBe("inbound-unavailable");
  });

  it("all inbounds of a route unavailable: no line, in panic or not", () => {
    for (const available of [true, false]) {
      const servers = { a: srv({ available, unavailableInbounds: out("in-a") }), b: srv({ available, unavailableInbounds: out("in-b", "port 443 does not accept connections (ECONNREFUSED)") }) };
      for (const explain of [true, false]) {
        expect(decideRoute(base(servers, { explain }))).toMatchObject({ inboundId: null, reason: "none" });
      }
    }
  });

  it("comes back: once its server serves it again it is a candidate, and the better one wins", () => {
    const busy = srv({ reportedTrafficBps: 900 * MBIT, reportedUsers: 90 });
    const before = decideRoute(base({ a: srv({ unavailableInbounds: out("in-a") }), b: busy }));
    expect(before.inboundId).toBe("in-b");
    const after = decideRoute(base({ a: srv({ unavailableInbounds: new Map() }), b: busy }));
    expect(after.inboundId).toBe("in-a");
    expect(decideRoute(base({ a: srv(), b: busy })).inboundId).toBe("in-a");
  });
});

describe("decideRoute: pools", () => {
  it("picks the server with the most free bandwidth per user", () => {
    const d = decideRoute(
      base({
        a: srv({ capacityOverrideBps: 1000 * MBIT, reportedTrafficBps: 900 * MBIT, reportedUsers: 9 }),
        b: srv({ capacityOverrideBps: 1000 * MBIT, reportedTrafficBps: 500 * MBIT, reportedUsers: 9 }),
      }),
    );
    expect(d.inboundId).toBe("in-b");
    expect(d.reason).toBe("best");
    expect(d.candidates.find((c) => c.inboundId === "in-b")?.score).toBeCloseTo((500 * MBIT) / 10);
    expect(d.explanation).toMatch(/Picked in-b/);
  });

  it("uses the inbound name in explanations", () => {
    const r = route(["a"]);
    r.inbounds = [{ inboundId: "x", serverId: "a", isFallback: false, name: "🇺🇸 New York" }];
    const d = decideRoute(base({ a: srv() }, { route: r }));
    expect(d.explanation).toContain("🇺🇸 New York");
  });

  it("leaves the fallback out while others are available", () => {
    const servers = { a: srv({ reportedTrafficBps: 99 * MBIT }), f: srv() };
    const d = decideRoute(base(servers, { route: route(["a"], {}, ["f"]) }));
    expect(d.inboundId).toBe("in-a");
    expect(d.candidates.find((c) => c.inboundId === "in-f")?.excluded).toBe("fallback-reserve");
  });

  it("uses the fallback when every regular inbound is down", () => {
    const servers = { a: srv({ available: false }), b: srv({ enabled: false }), f: srv() };
    const d = decideRoute(base(servers, { route: route(["a", "b"], {}, ["f"]) }));
    expect(d.reason).toBe("fallback");
    expect(d.inboundId).toBe("in-f");
    expect(d.candidates.find((c) => c.inboundId === "in-a")?.excluded).toBe("server-down");
    expect(d.candidates.find((c) => c.inboundId === "in-b")?.excluded).toBe("server-disabled");
  });

  it("fallback-only route uses the fallback", () => {
    const d = decideRoute(base({ f: srv() }, { route: route([], {}, ["f"]) }));
    expect(d.reason).toBe("fallback");
    expect(d.inboundId).toBe("in-f");
  });

  it("panics among enabled servers when every server is down (fallback included)", () => {
    const servers = {
      a: srv({ available: false, reportedTrafficBps: 90 * MBIT }),
      b: srv({ available: false }),
      c: srv({ enabled: false }),
      f: srv({ available: false, reportedTrafficBps: 95 * MBIT }),
    };
    const d = decideRoute(base(servers, { route: route(["a", "b", "c"], {}, ["f"]) }));
    expect(d.reason).toBe("panic");
    expect(d.inboundId).toBe("in-b");
    expect(d.candidates.find((c) => c.inboundId === "in-c")?.score).toBeNull();
    expect(d.explanation).toMatch(/Panic/);
  });

  it("returns none when every server is disabled (even in panic)", () => {
    const d = decideRoute(base({ a: srv({ enabled: false }), b: srv({ enabled: false, available: false }) }));
    expect(d.reason).toBe("none");
    expect(d.inboundId).toBeNull();
    expect(d.serverId).toBeNull();
  });

  it("returns none for an empty route and for unknown servers", () => {
    expect(decideRoute(base({}, { route: route([]) })).reason).toBe("none");
    const d = decideRoute(base({}, { route: route(["ghost"]) }));
    expect(d.reason).toBe("none");
    expect(d.candidates[0]?.excluded).toBe("server-down");
  });

  it("never picks a disabled server", () => {
    const d = decideRoute(base({ a: srv({ enabled: false }), b: srv({ reportedTrafficBps: 99 * MBIT, reportedUsers: 50 }) }));
    expect(d.inboundId).toBe("in-b");
  });

  it("scores zero-user servers without dividing by zero", () => {
    const d = decideRoute(base({ a: srv(), b: srv() }));
    for (const c of d.candidates) expect(c.score).toBe(100 * MBIT);
  });
});

describe("decideRoute: capacity", () => {
  it("capacity override beats the learned peak", () => {
    const d = decideRoute(
      base({
        a: srv({ capacityOverrideBps: 10_000 * MBIT, learnedPeakBps: 500 * MBIT, reportedTrafficBps: 500 * MBIT, reportedUsers: 10 }),
        b: srv({ learnedPeakBps: 2000 * MBIT, reportedTrafficBps: 500 * MBIT, reportedUsers: 10 }),
      }),
    );
    expect(d.inboundId).toBe("in-a");
    expect(d.candidates[0]?.note).toContain("override");
  });

  it("explain says whether a learned peak is what the link carries (seen full) or a lower bound", () => {
    const d = decideRoute(
      base({
        a: srv({ learnedPeakBps: 500 * MBIT, reportedTrafficBps: 400 * MBIT, reportedUsers: 100, heldBack: true }),
        b: srv({ learnedPeakBps: 800 * MBIT, reportedTrafficBps: 400 * MBIT, reportedUsers: 100 }),
      }),
    );
    const note = (id: string) => d.candidates.find((c) => c.inboundId === id)?.note;
    expect(note("in-a")).toContain("[learned peak, link seen full]");
    expect(note("in-b")).toContain("[learned peak, a lower bound]");
  });

  it("floors the learned capacity for a new server", () => {
    const d = decideRoute(base({ a: srv() }, { options: { capacityFloorBps: 50 * MBIT } }));
    expect(d.candidates[0]?.score).toBe(50 * MBIT);
  });

  it("a saturated fleet falls back to the fair share C/(U+1)", () => {
    const d = decideRoute(
      base({
        small: srv({ learnedPeakBps: 1000 * MBIT, reportedTrafficBps: 1000 * MBIT, reportedUsers: 300 }),
        big: srv({ learnedPeakBps: 2500 * MBIT, reportedTrafficBps: 2500 * MBIT, reportedUsers: 300 }),
      }),
    );
    expect(d.inboundId).toBe("in-big");
  });

  it("decays the learned peak to now, but a clock going backwards does not grow it", () => {
    const m = srv({ learnedPeakBps: 1000 * MBIT, reportedAt: 10_000 });
    const day = 24 * 3600 * 1000;
    const later = decideRoute(base({ a: m }, { nowMs: 10_000 + day }));
    expect(later.candidates[0]?.score).toBeCloseTo(500 * MBIT);
    const earlier = decideRoute(base({ a: m }, { nowMs: 0 }));
    expect(earlier.candidates[0]?.score).toBe(1000 * MBIT);
  });
});

describe("decideRoute: stickiness", () => {
  const servers = (curT: number, otherT: number) => ({
    cur: srv({ capacityOverrideBps: 1000 * MBIT, reportedTrafficBps: curT * MBIT, reportedUsers: 10 }),
    alt: srv({ capacityOverrideBps: 1000 * MBIT, reportedTrafficBps: otherT * MBIT, reportedUsers: 9 }),
  });

  it("keeps the current inbound within the hysteresis margin", () => {
    // cur: (1000-500)/10 = 50; alt: (1000-440)/10 = 56 → 12% better, not > 25%.
    const d = decideRoute(base(servers(500, 440), { previousInboundId: "in-cur" }));
    expect(d.inboundId).toBe("in-cur");
    expect(d.reason).toBe("sticky");
    expect(d.explanation).toMatch(/Kept in-cur: in-alt is only 12% better; more than 25% better would be needed/);
  });

  // cur has spare (500 Mbit/s): keepSatisfied would keep its users; these test the margin alone.
  const margin = { keepSatisfied: false };

  it("moves when the alternative is better by more than the margin", () => {
    // alt: (1000-300)/10 = 70 → 40% better
    const d = decideRoute(base(servers(500, 300), { previousInboundId: "in-cur", options: margin }));
    expect(d.inboundId).toBe("in-alt");
    expect(d.reason).toBe("best");
    expect(d.explanation).toMatch(/Moved from in-cur to in-alt: 40% more/);
  });

  it("honours a custom hysteresis", () => {
    const d = decideRoute(base(servers(500, 440), { previousInboundId: "in-cur", route: route(["cur", "alt"], { hysteresis: 0.05 }), options: margin }));
    expect(d.inboundId).toBe("in-alt");
  });

  it("does not double-count the current user (identical servers never look like a move)", () => {
    // Same load on both; the user is one of cur's 10 users. Counting them twice would make
    // cur look like 11 users and alt like 10+1: a tie that flips on every refresh.
    const s = {
      cur: srv({ capacityOverrideBps: 1000 * MBIT, reportedTrafficBps: 500 * MBIT, reportedUsers: 10 }),
      alt: srv({ capacityOverrideBps: 1000 * MBIT, reportedTrafficBps: 500 * MBIT, reportedUsers: 10 }),
    };
    const d = decideRoute(base(s, { previousInboundId: "in-cur", route: route(["cur", "alt"], { hysteresis: 0 }) }));
    expect(d.inboundId).toBe("in-cur");
    const cur = d.candidates.find((c) => c.inboundId === "in-cur");
    expect(cur?.score).toBeCloseTo((500 * MBIT) / 10);
    expect(cur?.note).toMatch(/already counted/);
    expect(d.candidates.find((c) => c.inboundId === "in-alt")?.score).toBeCloseTo((500 * MBIT) / 11);
  });

  it("re-picks when the user's inbound left the route", () => {
    const d = decideRoute(base(servers(500, 440), { previousInboundId: "in-gone" }));
    expect(d.reason).toBe("best");
    expect(d.inboundId).toBe("in-alt");
    expect(d.explanation).toMatch(/left the route/);
  });

  it("moves off a server that went down or was disabled", () => {
    const s = servers(500, 440);
    s.cur.available = false;
    expect(decideRoute(base(s, { previousInboundId: "in-cur" })).inboundId).toBe("in-alt");
    s.cur.available = true;
    s.cur.enabled = false;
    const d = decideRoute(base(s, { previousInboundId: "in-cur" }));
    expect(d.inboundId).toBe("in-alt");
    expect(d.explanation).toMatch(/server-disabled/);
  });

  it("needs a minimum absolute gain when the current server has crumbs left", () => {
    const s = {
      cur: srv({ capacityOverrideBps: 1000 * MBIT, reportedTrafficBps: 999 * MBIT, reportedUsers: 10 }), // 0.1 Mbit/s
      alt: srv({ capacityOverrideBps: 1000 * MBIT, reportedTrafficBps: 998 * MBIT, reportedUsers: 10 }), // ~0.18
    };
    expect(decideRoute(base(s, { previousInboundId: "in-cur" })).inboundId).toBe("in-cur");
  });

  it("keeps a user moving between two inbounds of the same server", () => {
    const r = route(["a"]);
    r.inbounds = [
      { inboundId: "a1", serverId: "a", isFallback: false },
      { inboundId: "a2", serverId: "a", isFallback: false },
    ];
    for (const u of ["u1", "u2", "u3", "u4"]) {
      const d = decideRoute(base({ a: srv({ reportedUsers: 5, reportedTrafficBps: 10 * MBIT }) }, { route: r, userId: u, previousInboundId: "a1" }));
      expect(d.inboundId).toBe("a1");
    }
  });
});

/**
 * The fail-back dwell is on by default (12 h); these tests name it, and leave keepSatisfied
 * out (its own tests are below) so they exercise the dwell alone.
 */
const DAMPED = { failBackDwellMs: 12 * 3600_000, keepSatisfied: false };

describe("decideRoute: damped fail-back", () => {
  const HOUR = 3600_000;
  const now = 100 * HOUR;
  // cur: (1000 − 500) / 10 = 50 Mbit/s per user; back: (1000 − 100) / 10 = 90 → 80 % better.
  const servers = (backSinceMs?: number) => ({
    cur: srv({ capacityOverrideBps: 1000 * MBIT, reportedTrafficBps: 500 * MBIT, reportedUsers: 10 }),
    back: srv({ capacityOverrideBps: 1000 * MBIT, reportedTrafficBps: 100 * MBIT, reportedUsers: 9, availableSinceMs: backSinceMs }),
  });
  const decide = (backSinceMs: number | undefined, over: Partial<DecideInput> = {}) =>
    decideRoute(base(servers(backSinceMs), { previousInboundId: "in-cur", nowMs: now, options: DAMPED, ...over }));

  it("keeps a user whose server works off a server that came back within the dwell", () => {
    const d = decide(now - 2 * HOUR);
    expect(d.inboundId).toBe("in-cur");
    expect(d.reason).toBe("sticky");
    expect(d.explanation).toMatch(/fail-back dwell: in-back came back 120 min ago; hysteresis 25%/);
  });

  it("moves there as usual once the dwell is over, or when nothing says when it came back", () => {
    expect(decide(now - 12 * HOUR).inboundId).toBe("in-back");
    expect(decide(undefined).inboundId).toBe("in-back");
  });

  it("still moves a starved server's user to the returning server", () => {
    const s = servers(now - HOUR);
    // cur: (1000 − 800) / 50 = 4 Mbit/s free per user, 16 Mbit/s traffic per user;
    // back: (1000 − 150) / 6 = 142 free, 30 traffic per user: cur is starved (16 × 1.25 < 30).
    s.cur.reportedTrafficBps = 800 * MBIT;
    s.cur.reportedUsers = 50;
    s.back.reportedTrafficBps = 150 * MBIT;
    s.back.reportedUsers = 5;
    const d = decideRoute(base(s, { previousInboundId: "in-cur", nowMs: now, options: DAMPED }));
    expect(d.inboundId).toBe("in-back");
    expect(d.explanation).toMatch(/fail-back dwell: in-back came back 60 min ago/);
  });

  it("does not move a saturated server's user for spare capacity alone, only for a much larger fair share", () => {
    const s = servers(now - HOUR);
    s.cur.reportedTrafficBps = 1000 * MBIT; // no spare: judged by fair share 100 vs 1000/10 = 100 → stays
    expect(decideRoute(base(s, { previousInboundId: "in-cur", nowMs: now, options: DAMPED })).inboundId).toBe("in-cur");
    s.cur.reportedUsers = 100; // fair share 10 vs 1000/10 = 100 Mbit/s: 10×
    s.back.reportedTrafficBps = 150 * MBIT; // …and cur is starved: 10 Mbit/s per user vs back's 16.7
    expect(decideRoute(base(s, { previousInboundId: "in-cur", nowMs: now, options: DAMPED })).inboundId).toBe("in-back");
  });

  it("sends new users and users of a server that is down to the returning server at once", () => {
    expect(decide(now - HOUR, { previousInboundId: null }).inboundId).toBe("in-back");
    const s = servers(now - HOUR);
    s.cur.available = false;
    expect(decideRoute(base(s, { previousInboundId: "in-cur", nowMs: now, options: DAMPED })).inboundId).toBe("in-back");
  });

  it("applies to round-robin routes too", () => {
    const s = { cur: srv({ reportedUsers: 10 }), back: srv({ reportedUsers: 3, availableSinceMs: now - HOUR }) }; // 1/4 vs 1/10: 2.5×
    const r = route(["cur", "back"], { algorithm: "round-robin" });
    expect(decideRoute(base(s, { route: r, previousInboundId: "in-cur", nowMs: now, options: DAMPED })).inboundId).toBe("in-cur");
    s.back.availableSinceMs = now - 13 * HOUR;
    expect(decideRoute(base(s, { route: r, previousInboundId: "in-cur", nowMs: now, options: DAMPED })).inboundId).toBe("in-back");
  });

  it("ignores a return time in the future (clock gone backwards) instead of freezing moves", () => {
    expect(decide(now + HOUR).inboundId).toBe("in-back");
  });

  it("a dwell of 0 turns it off", () => {
    expect(decide(now - HOUR, { options: { ...DAMPED, failBackDwellMs: 0 } }).inboundId).toBe("in-back");
    expect(decide(now - HOUR, { options: {} }).inboundId).toBe("in-cur"); // the default: 12 h
  });
});

describe("decideRoute: round-robin", () => {
  it("lowest (U+1)/coefficient wins; score presented as coefficient/(U+1)", () => {
    const r = route(["a", "b"], { algorithm: "round-robin" });
    const d = decideRoute(base({ a: srv({ reportedUsers: 10 }), b: srv({ reportedUsers: 15, coefficient: 2 }) }, { route: r }));
    expect(d.inboundId).toBe("in-b"); // 16/2 = 8 < 11/1
    expect(d.candidates[1]?.score).toBeCloseTo(2 / 16);
  });

  it("hysteresis applies to round-robin too", () => {
    const r = route(["a", "b"], { algorithm: "round-robin" });
    const s = { a: srv({ reportedUsers: 10 }), b: srv({ reportedUsers: 9 }) };
    expect(decideRoute(base(s, { route: r, previousInboundId: "in-a" })).inboundId).toBe("in-a");
    const s2 = { a: srv({ reportedUsers: 10 }), b: srv({ reportedUsers: 5 }) };
    expect(decideRoute(base(s2, { route: r, previousInboundId: "in-a" })).inboundId).toBe("in-b");
  });

  it("a non-positive coefficient scores zero", () => {
    const r = route(["a", "b"], { algorithm: "round-robin" });
    const d = decideRoute(base({ a: srv({ coefficient: 0 }), b: srv({ reportedUsers: 100 }) }, { route: r }));
    expect(d.inboundId).toBe("in-b");
  });
});

describe("decideRoute: ties", () => {
  it("spreads equal servers across many users deterministically", () => {
    const ids = ["a", "b", "c", "d"];
    const servers = Object.fromEntries(ids.map((id) => [id, srv({ reportedUsers: 5, reportedTrafficBps: 10 * MBIT })]));
    const counts = new Map<string, number>();
    for (let i = 0; i < 4000; i++) {
      const inp = base(servers, { userId: `user-${i}` });
      const d = decideRoute(inp);
      expect(decideRoute(inp).inboundId).toBe(d.inboundId);
      counts.set(d.inboundId as string, (counts.get(d.inboundId as string) ?? 0) + 1);
    }
    expect(counts.size).toBe(4);
    for (const n of counts.values()) expect(n).toBeGreaterThan(850);
  });

  it("reports a tie in the explanation", () => {
    const d = decideRoute(base({ a: srv(), b: srv() }));
    expect(d.explanation).toMatch(/tie broken by user hash/);
  });
});

describe("decideRoute: prior for a server with no learned peak", () => {
  const score = (servers: Record<string, ServerMetrics>, id: string, over: Partial<DecideInput> = {}) =>
    decideRoute(base(servers, { nowMs: 0, ...over })).candidates.find((c) => c.serverId === id);

  it("assumes the mean of its peers' peaks, not the best one", () => {
    const c = score(
      {
        small: srv({ learnedPeakBps: 100 * MBIT, reportedTrafficBps: 100 * MBIT, reportedUsers: 50 }),
        big: srv({ learnedPeakBps: 900 * MBIT, reportedTrafficBps: 900 * MBIT, reportedUsers: 50 }),
        blind: srv(),
      },
      "blind",
    );
    expect(c?.score).toBe(500 * MBIT); // (100 + 900) / 2, nobody on it
    expect(c?.note).toContain("no data yet: peers' mean peak");
  });

  it("a blind server is not filled like the biggest: the big peer wins a newcomer", () => {
    const d = decideRoute(
      base({
        big: srv({ learnedPeakBps: 5000 * MBIT, reportedTrafficBps: 1000 * MBIT, reportedUsers: 300 }),
        // small's users were seen held back: capacities are shown, so rule 0 (fewest users) is off.
        small: srv({ learnedPeakBps: 100 * MBIT, reportedTrafficBps: 100 * MBIT, reportedUsers: 40, heldBack: true }),
        blind: srv({ reportedUsers: 300 }),
      }),
    );
    // big: 4000 / 301 ≈ 13.3 Mbit/s free per user; blind: 2550 / 301 ≈ 8.5 (best-peer prior: 16.6).
    expect(d.inboundId).toBe("in-big");
  });

  it("equals the only peer's peak when just one server has reported", () => {
    const c = score({ first: srv({ learnedPeakBps: 700 * MBIT, reportedTrafficBps: 0 }), blind: srv() }, "blind");
    expect(c?.score).toBe(700 * MBIT);
  });

  it("is the floor when no server has a peak yet (zero users everywhere)", () => {
    const d = decideRoute(base({ a: srv(), b: srv() }));
    for (const c of d.candidates) expect(c.score).toBe(100 * MBIT);
    expect(d.explanation).toMatch(/tie broken by user hash/);
  });

  it("uses peers' peaks decayed to now, undecayed when the clock went backwards", () => {
    const day = 24 * 3600 * 1000;
    const servers = { a: srv({ learnedPeakBps: 1000 * MBIT, reportedAt: 0 }), b: srv({ learnedPeakBps: 600 * MBIT, reportedAt: 0 }), blind: srv() };
    expect(score(servers, "blind", { nowMs: day })?.score).toBeCloseTo(400 * MBIT); // (500 + 300) / 2
    expect(score(servers, "blind", { nowMs: -day })?.score).toBe(800 * MBIT);
  });

  it("only counts servers of the pool: a server that is down does not set the prior", () => {
    const servers = {
      up: srv({ learnedPeakBps: 200 * MBIT }),
      down: srv({ available: false, learnedPeakBps: 10_000 * MBIT }),
      blind: srv(),
    };
    expect(score(servers, "blind")?.score).toBe(200 * MBIT);
  });
});

describe("decideRoute: a user on a saturated server is judged by fair share alone", () => {
  // tiny: a 50 Mbit/s link at its floor of 100 Mbit/s: (100 − 50) / (24 + 1) = 2 Mbit/s free per
  // user, fair share 100 / 25 = 4; huge: saturated at its peak, fair share 10000 / 1200 ≈ 8.3,
  // and seen full (held back), so the pool is not blind (rule 0b).
  const fleet = () => ({
    huge: srv({ learnedPeakBps: 10_000 * MBIT, reportedTrafficBps: 10_000 * MBIT, reportedUsers: 1200, heldBack: true }),
    tiny: srv({ learnedPeakBps: 50 * MBIT, reportedTrafficBps: 50 * MBIT, reportedUsers: 24 }),
  });

  it("keeps a user for spare capacity on a server with a smaller fair share, and says so", () => {
    const d = decideRoute(base(fleet(), { previousInboundId: "in-huge" }));
    expect(d.inboundId).toBe("in-huge");
    expect(d.reason).toBe("sticky");
    expect(d.explanation).toMatch(/in-huge has no spare capacity and in-tiny's fair share is only 0% larger \(4\.00 vs 8\.33 Mbit\/s\); more than 25% better would be needed/);
  });

  it("spare elsewhere with an equal fair share is no gain (equal scores: stays)", () => {
    const s = fleet();
    s.huge.reportedUsers = 2500; // fair share 4.00 = tiny's 4.00
    const d = decideRoute(base(s, { previousInboundId: "in-huge" }));
    expect(d.inboundId).toBe("in-huge");
    expect(d.explanation).toMatch(/fair share is only 0% larger \(4\.00 vs 4\.00 Mbit\/s\)/);
  });

  it("moves when the fair share there is larger by the route's margin, and not within it", () => {
    const s = fleet();
    s.huge.reportedUsers = 3000; // 3.33: tiny's 4.00 is 20% larger
    expect(decideRoute(base(s, { previousInboundId: "in-huge" })).inboundId).toBe("in-huge");
    s.huge.reportedUsers = 4000; // 2.50: 60% larger
    const d = decideRoute(base(s, { previousInboundId: "in-huge" }));
    expect(d.inboundId).toBe("in-tiny");
    expect(d.explanation).toMatch(/in-huge has no spare capacity and in-tiny offers a 60% larger fair share/);
  });

  it("counts crumbs below minMoveGainBps as no spare; minMoveGainBps 0 moves for any spare again", () => {
    const s = fleet();
    s.huge.reportedTrafficBps = 9_000 * MBIT; // 1000 / 1200 ≈ 0.83 Mbit/s free per user: crumbs
    s.tiny.reportedTrafficBps = 0; // 100 / 25 = 4 free per user, fair share 4 < 8.33
    s.huge.reportedUsers = 2500; // fair share 4.00: equal, so only the spare could move the user
    expect(decideRoute(base(s, { previousInboundId: "in-huge", options: { keepSatisfied: false } })).inboundId).toBe("in-huge");
    const off = decideRoute(base(s, { previousInboundId: "in-huge", options: { keepSatisfied: false, minMoveGainBps: 0 } }));
    expect(off.inboundId).toBe("in-tiny");
    expect(off.explanation).toMatch(/more free bandwidth per user/);
  });

  it("a current server with spare still compares spare (rule 2 keeps it off a smaller fair share)", () => {
    // cur: a 1 Gbit/s link (set, so rule 0b does not hold its users), 500 carried by 50 users:
    // 10 Mbit/s free per user, fair share 20.
    const cur = srv({ capacityOverrideBps: 1000 * MBIT, reportedTrafficBps: 500 * MBIT, reportedUsers: 50 });
    const bigShare = { cur, alt: srv({ capacityOverrideBps: 1000 * MBIT, reportedTrafficBps: 100 * MBIT, reportedUsers: 20 }) }; // 42.9 free, share 47.6
    expect(decideRoute(base(bigShare, { previousInboundId: "in-cur", options: { keepSatisfied: false } })).inboundId).toBe("in-alt");
    const smallShare = { cur, alt: srv({ capacityOverrideBps: 300 * MBIT, reportedTrafficBps: 0, reportedUsers: 19 }) }; // 15 free, share 15
    const d = decideRoute(base(smallShare, { previousInboundId: "in-cur", options: { keepSatisfied: false } }));
    expect(d.inboundId).toBe("in-cur");
    expect(d.explanation).toMatch(/in-alt has spare capacity but a smaller fair share \(15\.0 vs 20\.0 Mbit\/s\)/);
  });

  it("a current server that reports zero users (only this user, in flight) is not saturated", () => {
    const s = fleet();
    s.huge.reportedUsers = 0;
    s.huge.reportedTrafficBps = 0; // 10000 free for the one user: kept, nothing to gain
    expect(decideRoute(base(s, { previousInboundId: "in-huge" })).inboundId).toBe("in-huge");
  });

  it("decides the same with the clock gone backwards (peaks not decayed, no dwell)", () => {
    const s = fleet();
    s.huge.reportedAt = 5000;
    s.tiny.reportedAt = 5000;
    s.tiny.availableSinceMs = 5000; // a return time in the future is ignored
    s.huge.reportedUsers = 2500;
    expect(decideRoute(base(s, { previousInboundId: "in-huge", nowMs: 1000 })).inboundId).toBe("in-huge");
    s.huge.reportedUsers = 4000;
    expect(decideRoute(base(s, { previousInboundId: "in-huge", nowMs: 1000 })).inboundId).toBe("in-tiny");
  });

  it("does not apply to a new user: spare capacity still wins a first placement", () => {
    expect(decideRoute(base(fleet())).inboundId).toBe("in-tiny");
  });

  it("moves to a destination with no users at all when its fair share is larger", () => {
    const s = fleet();
    s.tiny.reportedUsers = 0;
    s.tiny.reportedTrafficBps = 0; // free 100 Mbit/s, fair share 100 Mbit/s
    expect(decideRoute(base(s, { previousInboundId: "in-huge" })).inboundId).toBe("in-tiny");
  });

  it("a user of a server that is down still goes where spare capacity is", () => {
    const s = fleet();
    s.huge.available = false;
    const d = decideRoute(base(s, { previousInboundId: "in-huge" }));
    expect(d.inboundId).toBe("in-tiny");
    expect(d.reason).toBe("best");
  });

  it("with every server down (no candidates) the panic pick is not held by it, and an empty route decides nothing", () => {
    const s = fleet();
    s.huge.available = false;
    s.tiny.available = false;
    expect(decideRoute(base(s, { previousInboundId: "in-huge" })).reason).toBe("panic");
    const none = decideRoute(base(s, { previousInboundId: "in-huge", route: route([]) }));
    expect(none.inboundId).toBeNull();
    expect(none.reason).toBe("none");
  });
});

describe("decideRoute: during the fail-back dwell only a starved server gives users back", () => {
  const HOUR = 3600_000;
  const now = 100 * HOUR;
  // cur: saturated 1 Gbit/s, 200 users → 5 Mbit/s each, seen full (so the pool is not blind,
  // rule 0b); back: 2 Gbit/s back 1 h ago, 10 users at 8 Mbit/s each. Fair share 2000 / 11 ≈ 182
  // vs 1000 / 200 = 5: far beyond any margin.
  const fleet = () => ({
    cur: srv({ learnedPeakBps: 1000 * MBIT, reportedTrafficBps: 1000 * MBIT, reportedUsers: 200, heldBack: true }),
    back: srv({ learnedPeakBps: 2000 * MBIT, reportedTrafficBps: 80 * MBIT, reportedUsers: 10, availableSinceMs: now - HOUR }),
  });
  const decide = (servers: Record<string, ServerMetrics>, over: Partial<DecideInput> = {}) =>
    decideRoute(base(servers, { previousInboundId: "in-cur", nowMs: now, options: DAMPED, ...over }));

  it("moves a user whose server gives less than the best per-user traffic ÷ (1 + hysteresis)", () => {
    const d = decide(fleet()); // 5 × 1.25 < 8
    expect(d.inboundId).toBe("in-back");
    expect(d.explanation).toMatch(/fail-back dwell: in-back came back 60 min ago/);
  });

  it("needs only the route's margin, not failBackHysteresis, when the user's server is starved", () => {
    const s = {
      // cur: 1 Gbit/s saturated by 100 users (10 each): fair share 10; back: 1.5 Gbit/s, 500 Mbit/s
      // carried by 20 users (25 each): fair share 1500 / 21 ≈ 71 — 7× (fails a 4× margin below).
      cur: srv({ learnedPeakBps: 1000 * MBIT, reportedTrafficBps: 1000 * MBIT, reportedUsers: 100 }),
      back: srv({ learnedPeakBps: 1500 * MBIT, reportedTrafficBps: 500 * MBIT, reportedUsers: 20, availableSinceMs: now - HOUR }),
    };
    expect(decide(s, { options: { ...DAMPED, failBackHysteresis: 10 } }).inboundId).toBe("in-back");
    s.cur.reportedUsers = 70; // 14.3 × 1.25 < 25: still starved; fair share 1000 / 70 ≈ 14.3 vs 71: 5×
    expect(decide(s, { options: { ...DAMPED, failBackHysteresis: 10 } }).inboundId).toBe("in-back");
    s.cur.reportedUsers = 45; // 22.2 × 1.25 ≥ 25: not starved, kept however large the gain
    expect(decide(s, { options: { ...DAMPED, failBackHysteresis: 0 } }).inboundId).toBe("in-cur");
  });

  it("keeps a user whose server gives about what users get anywhere, and says why", () => {
    const s = fleet();
    s.cur.reportedUsers = 150; // 6.67 × 1.25 = 8.33 ≥ 8
    const d = decide(s);
    expect(d.inboundId).toBe("in-cur");
    expect(d.reason).toBe("sticky");
    expect(d.explanation).toMatch(/its users get 6\.67 Mbit\/s each, within 25% of the best \(8\.00 Mbit\/s on in-back\), so it is not starved/);
    expect(d.explanation).toMatch(/fail-back dwell: in-back came back 60 min ago; hysteresis 25%/);
  });

  it("uses the route's hysteresis as the margin", () => {
    const s = fleet();
    s.cur.reportedUsers = 150;
    const r = route(["cur", "back"], { hysteresis: 0.1 }); // 6.67 × 1.1 < 8: starved
    expect(decide(s, { route: r }).inboundId).toBe("in-back");
  });

  it("a server with fewer than RATE_MIN_USERS users does not set the reference", () => {
    const s = fleet();
    s.back.reportedUsers = RATE_MIN_USERS - 1;
    s.back.reportedTrafficBps = 100 * MBIT; // 25 Mbit/s each, but only 4 users
    s.cur.reportedUsers = 100; // 10 Mbit/s each: the best among servers with ≥ 5 users
    const d = decide(s);
    expect(d.inboundId).toBe("in-cur");
    expect(d.explanation).toMatch(/within 25% of the best \(10\.0 Mbit\/s on in-cur\)/);
  });

  it("with no reported rate anywhere (every server under RATE_MIN_USERS) the returned server's offer ÷ (1 + failBackHysteresis) is the reference", () => {
    const s = {
      cur: srv({ capacityOverrideBps: 1000 * MBIT, reportedTrafficBps: 990 * MBIT, reportedUsers: 3 }),
      back: srv({ capacityOverrideBps: 1000 * MBIT, reportedUsers: 0, availableSinceMs: now - HOUR }),
    };
    // 330 Mbit/s each × 1.25 ≥ 1000 free per user ÷ 4 = 250: its users get plenty where they are.
    const kept = decide(s, { explain: true });
    expect(kept.inboundId).toBe("in-cur");
    expect(kept.explanation).toMatch(/its users get 330 Mbit\/s each, within 25% of what in-back offers a newcomer ÷ 4 \(250 Mbit\/s\), so it is not starved/);
    expect(decide(s, { options: { ...DAMPED, failBackHysteresis: 1 } }).inboundId).toBe("in-back"); // ÷ 2 = 500 > 412
    s.cur.reportedUsers = 4; // 247.5 × 1.25 = 309 ≥ 250: kept
    expect(decide(s).inboundId).toBe("in-cur");
    s.cur.reportedUsers = 3;
    s.cur.reportedTrafficBps = 450 * MBIT; // 150 × 1.25 = 187.5 < 250, and 550 / 3 vs 1000 free per user: moved
    expect(decide(s).inboundId).toBe("in-back");
  });

  it("an emptied server that came back draws users from a fleet that runs full, though no server is starved beside another", () => {
    // Two full 1 Gbit/s links at 10 Mbit/s per user, and the third back an hour ago with no
    // users: its learned peak, 1 Gbit/s, offers a newcomer 1000 Mbit/s, ÷ 4 = 250 > 10 × 1.25.
    const s = {
      cur: srv({ learnedPeakBps: 1000 * MBIT, reportedTrafficBps: 1000 * MBIT, reportedUsers: 100, heldBack: true }),
      other: srv({ learnedPeakBps: 1000 * MBIT, reportedTrafficBps: 1000 * MBIT, reportedUsers: 100 }),
      back: srv({ learnedPeakBps: 1000 * MBIT, reportedTrafficBps: 0, reportedUsers: 0, availableSinceMs: now - HOUR }),
    };
    const r = route(["cur", "other", "back"]);
    const d = decide(s, { route: r, explain: true });
    expect(d.inboundId).toBe("in-back");
    expect(d.explanation).toMatch(/fail-back dwell: in-back came back 60 min ago/);
    // Once it carries its share (in flight: 90 users at 10 Mbit/s), it offers (1000 − 900) / 91
    // ≈ 1.1 free per user: no longer a reason to move, so the others stay.
    const inflight = (id: string) => (id === "back" ? { users: 90, trafficBps: 900 * MBIT } : undefined);
    expect(decide(s, { route: r, inflight }).inboundId).toBe("in-cur");
  });

  it("a current server whose report counts no users (only in-flight ones) counts as starved", () => {
    const s = fleet();
    s.cur.reportedUsers = 0;
    s.cur.reportedTrafficBps = 0;
    // 50 users in flight at 5 Mbit/s: (1000 − 250) / 50 = 15 free per user vs (2000 − 80) / 11 ≈ 175.
    const inflight = (id: string) => (id === "cur" ? { users: 50, trafficBps: 250 * MBIT } : undefined);
    expect(decide(s, { inflight }).inboundId).toBe("in-back");
  });

  it("is not consulted after the dwell, with a return time in the future (clock backwards), or without one", () => {
    const s = fleet();
    s.cur.reportedUsers = 150; // not starved
    s.back.availableSinceMs = now - 13 * HOUR;
    expect(decide(s).inboundId).toBe("in-back");
    s.back.availableSinceMs = now + HOUR;
    expect(decide(s).inboundId).toBe("in-back");
    s.back.availableSinceMs = undefined;
    expect(decide(s).inboundId).toBe("in-back");
  });

  it("does not hold users of a server that is down, nor new users", () => {
    const s = fleet();
    s.cur.reportedUsers = 150;
    expect(decide(s, { previousInboundId: null }).inboundId).toBe("in-back");
    s.cur.available = false;
    expect(decide(s).inboundId).toBe("in-back");
  });

  it("does not apply to round-robin routes", () => {
    const s = fleet();
    s.cur.reportedUsers = 150;
    s.back.availableSinceMs = now - 13 * HOUR; // outside the dwell: plain hysteresis on users
    const r = route(["cur", "back"], { algorithm: "round-robin" });
    expect(decide(s, { route: r }).inboundId).toBe("in-back");
    s.back.availableSinceMs = now - HOUR; // 1/11 vs 1/150: beyond the 4× margin, starvation not asked
    expect(decide(s, { route: r }).inboundId).toBe("in-back");
  });

  it("with every server down nothing is sticky: panic picks among them", () => {
    const s = fleet();
    s.cur.available = false;
    s.back.available = false;
    const d = decide(s);
    expect(d.reason).toBe("panic");
  });

  it("an empty route decides nothing", () => {
    const d = decide(fleet(), { route: route([]) });
    expect(d.inboundId).toBeNull();
    expect(d.reason).toBe("none");
  });
});

describe("decideRoute: a user who gets what it wants stays (keepSatisfied)", () => {
  // cur: 1 Gbit/s learned, 600 Mbit/s carried by 100 users (6 each): 400 spare.
  // alt: 10 Gbit/s learned, 2 Gbit/s by 200 users (10 each): far more free per user.
  const fleet = () => ({
    cur: srv({ learnedPeakBps: 1000 * MBIT, reportedTrafficBps: 600 * MBIT, reportedUsers: 100 }),
    alt: srv({ learnedPeakBps: 10_000 * MBIT, reportedTrafficBps: 2000 * MBIT, reportedUsers: 200 }),
  });
  // On by default; named here so the tests say what they exercise.
  const decide = (servers: Record<string, ServerMetrics>, over: Partial<DecideInput> = {}) =>
    decideRoute(base(servers, { previousInboundId: "in-cur", ...over, options: { keepSatisfied: true, ...over.options } }));

  it("keeps a user whose server has spare capacity of at least what one user wants, and says why", () => {
    const d = decide(fleet());
    expect(d.inboundId).toBe("in-cur");
    expect(d.reason).toBe("sticky");
    expect(d.explanation).toBe(
      "Kept in-cur: in-cur has 400 Mbit/s spare, at least what one user wants (10.0 Mbit/s): its users get what they want, so moving gains nothing (hysteresis 25%).",
    );
    // Turned off, the same user moves for the free bandwidth per user (4 vs 40 Mbit/s).
    expect(decide(fleet(), { options: { keepSatisfied: false } }).inboundId).toBe("in-alt");
  });

  it("judges what a user wants where users are not held back, not by a saturated server's own rate", () => {
    const s = fleet();
    // 995 of 1000 Mbit/s carried by 500 users (2 each): 5 Mbit/s spare covers its own users' 2,
    // but not the 10 that users get on alt: they are held back, so the move goes ahead.
    s.cur.reportedTrafficBps = 995 * MBIT;
    s.cur.reportedUsers = 500;
    expect(decide(s).inboundId).toBe("in-alt");
  });

  it("counts in-flight users against the spare", () => {
    const inflight = (id: string) => (id === "cur" ? { users: 60, trafficBps: 395 * MBIT } : undefined);
    expect(decide(fleet(), { inflight }).inboundId).toBe("in-alt"); // 5 Mbit/s left < 10
  });

  it("does not count departures in flight as spare: a saturated server's remaining users take it up", () => {
    const s = fleet();
    s.cur.reportedTrafficBps = 1000 * MBIT; // saturated: 200 users at 5 Mbit/s each
    s.cur.reportedUsers = 200;
    // 20 users left since the report (−100 Mbit/s in flight): 100 Mbit/s looks spare, is not.
    const inflight = (id: string) => (id === "cur" ? { users: -20, trafficBps: -100 * MBIT } : undefined);
    const d = decide(s, { inflight });
    expect(d.inboundId).toBe("in-alt");
    expect(d.explanation).not.toMatch(/spare, at least what one user wants/);
  });

  it("judges the spare from the report and the arrivals in flight; a net departure counts as none", () => {
    const arriving = (id: string) => (id === "cur" ? { users: 10, trafficBps: 380 * MBIT } : undefined);
    expect(decide(fleet(), { inflight: arriving }).inboundId).toBe("in-cur"); // 400 − 380 = 20 ≥ 10
    const leaving = (id: string) => (id === "cur" ? { users: -50, trafficBps: -300 * MBIT } : undefined);
    const d = decide(fleet(), { inflight: leaving });
    expect(d.inboundId).toBe("in-cur");
    expect(d.explanation).toMatch(/in-cur has 400 Mbit\/s spare/); // the report's 400, not 700
  });

  it("a server that reported no users, with departures in flight, has its whole known capacity spare", () => {
    const s = fleet();
    s.cur.reportedTrafficBps = 0;
    s.cur.reportedUsers = 0;
    s.alt = srv({ learnedPeakBps: 100_000 * MBIT, reportedUsers: 5 }); // idle: far more free per user
    const leaving = (id: string) => (id === "cur" ? { users: -3, trafficBps: -12 * MBIT } : undefined);
    const d = decide(s, { inflight: leaving });
    expect(d.inboundId).toBe("in-cur");
    expect(d.explanation).toMatch(/in-cur has 1000 Mbit\/s spare/);
  });

  it("never takes the capacity floor for known capacity; an override is known", () => {
    const s = fleet();
    s.cur.learnedPeakBps = 0; // no peak: the peers' mean (10 Gbit/s here) or the floor is a guess, not spare
    s.cur.reportedTrafficBps = 40 * MBIT;
    s.cur.reportedUsers = 400; // (10000 − 40) / 400 ≈ 25 vs (10000 − 2000) / 201 ≈ 40 free per user
    expect(decide(s).inboundId).toBe("in-alt");
    s.cur.capacityOverrideBps = 1000 * MBIT; // set by the operator: 960 spare
    expect(decide(s).inboundId).toBe("in-cur");
  });

  it("a current server with zero users and a learned peak keeps its (only) user", () => {
    const s = fleet();
    s.cur.reportedTrafficBps = 0;
    s.cur.reportedUsers = 0;
    const d = decide(s);
    expect(d.inboundId).toBe("in-cur");
  });

  it("equal scores: the current server is still the best candidate, kept without the rule", () => {
    const s = { cur: fleet().cur, alt: fleet().cur };
    const d = decide(s, { options: { keepSatisfied: false } });
    expect(d.inboundId).toBe("in-cur");
    expect(decide(s).explanation).toMatch(/^Kept in-cur: still the best candidate/);
  });

  it("a clock gone backwards reads the peak undecayed (no spare invented, none lost)", () => {
    const s = fleet();
    s.cur.reportedAt = 10_000;
    s.alt.reportedAt = 10_000;
    const before = decide(s, { nowMs: 0 });
    const at = decide(s, { nowMs: 10_000 });
    expect(before.inboundId).toBe("in-cur");
    expect(before.explanation).toBe(at.explanation);
  });

  it("does not hold new users, users of a server that is down, or anyone when every server is down", () => {
    // Capacities not shown (rule 0) would send a new user to the server with fewer users.
    expect(decide(fleet(), { previousInboundId: null, options: { evenWhileBlind: false } }).inboundId).toBe("in-alt");
    const s = fleet();
    s.cur.available = false;
    expect(decide(s).inboundId).toBe("in-alt");
    s.alt.available = false;
    expect(decide(s).reason).toBe("panic");
    expect(decide({}, { route: route([]) }).reason).toBe("none");
  });

  it("does not apply to round-robin routes", () => {
    const s = { cur: srv({ learnedPeakBps: 1000 * MBIT, reportedUsers: 10 }), alt: srv({ learnedPeakBps: 1000 * MBIT, reportedUsers: 2 }) };
    expect(decide(s, { route: route(["cur", "alt"], { algorithm: "round-robin" }) }).inboundId).toBe("in-alt");
  });
});

describe("decideRoute: the explanation of a first pick when no candidate has spare to offer", () => {
  it("says the fair share decided, not free bandwidth, when every candidate's spare is under minMoveGainBps", () => {
    // Both full by their peaks' measure, with crumbs of spare: a's crumb is larger, b's fair share is.
    const servers = {
      a: srv({ learnedPeakBps: 100 * MBIT, reportedTrafficBps: 55 * MBIT, reportedUsers: 31, heldBack: true }),
      b: srv({ learnedPeakBps: 100 * MBIT, reportedTrafficBps: 60 * MBIT, reportedUsers: 30 }),
    };
    const d = decideRoute(base(servers));
    expect(d.inboundId).toBe("in-b"); // 100 / 31 = 3.23 beats 100 / 32 = 3.13, though a has 1.41 free per user against 1.29
    expect(d.explanation).toBe("Picked in-b: largest fair share (3.23 Mbit/s per user vs 3.13 Mbit/s on in-a), since no candidate has 2.00 Mbit/s free per user to offer.");
    expect(decideRoute(base(servers, { explain: false })).inboundId).toBe("in-b");
  });

  it("says free bandwidth when a candidate has spare above minMoveGainBps", () => {
    const servers = { a: srv({ learnedPeakBps: 1000 * MBIT, reportedTrafficBps: 100 * MBIT, reportedUsers: 30, heldBack: true }), b: srv({ learnedPeakBps: 100 * MBIT, reportedTrafficBps: 90 * MBIT, reportedUsers: 30 }) };
    expect(decideRoute(base(servers)).explanation).toMatch(/^Picked in-a: most free bandwidth per user \(29\.0 Mbit\/s free per user vs /);
  });
});

describe("decideRoute: rule 0, first picks by users while no candidate has shown its capacity", () => {
  // By free bandwidth per user a wins (600 Mbit/s spare by its peak); b has fewer users.
  const fleet = (over: { a?: Partial<ServerMetrics>; b?: Partial<ServerMetrics> } = {}) => ({
    a: srv({ learnedPeakBps: 900 * MBIT, reportedTrafficBps: 300 * MBIT, reportedUsers: 200, reportedAt: 1000, ...over.a }),
    b: srv({ learnedPeakBps: 120 * MBIT, reportedTrafficBps: 120 * MBIT, reportedUsers: 150, reportedAt: 1000, ...over.b }),
  });
  const first = (servers: Record<string, ServerMetrics>, over: Partial<DecideInput> = {}) => decideRoute(base(servers, over));
  const lean = (servers: Record<string, ServerMetrics>, over: Partial<DecideInput> = {}) => decideRoute(base(servers, { ...over, explain: false }));

  it("a new user goes to the fewest users, and says why; the candidates still show their scores", () => {
    const d = first(fleet());
    expect(d).toMatchObject({ inboundId: "in-b", reason: "best" });
    expect(d.explanation).toBe(
      "Picked in-b: fewest users (150 vs 200 on in-a), since no server of this route has shown its capacity yet (none has held its users back, none has an override), so every learned peak is only what its users asked for.",
    );
    expect(d.candidates.find((c) => c.inboundId === "in-a")?.score).toBeCloseTo(((900 - 300) * MBIT) / 201);
    expect(lean(fleet()).inboundId).toBe("in-b");
  });

  it("holds with reports that describe the load: nothing in flight, and whatever the route's margin", () => {
    // Rule 0 no longer asks whether users arrived since the reports (load comes every 10 s).
    expect(first(fleet(), { inflight: () => undefined }).inboundId).toBe("in-b");
    for (const hysteresis of [0, 0.25, 0.5, 10]) {
      expect(first(fleet(), { route: route(["a", "b"], { hysteresis }) }).inboundId).toBe("in-b");
      expect(lean(fleet(), { route: route(["a", "b"], { hysteresis }) }).inboundId).toBe("in-b");
    }
    // A large learned peak does not buy users while it is only a lower bound.
    expect(first(fleet({ a: { learnedPeakBps: 100_000 * MBIT } })).inboundId).toBe("in-b");
  });

  it("counts the users in flight, arrivals and departures, with the reported ones", () => {
    // 60 arrived on b since its report: 210 against a's 200.
    const toB = (id: string) => (id === "b" ? { users: 60, trafficBps: 120 * MBIT } : undefined);
    expect(first(fleet(), { inflight: toB })).toMatchObject({ inboundId: "in-a", explanation: expect.stringContaining("fewest users (200 vs 210 on in-b)") });
    expect(lean(fleet(), { inflight: toB }).inboundId).toBe("in-a");
    // 60 left a since its report: 140 against b's 150.
    const offA = (id: string) => (id === "a" ? { users: -60, trafficBps: -90 * MBIT } : undefined);
    expect(first(fleet(), { inflight: offA }).inboundId).toBe("in-a");
    // More departures than users reported count as none (never below zero).
    const drained = (id: string) => (id === "b" ? { users: -500, trafficBps: -500 * MBIT } : undefined);
    expect(first(fleet(), { inflight: drained }).explanation).toContain("fewest users (0 vs 200 on in-a)");
  });

  it("a server with no users wins over one with a single user and far more free bandwidth", () => {
    const servers = { a: srv({ learnedPeakBps: 10_000 * MBIT, reportedUsers: 1 }), b: srv({ learnedPeakBps: 100 * MBIT }) };
    expect(first(servers, { options: { evenWhileBlind: false } }).inboundId).toBe("in-a"); // 5000 vs 100 free per user
    expect(first(servers).inboundId).toBe("in-b");
    expect(lean(servers).inboundId).toBe("in-b");
  });

  it("equal user counts: the user's rendezvous hash decides, not the scores, and says so", () => {
    // a offers far more free bandwidth per user; with equal users that must not matter.
    const servers = fleet({ b: { reportedUsers: 200 } });
    expect(first(servers).explanation).toMatch(/fewest users \(200 vs 200 on in-[ab]\) \(tie broken by user hash\)/);
    const picks = new Set<string | null>();
    for (let i = 0; i < 40; i++) {
      const userId = `u${i}`;
      const byHash = rendezvousHash(userId, "in-a") > rendezvousHash(userId, "in-b") ? "in-a" : "in-b";
      expect(first(servers, { userId }).inboundId).toBe(byHash);
      expect(lean(servers, { userId }).inboundId).toBe(byHash);
      picks.add(byHash);
    }
    expect(picks).toEqual(new Set(["in-a", "in-b"]));
    // Nothing reported at all (zero users everywhere) ties the same way.
    for (let i = 0; i < 10; i++) {
      const userId = `u${i}`;
      const byHash = rendezvousHash(userId, "in-a") > rendezvousHash(userId, "in-b") ? "in-a" : "in-b";
      const d = first({ a: srv(), b: srv() }, { userId });
      expect(d.inboundId).toBe(byHash);
      expect(d.explanation).toMatch(/fewest users \(0 vs 0/);
    }
  });

  it("one candidate held back, or with an operator override, ends it: free bandwidth per user decides", () => {
    for (const shown of [{ b: { heldBack: true } }, { a: { heldBack: true } }, { b: { capacityOverrideBps: 120 * MBIT } }, { a: { capacityOverrideBps: 900 * MBIT } }, { b: { capacityOverrideBps: 0 } }]) {
      const d = first(fleet(shown));
      expect(d.inboundId).toBe("in-a");
      expect(d.explanation).toMatch(/^Picked in-a: most free bandwidth per user/);
      expect(lean(fleet(shown)).inboundId).toBe("in-a");
    }
    // Not held back, or an override that is not a capacity (negative, not finite), shows nothing.
    for (const none of [{ b: { heldBack: false } }, { b: { capacityOverrideBps: -1 } }, { b: { capacityOverrideBps: Number.NaN } }, { b: { capacityOverrideBps: Number.POSITIVE_INFINITY } }]) {
      expect(first(fleet(none)).inboundId).toBe("in-b");
      expect(lean(fleet(none)).inboundId).toBe("in-b");
    }
  });

  it("only the pool's candidates count: a held-back server that is down, disabled, not serving the inbound or the fallback does not end it", () => {
    const servers = {
      ...fleet(),
      c: srv({ available: false, heldBack: true }),
      d: srv({ enabled: false, heldBack: true }),
      e: srv({ heldBack: true, unavailableInbounds: new Map([["in-e", "not served"]]) }),
      f: srv({ heldBack: true }),
    };
    const r = route(["a", "b", "c", "d", "e"], {}, ["f"]);
    expect(first(servers, { route: r }).inboundId).toBe("in-b");
    expect(lean(servers, { route: r }).inboundId).toBe("in-b");
  });

  it("no candidate: nothing, the fallback, or panic by the scores (not by users) when every server is down", () => {
    expect(first({}, { route: route([]) })).toMatchObject({ inboundId: null, reason: "none" });
    const withFallback = { ...fleet({ a: { available: false }, b: { available: false } }), f: srv({ reportedUsers: 1000 }) };
    expect(first(withFallback, { route: route(["a", "b"], {}, ["f"]) })).toMatchObject({ inboundId: "in-f", reason: "fallback" });
    const down = fleet({ a: { available: false }, b: { available: false } });
    expect(first(down)).toMatchObject({ inboundId: "in-a", reason: "panic" }); // b has fewer users
    expect(lean(down)).toMatchObject({ inboundId: "in-a", reason: "panic" });
  });

  it("a user whose server is down is a first pick; a user with a working server is judged by the rules that move a user", () => {
    const servers = { ...fleet(), c: srv({ available: false, reportedUsers: 10 }) };
    expect(first(servers, { previousInboundId: "in-c" }).inboundId).toBe("in-b");
    expect(first(servers, { previousInboundId: "gone" }).inboundId).toBe("in-b");
    // On a (spare) it stays; on b (full) a's larger fair share moves it, although a has more users.
    expect(first(fleet(), { previousInboundId: "in-a" })).toMatchObject({ inboundId: "in-a", reason: "sticky" });
    expect(first(fleet(), { previousInboundId: "in-b" })).toMatchObject({ inboundId: "in-a", reason: "best" });
    expect(lean(fleet(), { previousInboundId: "in-b" }).inboundId).toBe("in-a");
  });

  it("round-robin routes and evenWhileBlind false rank by the scores", () => {
    const rr = fleet({ a: { coefficient: 4 } }); // 4 / 201 beats 1 / 151
    expect(first(rr, { route: route(["a", "b"], { algorithm: "round-robin" }) }).inboundId).toBe("in-a");
    expect(lean(rr, { route: route(["a", "b"], { algorithm: "round-robin" }) }).inboundId).toBe("in-a");
    const off = first(fleet(), { options: { evenWhileBlind: false } });
    expect(off.inboundId).toBe("in-a");
    expect(off.explanation).toMatch(/^Picked in-a: most free bandwidth per user/);
    expect(lean(fleet(), { options: { evenWhileBlind: false } }).inboundId).toBe("in-a");
  });

  it("decides the same with the clock gone backwards (peaks are not read)", () => {
    expect(first(fleet({ a: { reportedAt: 1e9 }, b: { reportedAt: 1e9 } }), { nowMs: 0 }).inboundId).toBe("in-b");
  });
});

describe("decideRoute: rule 0b, while the user's server has not shown its capacity only a measured shortfall moves the user", () => {
  // a: 300 Mbit/s for 100 users, 3 Mbit/s each (the pool's best rate). b: full by its learned
  // peak (a lower bound), so by fair share alone (rule 1b) a's 500 / 101 ≈ 4.95 would move its users.
  const fleet = (b: Partial<ServerMetrics> = {}, a: Partial<ServerMetrics> = {}) => ({
    a: srv({ learnedPeakBps: 500 * MBIT, reportedTrafficBps: 300 * MBIT, reportedUsers: 100, ...a }),
    b: srv({ learnedPeakBps: 94 * MBIT, reportedTrafficBps: 94 * MBIT, reportedUsers: 40, ...b }),
  });
  const onB = (servers: Record<string, ServerMetrics>, over: Partial<DecideInput> = {}) => decideRoute(base(servers, { previousInboundId: "in-b", ...over }));
  const lean = (servers: Record<string, ServerMetrics>, over: Partial<DecideInput> = {}) => onB(servers, { ...over, explain: false }).inboundId;

  it("keeps a user whose server's users are within two standard errors of the best rate, and says why", () => {
    // 2.35 Mbit/s each over 40 users: 25 % would call it held back (2.35 × 1.25 < 3), two
    // standard errors (2 / √40 ≈ 32 %) do not (2.35 × 1.32 ≥ 3).
    const d = onB(fleet());
    expect(d).toMatchObject({ inboundId: "in-b", reason: "sticky" });
    expect(d.explanation).toBe(
      "Kept in-b: in-b has not shown its capacity (never seen full, no link capacity set), so its score is only what its users asked for, and its users are not measured held back: 2.35 Mbit/s each, within 32% of the best (3.00 Mbit/s on in-a) (hysteresis 25%).",
    );
    expect(lean(fleet())).toBe("in-b");
  });

  it("moves a user whose server's users get less than the best by more than two standard errors", () => {
    // 100 Mbit/s over 50 users: 2 × (1 + 2 / √50) ≈ 2.57 < 3.
    const s = fleet({ learnedPeakBps: 100 * MBIT, reportedTrafficBps: 100 * MBIT, reportedUsers: 50 });
    const d = onB(s);
    expect(d).toMatchObject({ inboundId: "in-a", reason: "best" });
    expect(d.explanation).toMatch(/^Moved from in-b to in-a: in-b has no spare capacity and in-a offers a \d+% larger fair share/);
    expect(lean(s)).toBe("in-a");
    // With many users the route's margin is the larger: 2.35 × 1.25 < 3 over 400 users.
    const many = fleet({ learnedPeakBps: 940 * MBIT, reportedTrafficBps: 940 * MBIT, reportedUsers: 400 }, { learnedPeakBps: 5000 * MBIT });
    expect(onB(many).inboundId).toBe("in-a");
  });

  it("keeps a user when its server has too few users to measure, or no server has enough to compare with", () => {
    // 4 users at 0.5 Mbit/s each: below RATE_MIN_USERS, nothing measured.
    // a's learned peak of 5 Gbit/s offers (5000 − 300) / 101 ≈ 46.5 free per user against b's
    // (100 [floor] − 2) / 4 = 24.5: rule 1 would move the user.
    const few = fleet({ learnedPeakBps: 2 * MBIT, reportedTrafficBps: 2 * MBIT, reportedUsers: RATE_MIN_USERS - 1 }, { learnedPeakBps: 5000 * MBIT });
    expect(onB(few, { options: { evenWhileBlind: false } }).inboundId).toBe("in-a");
    expect(onB(few).explanation).toMatch(/in-b has not shown its capacity .*, and it has too few users \(4\) to measure what they get/);
    expect(lean(few)).toBe("in-b");
    // No server with RATE_MIN_USERS users: no reference rate.
    const tiny = fleet({ learnedPeakBps: 2 * MBIT, reportedTrafficBps: 2 * MBIT, reportedUsers: 4 }, { learnedPeakBps: 5000 * MBIT, reportedUsers: 3, reportedTrafficBps: 9 * MBIT });
    expect(onB(tiny, { options: { evenWhileBlind: false } }).inboundId).toBe("in-a");
    const d = onB(tiny);
    expect(d.inboundId).toBe("in-b");
    expect(d.explanation).toMatch(/and no server has 5 users to compare traffic per user with/);
  });

  it("holds while another server has shown its capacity, and not once the user's own has", () => {
    // a seen full, or its link set: b's "no spare" is still only what b's users asked for.
    for (const other of [fleet({}, { heldBack: true }), fleet({}, { capacityOverrideBps: 500 * MBIT })]) {
      const d = onB(other);
      expect(d.inboundId).toBe("in-b");
      expect(d.explanation).toMatch(/^Kept in-b: in-b has not shown its capacity .* its users are not measured held back/);
      expect(lean(other)).toBe("in-b");
    }
    // b seen full, or its link set to what it carries: its users are held back; rule 1b moves them.
    for (const own of [fleet({ heldBack: true }), fleet({ capacityOverrideBps: 94 * MBIT })]) {
      const d = onB(own);
      expect(d.inboundId).toBe("in-a");
      expect(d.explanation).toMatch(/^Moved from in-b to in-a: in-b has no spare capacity and in-a offers a \d+% larger fair share/);
      expect(lean(own)).toBe("in-a");
    }
  });

  it("does not apply with evenWhileBlind off, or on round-robin", () => {
    expect(onB(fleet(), { options: { evenWhileBlind: false } }).inboundId).toBe("in-a");
    expect(lean(fleet(), { options: { evenWhileBlind: false } })).toBe("in-a");
    // Round-robin sees no traffic: users per coefficient decide, as before (4 / 101 vs 1 / 40).
    expect(onB(fleet({}, { coefficient: 4 }), { route: route(["a", "b"], { algorithm: "round-robin" }) }).inboundId).toBe("in-a");
  });

  it("a user whose server is down, or a new user, is a first pick (rule 0), not held", () => {
    expect(onB(fleet({ available: false })).inboundId).toBe("in-a");
    expect(decideRoute(base(fleet())).inboundId).toBe("in-b"); // fewest users: 40 vs 100
  });

  it("decides the same with the clock gone backwards, and with equal rates (no shortfall: kept)", () => {
    expect(onB(fleet({ reportedAt: 1e9 }, { reportedAt: 1e9 }), { nowMs: 0 }).inboundId).toBe("in-b");
    const equal = fleet({ learnedPeakBps: 120 * MBIT, reportedTrafficBps: 120 * MBIT, reportedUsers: 40 });
    expect(onB(equal).inboundId).toBe("in-b");
  });
});

