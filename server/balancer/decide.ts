/**
 * decideRoute: the pure balancing decision for one (user, route) pair (DESIGN §2).
 *
 * Pools, in order:
 *   1. candidates: inbounds whose server is enabled and available, fallback left out;
 *   2. the fallback inbound, if its server is enabled and available      (reason "fallback");
 *   3. panic: every inbound of an enabled server, down or not            (reason "panic");
 *      an inbound that is itself unavailable (ServerMetrics.unavailableInbounds: its server does
 *      not serve it) is in no pool: never picked, whatever the server's health (issue 25);
 *   4. nothing                                                          (reason "none").
 *
 * Scores (higher is better):
 *   least-traffic  free  = max(C − T, 0) / (U + 1), C = override ?? max(peak, floor);
 *                  secondary key (orders equal free, e.g. every server saturated):
 *                  share = C / (U + 1), the fair share a newcomer gets of a full link.
 *                  A free value below minMoveGainBps counts as "no spare capacity" for
 *                  ranking, so crumbs of spare do not beat a much larger fair share.
 *   round-robin    coefficient / (U + 1)  (≡ lowest (U + 1) / coefficient wins).
 *   U and T include in-flight additions. For the user's current server the user is already
 *   in U and T, so the divisor is max(U, 1) instead of U + 1.
 *   The learned peak is decayed to now (it follows what users ask for, which cools after a
 *   peak), but for a server seen full (ServerMetrics.heldBack) never below what its link
 *   carried at the last report that showed it (heldBackBps): a link does not shrink in the
 *   quiet hours after, and without this a link seen full on Monday counted on Friday as a known
 *   link of a sixteenth of its size. Neutral on the families, which rarely reach the case
 *   (only cooling-peaks runs past a day).
 *   C of a server with no learned peak yet is the mean of the learned peaks of the pool's
 *   servers that have one (the floor when none has): a blind server is guessed to be a typical
 *   one, not the best, so a heterogeneous fleet's small links are not filled like its big ones
 *   before they report.
 * 0. A first pick while the pool is blind goes to the fewest users, arrivals in flight included
 *   (least-traffic; evenWhileBlind, on by default). The pool is blind while none of its
 *   candidates has shown its capacity (capacity.ts capacityShown). A learned peak is what a
 *   server's users asked for: a lower bound of its link until the link holds its users back
 *   (ServerMetrics.heldBack: a report's traffic per user more than the default margin below
 *   what another server of its cluster gave at its latest report, capacity.ts LatestUserRates)
 *   or the operator sets it. Free bandwidth per user compared between lower bounds ranks links
 *   by their past demand, not their size. The even split assumes nothing the figures do not
 *   show, and as soon as one server of the pool is seen full the scores take over. Cost: on
 *   links far apart the small ones fill evenly until one of them is seen full. The pool was
 *   blind only while users had also arrived since its reports (at least the route's margin of
 *   the users they counted): with load every 60–300 s the even split held on steady fleets for
 *   hours and cost churn. With load every 10 s (heartbeats, core/heartbeat.ts LOAD_INTERVAL_S)
 *   the families did better without that test: tuned seeds 1–10 every aim 52 → 53 pairs,
 *   fairness and churn both 55 → 56; validation seeds 31–70 every aim 185 → 201, both
 *   217 → 232, above every baseline 206 → 208 (docs/balancer-rounds.md).
 * 0b. While the user's server has not shown its capacity (never seen full, no override), the
 *   scores move no one off it by themselves (evenWhileBlind, least-traffic): a user stays unless
 *   its server's users are measured held back, their reported traffic per user below the pool's
 *   best (servers with ≥ RATE_MIN_USERS users) by more than heldBackMargin: the route's margin,
 *   or two standard errors of the mean (2 / √users, capacity.ts) when larger. Gain of a move
 *   judged on a lower bound: none known (the server's "no spare" is only what its users asked
 *   for, and they are not measured short of what users get elsewhere). Cost: a reconnect.
 *   Rule 0 and the move rules read the same figures, and without this they disagreed: the even
 *   split sent newcomers to a small link under 64 users (never marked held back) and rule 1b
 *   moved them off it at their next refresh, for hours (validation steady-mixed 48 and 50). A
 *   measured shortfall is no lower bound, so it still moves users (steady-mixed 85: 10× links
 *   apart, never marked). Chosen in two steps, each on seeds 1–10 and 31–70 and checked on
 *   71–100 before any held-out run (docs/balancer-rounds.md):
 *   - while the pool is blind (no candidate shown): every aim 53 / 201 / 160 → 53 / 202 / 161,
 *     fairness and churn both 56 / 232 / 172 → 56 / 233 / 173, above every baseline unchanged
 *     (56 / 208 / 167); held out after: every aim 94 → 95, both 113, above every baseline
 *     101 → 102;
 *   - for the user's own server, whatever the others have shown: users still left servers
 *     never seen full, unmeasured, once another server of the pool was seen full (steady-mixed
 *     50, in the two hours after a 300 Mbit/s server came back: 153 moves, now 117). Every aim
 *     53 / 202 / 161 → 53 / 203 / 162, both 56 / 233 / 173 → 56 / 234 / 174, above every
 *     baseline unchanged; churn lower on 52 and higher on 17 of the 240 validation pairs.
 *   Tried and left: no moves at all while blind (both +2 on each of the two sets, but baselines
 *   −1 and −3, and steady-mixed 85 at 0.86× the oracle); the even split also avoiding such
 *   servers (both 56 → 54 on seeds 1–10).
 * Moving a user who has a working inbound (stickiness). Every rule below weighs what the move
 * gains — the user's satisfaction (what it gets ÷ what it wants) and the fairness of the fleet —
 * against what it costs: a reconnect (the user's sessions drop; counted as churn), and, on a
 * server whose capacity is a guess, the risk that the gain is not there. A move happens only
 * when every rule says the gain is worth it. What turning each rule off costs as the code
 * stands is printed by `npm run simulate -- --families --ablations` (tuned and held-out seeds;
 * README, "Scenario families"): on the tuned seeds each rule meets more pairs with every aim on
 * than off, rule 1's margin most, rules 0 and 0b least (held out, as many). The pair counts
 * below were measured against the simulator's oracle before its same-second fix
 * (docs/balancer-rounds.md), which lowered the churn the aim allows, mostly on burst pairs, and
 * with reports that counted the users online at the report's second, not the users online
 * during its interval as an agent counts them; the README has the counts since.
 *   1. Margin (cost of a reconnect): best > current × (1 + hysteresis), and for least-traffic an
 *      absolute gain ≥ minMoveGainBps, or — when the current server has no spare capacity — a
 *      fair share better by the same margin. Off (hysteresis 0): users move for any gain.
 *   1b. A user on a saturated server (less free bandwidth per user than minMoveGainBps) is judged
 *      by fair share alone (least-traffic). Gain: what a user gets on a full link is its fair
 *      share C / U there, and at best C / (U + 1) on the other; spare capacity elsewhere is not a
 *      gain by itself, since on a fleet that runs full it is users of that server who are offline
 *      for the moment and come back (sessions), and the mover then holds a smaller share than it
 *      had. Cost: a reconnect. So the move needs the larger fair share, by the margin of rule 1.
 *      Off (spare elsewhere moving users off a saturated server, as before): the families' tuned
 *      seeds meet every aim on 42 pairs instead of 44, fairness and churn both on 54 instead of
 *      55, above every baseline 46 instead of 47 (steady-mixed 4: churn 0.127 instead of 0.050;
 *      docs/balancer-rounds.md). minMoveGainBps 0 turns it off.
 *   2. Spare capacity on a server with a smaller fair share (least-traffic) is not a gain: it is
 *      an artefact of its capacity estimate (e.g. the floor on a 50 Mbit/s link), and the user
 *      would move back as soon as it fills.
 *   3. keepSatisfied (least-traffic; on by default). Gain: none — a server whose known capacity
 *      (override or learned peak, never the floor nor the peers' mean) exceeds its traffic by at
 *      least what one user wants carries everything its users ask for (max-min sharing leaves no
 *      one short on a link with spare), so a move raises no one's satisfaction. Cost: a reconnect.
 *      So the user stays. What a user wants is the best reported traffic per user in the pool
 *      (servers with ≥ RATE_MIN_USERS users), or this server's own when higher: a saturated
 *      server's users get less than they want, so its own rate understates it. The traffic is the
 *      report's plus the arrivals in flight; departures in flight are not spare: on a server
 *      that was saturated the users left behind take up what the leavers free at once (counted,
 *      19 departures' 4.85 Mbit/s passed for room on a full 100 Mbit/s link with 392 users in
 *      the flash-crowd fixture: 0.869× the oracle). Off: the families' tuned seeds meet every
 *      aim on 39 pairs instead of 42, fairness and churn both on 50 instead of 54 (measured
 *      before rule 1b; docs/balancer-rounds.md).
 *   4. Damped fail-back (failBackDwellMs 12 h by default, 0 turns it off). Gain of a move back to
 *      a server that came back: its users' satisfaction only if their server is starved; cost: a
 *      reconnect, onto a server whose peak may have cooled. So for failBackDwellMs after a server
 *      came back, a user whose server works moves there only when (least-traffic) that server
 *      is starved: reported traffic per user × (1 + hysteresis) below the pool's best (servers
 *      with ≥ RATE_MIN_USERS users) or below what the server that came back offers a newcomer
 *      (its free bandwidth per user) ÷ (1 + failBackHysteresis), the route's margin applying as
 *      usual; round-robin, which sees no traffic, needs failBackHysteresis (a 4× better score)
 *      instead. Off: still 42 pairs, but churn misses on rolling-outages and steady-mixed
 *      (fairness and churn 54 → 50); with the 4× margin for least-traffic too: 40, cooling-peaks
 *      3 of 10 (both measured before rule 1b; docs/balancer-rounds.md). Without the offer (an
 *      emptied server that came back has no users to report a rate, so on a full fleet nobody
 *      was starved beside the others and its users stayed away for the dwell): every aim on 43
 *      tuned pairs instead of 47, above every baseline on 47 instead of 51
 *      (docs/balancer-rounds.md).
 * New users and users of a server that is down are placed by the scores alone (a first pick).
 * Ties: rendezvous hash of (userId, inboundId), highest wins.
 */
import { capacityShown, effectiveCapacity, heldBackMargin, peakNow, seenFullBps } from "./capacity";
import { rendezvousHashFrom, rendezvousSeed } from "./hash";
import { expectedUserBps } from "./inflight";
import { ltMoveVerdict, measuredHeldBack, newVerdict, RATE_MIN_USERS, type LtMoveInput } from "./move-rules";
import {
  DEFAULT_HYSTERESIS,
  DEFAULT_OPTIONS,
  type BalancerOptions,
  type CandidateScore,
  type Decision,
  type DecideInput,
  type DecisionReason,
  type ResolvedInbound,
  type ResolvedServer,
  type RouteInbound,
  type RouteInput,
  type ServerMetrics,
  type ServerMetricsLookup,
} from "./types";

export function lookupServer(servers: ServerMetricsLookup, id: string): ServerMetrics | undefined {
  if (servers instanceof Map) return (servers as ReadonlyMap<string, ServerMetrics>).get(id);
  const rec = servers as Readonly<Record<string, ServerMetrics>>;
  return Object.prototype.hasOwnProperty.call(rec, id) ? rec[id] : undefined;
}

export function resolveOptions(o?: Partial<BalancerOptions>): BalancerOptions {
  if (!o) return DEFAULT_OPTIONS;
  return {
    capacityFloorBps: o.capacityFloorBps ?? DEFAULT_OPTIONS.capacityFloorBps,
    defaultUserBps: o.defaultUserBps ?? DEFAULT_OPTIONS.defaultUserBps,
    peakHalfLifeMs: o.peakHalfLifeMs ?? DEFAULT_OPTIONS.peakHalfLifeMs,
    minMoveGainBps: o.minMoveGainBps ?? DEFAULT_OPTIONS.minMoveGainBps,
    failBackDwellMs: o.failBackDwellMs ?? DEFAULT_OPTIONS.failBackDwellMs,
    failBackHysteresis: o.failBackHysteresis ?? DEFAULT_OPTIONS.failBackHysteresis,
    keepSatisfied: o.keepSatisfied ?? DEFAULT_OPTIONS.keepSatisfied,
    evenWhileBlind: o.evenWhileBlind ?? DEFAULT_OPTIONS.evenWhileBlind,
  };
}

/** Internal working row, one per inbound of the route. */
interface Row {
  ib: RouteInbound;
  m: ServerMetrics | undefined;
  /** The caller's resolved inbound, when the caller gave them (DecideInput.resolved). */
  rs: ResolvedInbound | undefined;
  out: CandidateScore;
  /** Ranking key 1 (free with crumbs zeroed, or round-robin score). */
  rank: number;
  /** Ranking key 2 (least-traffic share). */
  share: number;
  current: boolean;
  hash: number; // lazily computed, -1 = not yet
  peak: number; // learned peak decayed to now
  /** least-traffic: known capacity (override or learned peak, not the floor) − T; NaN when unknown. */
  headroom: number;
  /** least-traffic: one user's traffic here, expectedUserBps of the report. */
  perUser: number;
  /** U: reported users plus those in flight. */
  users: number;
}

const mbps = (bps: number): string => {
  const v = bps / 1e6;
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
};
const pct = (x: number): string => `${Math.round(x * 100)}%`;
const label = (ib: RouteInbound): string => ib.name ?? ib.inboundId;
// Module-level, not closures made per decision (tsx's keepNames wraps each one it creates).
const unitLt = (s: number): string => `${mbps(s)} Mbit/s free per user`;
const unitRr = (s: number): string => `score ${s.toFixed(4)}`;

/** The last user's half of the rendezvous hash: a subscriber's routes are decided one after another. */
let seedUser: string | undefined;
let seedValue = 0;

export { RATE_MIN_USERS } from "./move-rules";

/** The route's margin: its own hysteresis when it is a number ≥ 0, else the default. */
function routeHysteresis(route: RouteInput): number {
  const h = route.hysteresis;
  return h !== undefined && Number.isFinite(h) && h >= 0 ? h : DEFAULT_HYSTERESIS;
}

/** Reported traffic per user, or null when the server reported no users. */
function perUserBps(m: ServerMetrics): number | null {
  const u = m.reportedUsers;
  if (!(u > 0)) return null;
  const t = Number.isFinite(m.reportedTrafficBps) && m.reportedTrafficBps > 0 ? m.reportedTrafficBps : 0;
  return t / u;
}

/** The best reported traffic per user among the pool's servers with ≥ RATE_MIN_USERS users. */
function referencePerUser(pool: readonly Row[]): { bps: number; row: Row } | null {
  let ref: { bps: number; row: Row } | null = null;
  for (const r of pool) {
    const m = r.m as ServerMetrics;
    if (!(m.reportedUsers >= RATE_MIN_USERS)) continue;
    const v = perUserBps(m) as number;
    if (!ref || v > ref.bps) ref = { bps: v, row: r };
  }
  return ref;
}

function hashOf(r: Row, userId: string): number {
  if (r.hash < 0) {
    if (userId !== seedUser) {
      seedValue = rendezvousSeed(userId);
      seedUser = userId;
    }
    r.hash = r.rs ? r.rs.rendezvous.weight(r.rs.index, seedValue) : rendezvousHashFrom(seedValue, r.ib.inboundId);
  }
  return r.hash;
}

/**
 * Without explain nothing of the working rows leaves decideRoute (the decision carries ids
 * and the reason only), so that path reuses these instead of allocating two objects per
 * inbound per decision: decisions run one at a time and every field is reset before use.
 */
const scratchRows: Row[] = [];
const scratchAll: Row[] = [];
const scratchCandidates: Row[] = [];

/**
 * The move rules' input, reused like the rows: a decision judges at most one move. poolRate
 * reads the pool of the move being judged (verdictPool), so no closure is made per decision.
 */
const NO_ROWS: readonly Row[] = [];
let verdictPool: readonly Row[] = NO_ROWS;
const verdictInput: LtMoveInput = {
  cs: 0,
  curShare: 0,
  bs: 0,
  bestShare: 0,
  margin: 0,
  hysteresis: 0,
  failBack: false,
  headroom: 0,
  perUser: 0,
  curRate: null,
  poolRate: () => referencePerUser(verdictPool)?.bps ?? null,
  minMoveGainBps: 0,
  failBackHysteresis: 0,
  keepSatisfied: false,
};
const verdictOut = newVerdict();

function newRow(ib: RouteInbound, m: ServerMetrics | undefined, rs: ResolvedInbound | undefined): Row {
  const out: CandidateScore = { inboundId: ib.inboundId, serverId: ib.serverId, score: null, note: "" };
  return { ib, m, rs, out, rank: 0, share: 0, current: false, hash: -1, peak: 0, headroom: Number.NaN, perUser: 0, users: 0 };
}

function scratchRow(i: number, ib: RouteInbound, m: ServerMetrics | undefined, rs: ResolvedInbound | undefined): Row {
  let r = scratchRows[i];
  if (!r) {
    r = newRow(ib, m, rs);
    // Every field present from the start, so reuse never changes the objects' shape.
    r.out.excluded = undefined;
    r.out.share = undefined;
    scratchRows[i] = r;
    return r;
  }
  r.ib = ib;
  r.m = m;
  r.rs = rs;
  r.rank = 0;
  r.share = 0;
  r.current = false;
  r.hash = -1;
  r.peak = 0;
  r.headroom = Number.NaN;
  r.perUser = 0;
  r.users = 0;
  const out = r.out;
  out.inboundId = ib.inboundId;
  out.serverId = ib.serverId;
  out.score = null;
  out.note = "";
  out.excluded = undefined;
  out.share = undefined;
  return r;
}

/** true when a ranks strictly above b. */
function beats(a: Row, b: Row, userId: string): boolean {
  if (a.rank !== b.rank) return a.rank > b.rank;
  if (a.share !== b.share) return a.share > b.share;
  const ha = hashOf(a, userId);
  const hb = hashOf(b, userId);
  if (ha !== hb) return ha > hb;
  return a.ib.inboundId < b.ib.inboundId;
}

export function decideRoute(input: DecideInput): Decision {
  const { userId, route, servers, previousInboundId, nowMs, inflight } = input;
  const opts = resolveOptions(input.options);
  const hysteresis = routeHysteresis(route);
  const lt = route.algorithm !== "round-robin";
  const explain = input.explain !== false;

  const rows: Row[] = explain ? [] : scratchAll;
  const candidates: Row[] = explain ? [] : scratchCandidates;
  rows.length = 0;
  candidates.length = 0;
  let fallback: Row | undefined;
  let previousRow: Row | undefined;
  let currentServerId: string | undefined;

  const resolved = input.resolved;
  const inbounds = route.inbounds;
  for (let i = 0; i < inbounds.length; i++) {
    const ib = inbounds[i] as RouteInbound;
    const rs = resolved ? resolved[i] : undefined;
    const m = rs ? rs.server?.m : lookupServer(servers, ib.serverId);
    const row = explain ? newRow(ib, m, rs) : scratchRow(rows.length, ib, m, rs);
    const out = row.out;
    rows.push(row);
    if (ib.inboundId === previousInboundId) previousRow = row;
    if (!m) {
      out.excluded = "server-down";
      out.note = "no metrics for this server";
    } else if (!m.enabled) {
      out.excluded = "server-disabled";
      out.note = "server disabled by operator";
    } else if (m.unavailableInbounds?.has(ib.inboundId)) {
      out.excluded = "inbound-unavailable";
      if (explain) out.note = `inbound not served: ${m.unavailableInbounds.get(ib.inboundId)}`;
    } else if (!m.available) {
      out.excluded = "server-down";
      out.note = "server unavailable";
    } else if (ib.isFallback) {
      out.excluded = "fallback-reserve";
      out.note = "fallback: held in reserve while other inbounds are available";
      if (!fallback) fallback = row;
    } else {
      candidates.push(row);
    }
  }
  if (previousRow) currentServerId = previousRow.ib.serverId;

  let pool: Row[];
  let mode: "best" | "fallback" | "panic";
  if (candidates.length > 0) {
    pool = candidates;
    mode = "best";
  } else if (fallback) {
    pool = [fallback];
    mode = "fallback";
  } else {
    // An inbound its server does not serve is never a line, not even in panic (issue 25).
    pool = rows.filter((r) => r.m !== undefined && r.m.enabled && r.out.excluded !== "inbound-unavailable");
    mode = "panic";
  }

  // Per-candidate scores and notes only when explaining (the hot path reads ids and reason).
  const candidatesOut = explain ? rows.map((r) => r.out) : [];
  if (pool.length === 0) {
    return {
      routeId: route.routeId,
      inboundId: null,
      serverId: null,
      reason: "none",
      candidates: candidatesOut,
      explanation: !explain
        ? ""
        : rows.length === 0
          ? "No inbound: the route is empty."
          : rows.some((r) => r.out.excluded === "inbound-unavailable")
            ? "No inbound: every inbound of this route is unavailable (not served by its server) or on a disabled server."
            : "No inbound: every server of this route is disabled (or unknown).",
    };
  }

  // ---- score the pool ----
  // Prior for a server that has never carried traffic (peak 0): assume it is like the mean of
  // its peers with a peak rather than the bare floor, so one early report does not drain all
  // new users onto the server that happened to report first; and not like the best of them,
  // which fills every blind server of a mixed fleet (a 100 Mbit/s link among 5 Gbit/s ones)
  // as if it were the biggest.
  let peerPeak = 0;
  if (lt) {
    let sum = 0;
    let n = 0;
    for (const r of pool) {
      const m = r.m as ServerMetrics;
      r.peak =
        m.learnedPeakBps > 0
          ? r.rs
            ? (r.rs.server as ResolvedServer).decayedPeak(nowMs, opts.peakHalfLifeMs)
            : peakNow(m.learnedPeakBps, nowMs - m.reportedAt, opts.peakHalfLifeMs, seenFullBps(m))
          : 0;
      if (r.peak > 0) {
        sum += r.peak;
        n++;
      }
    }
    if (n > 0) peerPeak = sum / n;
  }
  const cur = previousRow !== undefined && pool.includes(previousRow) ? previousRow : undefined;
  // Rule 0: a first pick while no candidate has shown its capacity goes to the fewest users
  // (ranked after the loop, which counts them; the scores stay in the notes).
  const even = lt && cur === undefined && mode === "best" && opts.evenWhileBlind && !pool.some((r) => capacityShown(r.m as ServerMetrics));
  for (const r of pool) {
    const m = r.m as ServerMetrics;
    const wasExcluded = r.out.excluded;
    if (mode !== "best") {
      if (explain) delete r.out.excluded;
      else r.out.excluded = undefined;
    }
    // The user is already counted on the server of their current inbound.
    r.current = cur !== undefined && r.ib.serverId === currentServerId;
    const add = r.rs ? (r.rs.server as ResolvedServer).additions() : inflight ? inflight(r.ib.serverId, m.reportedAt) : undefined;
    const U = Math.max(0, (m.reportedUsers || 0) + (add ? add.users : 0));
    r.users = U;
    const T = Math.max(0, (m.reportedTrafficBps || 0) + (add ? add.trafficBps : 0));
    const div = r.current ? Math.max(U, 1) : U + 1;
    const divNote = explain ? (r.current ? `${div} (you are already counted)` : `(${U} + 1)`) : "";
    const prefix = explain && mode === "panic" && wasExcluded ? `panic (${wasExcluded}): ` : "";
    if (lt) {
      const learned = r.peak;
      const unknown = !(m.learnedPeakBps > 0);
      const peak = unknown ? peerPeak : learned;
      const C = effectiveCapacity(m.capacityOverrideBps, peak, opts.capacityFloorBps);
      const free = Math.max(C - T, 0) / div;
      r.out.score = free;
      r.share = C / div;
      r.out.share = r.share;
      r.rank = free >= opts.minMoveGainBps ? free : 0;
      if (r.current) {
        const known = m.capacityOverrideBps !== null && Number.isFinite(m.capacityOverrideBps) && m.capacityOverrideBps >= 0 ? m.capacityOverrideBps : unknown ? Number.NaN : learned;
        // Departures in flight are not spare on the server they leave: were it saturated, its
        // remaining users (held back until now) take up what the leavers free at once.
        r.headroom = known - Math.max(0, m.reportedTrafficBps || 0) - Math.max(0, add ? add.trafficBps : 0);
        r.perUser = expectedUserBps(m.reportedTrafficBps, m.reportedUsers, opts.defaultUserBps);
      }
      if (explain) {
        const cSrc =
          m.capacityOverrideBps !== null
            ? "override"
            : peak < opts.capacityFloorBps
              ? "floor"
              : unknown
                ? "no data yet: peers' mean peak"
                : m.heldBack === true
                  ? "learned peak, link seen full"
                  : "learned peak, a lower bound";
        r.out.note = `${prefix}${mbps(free)} Mbit/s free per user = max(C ${mbps(C)} [${cSrc}] − T ${mbps(T)}, 0) / ${divNote}; users ${U}`;
      }
    } else {
      const coef = Number.isFinite(m.coefficient) && m.coefficient > 0 ? m.coefficient : 0;
      const s = coef / div;
      r.out.score = s;
      r.rank = s;
      if (explain) r.out.note = `${prefix}coefficient ${coef} / ${divNote} = ${s.toFixed(4)}; users ${U}`;
    }
  }

  if (even) {
    for (const r of pool) {
      r.rank = 1 / (r.users + 1);
      r.share = 0;
    }
  }

  // The pool's maximum under beats, in two passes: the top (rank, share) first, then the hash
  // among the rows that tie for it. A fleet that fills evenly ties a lot, and folding beats
  // over the pool hashed every row that tied with a passing leader.
  let best = pool[0] as Row;
  for (let i = 1; i < pool.length; i++) {
    const r = pool[i] as Row;
    if (r.rank > best.rank || (r.rank === best.rank && r.share > best.share)) best = r;
  }
  const top = best;
  for (let i = 0; i < pool.length; i++) {
    const r = pool[i] as Row;
    if (r !== top && r.rank === top.rank && r.share === top.share && beats(r, best, userId)) best = r;
  }

  // ---- stickiness ----
  let chosen = best;
  let explanation = "";
  const unit = lt ? unitLt : unitRr;

  if (cur) {
    const cs = cur.out.score as number;
    const bs = best.out.score as number;
    if (best === cur || best.ib.serverId === cur.ib.serverId) {
      chosen = cur;
      explanation = `Kept ${label(cur.ib)}: still the best candidate (${unit(cs)}).`;
    } else {
      let move: boolean;
      let why: string;
      let marginSays = true; // "more than X better would be needed" explains the keep
      const since = (best.m as ServerMetrics).availableSinceMs;
      const failBack = since !== undefined && nowMs >= since && nowMs - since < opts.failBackDwellMs;
      // Least-traffic judges a fail-back move by the starved test below (what the move gains);
      // round-robin, which sees no traffic, by the larger margin.
      const margin = failBack && !lt ? Math.max(hysteresis, opts.failBackHysteresis) : hysteresis;
      const h = failBack ? `fail-back ${lt ? "dwell" : `margin ${pct(margin)}`}: ${label(best.ib)} came back ${Math.round((nowMs - (since as number)) / 60_000)} min ago${lt ? `; hysteresis ${pct(margin)}` : ""}` : `hysteresis ${pct(hysteresis)}`;
      if (lt) {
        // A user on a saturated server (less spare per user than minMoveGainBps) is judged by
        // fair share (bySh) alone: what it gets there, and on any full link, is its fair share;
        // spare elsewhere is not a gain by itself (rule 1b above).
        // Spare capacity on a server with a smaller fair share is not worth a move (rule 2).
        // During the dwell, only a starved current server gives its users back: starved beside
        // the pool's best rate, or beside what the server that came back offers a newcomer
        // (its free bandwidth per user), counted at 1 / (1 + failBackHysteresis) of it (rule 4).
        // A user on a server with spare capacity gets what it wants: moving gains nothing.
        // What a user wants is judged where users are not held back: the best traffic per user
        // in the pool, or this server's own when higher (rule 3).
        const curRate = perUserBps(cur.m as ServerMetrics);
        const x = verdictInput;
        x.cs = cs;
        x.curShare = cur.share;
        x.bs = bs;
        x.bestShare = best.share;
        x.margin = margin;
        x.hysteresis = hysteresis;
        x.failBack = failBack;
        x.headroom = cur.headroom;
        x.perUser = cur.perUser;
        x.curRate = curRate;
        x.minMoveGainBps = opts.minMoveGainBps;
        x.failBackHysteresis = opts.failBackHysteresis;
        x.keepSatisfied = opts.keepSatisfied;
        verdictPool = pool;
        const v = ltMoveVerdict(x, verdictOut);
        verdictPool = NO_ROWS;
        const { byFree, bySh, smallerShare, satisfied, unsaturated, want } = v;
        // Rule 0b: while the user's server has not shown its capacity, its score is a lower bound
        // (its "no spare" is what its users asked for); only measured held back users leave it.
        // Read only where a move is judged.
        const curUsers = (cur.m as ServerMetrics).reportedUsers;
        const judged0b = v.move && mode === "best" && opts.evenWhileBlind && !capacityShown(cur.m as ServerMetrics);
        const ref0b = judged0b ? referencePerUser(pool) : null;
        const blindKeep = judged0b && !measuredHeldBack(curRate, curUsers, ref0b?.bps ?? null, hysteresis);
        move = v.move && !blindKeep;
        marginSays = !satisfied && !smallerShare && !unsaturated && !blindKeep;
        if (blindKeep) {
          const ref = ref0b;
          const users = curUsers;
          const lead = `${label(cur.ib)} has not shown its capacity (never seen full, no link capacity set), so its score is only what its users asked for`;
          why =
            ref === null
              ? `${lead}, and no server has ${RATE_MIN_USERS} users to compare traffic per user with`
              : curRate === null || users < RATE_MIN_USERS
                ? `${lead}, and it has too few users (${users}) to measure what they get`
                : `${lead}, and its users are not measured held back: ${mbps(curRate)} Mbit/s each, within ${pct(heldBackMargin(users, hysteresis))} of the best (${mbps(ref.bps)} Mbit/s on ${label(ref.row.ib)})`;
        } else if (unsaturated) {
          why = `${label(cur.ib)} has ${mbps(cur.headroom)} Mbit/s spare, at least what one user wants (${mbps(want)} Mbit/s): its users get what they want, so moving gains nothing`;
        } else if (satisfied) {
          why = !v.refIsOffer
            ? `its users get ${mbps(curRate ?? 0)} Mbit/s each, within ${pct(hysteresis)} of the best (${mbps(v.refBps)} Mbit/s on ${label((referencePerUser(pool) as { row: Row }).row.ib)}), so it is not starved`
            : `its users get ${mbps(curRate ?? 0)} Mbit/s each, within ${pct(hysteresis)} of what ${label(best.ib)} offers a newcomer ÷ ${1 + Math.max(0, opts.failBackHysteresis)} (${mbps(v.refBps)} Mbit/s), so it is not starved`;
        } else if (byFree) {
          why = cs > 0 ? `${pct(bs / cs - 1)} more free bandwidth per user` : `spare capacity while ${label(cur.ib)} has none`;
        } else if (bySh) {
          why = `${label(cur.ib)} has no spare capacity and ${label(best.ib)} offers a ${pct(best.share / cur.share - 1)} larger fair share (${mbps(best.share)} vs ${mbps(cur.share)} Mbit/s)`;
        } else if (smallerShare) {
          why = `${label(best.ib)} has spare capacity but a smaller fair share (${mbps(best.share)} vs ${mbps(cur.share)} Mbit/s)`;
        } else if (cs < opts.minMoveGainBps) {
          why = `${label(cur.ib)} has no spare capacity and ${label(best.ib)}'s fair share is only ${best.share > cur.share ? pct(best.share / cur.share - 1) : "0%"} larger (${mbps(best.share)} vs ${mbps(cur.share)} Mbit/s)`;
        } else {
          const gain =
            cs > 0 ? pct(bs / cs - 1) : cs === bs ? "0%" : `${mbps(bs - cs)} Mbit/s`;
          why = `${label(best.ib)} is only ${gain} better`;
        }
      } else {
        move = bs > cs * (1 + margin);
        const gain = cs > 0 ? pct(bs / cs - 1) : "infinitely";
        why = move ? `${gain} better weighted load` : `${label(best.ib)} is only ${gain} better`;
      }
      if (move) {
        chosen = best;
        explanation = `Moved from ${label(cur.ib)} to ${label(best.ib)}: ${why} (${h}).`;
      } else {
        chosen = cur;
        explanation = marginSays
          ? `Kept ${label(cur.ib)}: ${why}; more than ${pct(margin)} better would be needed to move (${h}).`
          : `Kept ${label(cur.ib)}: ${why} (${h}).`;
      }
    }
  } else if (explain) {
    // Only words from here on: a first pick (no usable current inbound) is `best` as it is.
    let lead = "";
    if (previousInboundId !== null) {
      if (!previousRow) lead = `Previous inbound ${previousInboundId} left the route; `;
      else lead = `Previous inbound ${label(previousRow.ib)} is not usable (${previousRow.out.excluded ?? "not in pool"}); `;
    }
    let runner: Row | undefined;
    for (const r of pool) if (r !== best && (!runner || beats(r, runner, userId))) runner = r;
    const vs = runner ? ` vs ${unit(runner.out.score as number)} on ${label(runner.ib)}` : "";
    const tie =
      runner && runner.rank === best.rank && runner.share === best.share ? " (tie broken by user hash)" : "";
    const bs = best.out.score as number;
    if (mode === "fallback") {
      explanation = `${lead}Every regular inbound is unavailable; using fallback ${label(best.ib)}.`;
    } else if (mode === "panic") {
      explanation = `${lead}Panic: no available inbound and no available fallback; picked ${label(best.ib)} among inbounds of enabled servers (${unit(bs)}${vs})${tie}.`;
    } else if (even) {
      explanation = `${lead}Picked ${label(best.ib)}: fewest users (${best.users}${runner ? ` vs ${runner.users} on ${label(runner.ib)}` : ""})${tie}, since no server of this route has shown its capacity yet (none has held its users back, none has an override), so every learned peak is only what its users asked for.`;
    } else if (lt && best.rank === 0) {
      // No candidate has minMoveGainBps spare per user: the fair share decided, not the crumbs.
      const vsShare = runner ? ` vs ${mbps(runner.share)} Mbit/s on ${label(runner.ib)}` : "";
      explanation = `${lead}Picked ${label(best.ib)}: largest fair share (${mbps(best.share)} Mbit/s per user${vsShare})${tie}, since no candidate has ${mbps(opts.minMoveGainBps)} Mbit/s free per user to offer.`;
    } else {
      explanation = `${lead}Picked ${label(best.ib)}: ${lt ? "most free bandwidth per user" : "lowest users per coefficient"} (${unit(bs)}${vs})${tie}.`;
    }
    explanation = explanation.charAt(0).toUpperCase() + explanation.slice(1);
  }

  let reason: DecisionReason;
  if (mode === "fallback") reason = "fallback";
  else if (mode === "panic") reason = "panic";
  else reason = cur !== undefined && chosen === cur ? "sticky" : "best";

  return {
    routeId: route.routeId,
    inboundId: chosen.ib.inboundId,
    serverId: chosen.ib.serverId,
    reason,
    candidates: candidatesOut,
    explanation: explain ? explanation : "",
  };
}
