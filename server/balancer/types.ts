/**
 * Balancer core types (DESIGN §2). Everything here is plain data: the core never does I/O,
 * never reads the clock (nowMs is an input) and never uses Math.random().
 */

import type { Algorithm } from "@/core/format";
import { DEFAULT_PEAK_HALF_LIFE_MS } from "./capacity";
export type { Algorithm };

export const DEFAULT_HYSTERESIS = 0.25;

export interface RouteInbound {
  inboundId: string;
  serverId: string;
  isFallback: boolean;
  /** What the user sees in the app ("🇺🇸 New York"); used in explanations. Defaults to inboundId. */
  name?: string;
}

export interface RouteInput {
  routeId: string;
  algorithm: Algorithm;
  /** Stickiness margin: move only when best > current × (1 + hysteresis). Default 0.25. */
  hysteresis?: number;
  inbounds: readonly RouteInbound[];
  name?: string;
}

/** Latest known state of one server, keyed by serverId. */
export interface ServerMetrics {
  enabled: boolean;
  /** Health status is `healthy` (DESIGN §3). */
  available: boolean;
  /** Round-robin weight, default 1.0. */
  coefficient: number;
  /** Link capacity set by the operator; overrides the learned peak. */
  capacityOverrideBps: number | null;
  /** Learned peak as of reportedAt (see capacity.ts); decayed to nowMs by the core. */
  learnedPeakBps: number;
  /** Users online at the last report. */
  reportedUsers: number;
  /** Traffic at the last report, bits/s, the larger of rx and tx. */
  reportedTrafficBps: number;
  /** When the last report was taken (ms). Use a negative value / -Infinity for "never". */
  reportedAt: number;
  /**
   * When the server last became available (ms), if known. A move *to* a server that came
   * back less than failBackDwellMs ago is damped (BalancerOptions.failBackDwellMs).
   */
  availableSinceMs?: number;
  /**
   * A report of this server showed its users held back: traffic per user more than the default
   * hysteresis below what another server of its cluster gave at its latest report, both with at
   * least HELD_BACK_MIN_USERS users (capacity.ts LatestUserRates; the panel stores it with the
   * report, the simulator's Balancer marks it in observeReport). Its learned peak is then what
   * the link carries, not only what its users asked for. Absent = not seen.
   */
  heldBack?: boolean;
  /**
   * With heldBack: the traffic of the last report that showed the users held back, what the
   * link carried when full. The learned peak decays (it follows what users ask for, which cools
   * after a peak); a link seen full does not shrink in the quiet hours after, so its peak counts
   * as at least this (capacity.ts seenFullBps). Absent = not known.
   */
  heldBackBps?: number;
  /**
   * This server's inbounds that are out of the choice whatever the server's health (issue 25):
   * inboundId → why (its agent does not serve it, or its port failed the listener check).
   * Never picked, not even in panic. Absent = none.
   */
  unavailableInbounds?: ReadonlyMap<string, string>;
  name?: string;
}

/** A server as one decision reads it: metrics, its peak decayed to a time, its in-flight load. */
export interface ResolvedServer {
  readonly m: ServerMetrics;
  /** decayPeak(m.learnedPeakBps, nowMs − m.reportedAt, halfLifeMs), never below seenFullBps(m). */
  decayedPeak(nowMs: number, halfLifeMs: number): number;
  /** The in-flight additions since m.reportedAt (InflightLookup's answer for this server). */
  additions(): Readonly<Load> | undefined;
}

export interface ResolvedInbound {
  /** The inbound's server; undefined when the lookup has none. */
  readonly server: ResolvedServer | undefined;
  /** Its rendezvous weight for a user is rendezvous.weight(index, seed) = rendezvousHashFrom(seed, inboundId). */
  readonly rendezvous: { weight(index: number, seed: number): number };
  /** Its place in route.inbounds. */
  readonly index: number;
}

export type ServerMetricsLookup =
  | ReadonlyMap<string, ServerMetrics>
  | Readonly<Record<string, ServerMetrics>>;

/** Users/traffic the balancer itself added to a server since that server's last report. */
export interface Load {
  users: number;
  trafficBps: number;
}

export type InflightLookup = (serverId: string, reportedAt: number) => Readonly<Load> | undefined;

export interface BalancerOptions {
  /** Floor for learned capacity so a new / idle server is not scored zero. Default 100 Mbit/s. */
  capacityFloorBps: number;
  /** Expected traffic of a new user when a server reports no users. Default 2 Mbit/s. */
  defaultUserBps: number;
  /** Half-life of the learned peak. Default 24 h. */
  peakHalfLifeMs: number;
  /**
   * Least-traffic only: a move also needs an absolute gain of at least this many bits/s of
   * free bandwidth per user, so a saturated server does not shed users for crumbs of spare
   * capacity elsewhere; and a current server with less free bandwidth per user than this counts
   * as saturated, its users moving only for a larger fair share (decide.ts, rule 1b).
   * Default 2 Mbit/s.
   */
  minMoveGainBps: number;
  /**
   * Damped fail-back: for this long after a server becomes available again, moving a user
   * whose current server still works *to* it needs (least-traffic) a starved current server:
   * one whose reported traffic per user × (1 + the route's hysteresis) is below the best
   * reported traffic per user in the pool (servers with ≥ RATE_MIN_USERS users, decide.ts) or
   * below the returned server's free bandwidth per user ÷ (1 + failBackHysteresis);
   * round-robin needs failBackHysteresis instead of the route's hysteresis. New users and users
   * of a server that is down go there as usual, so it fills without reconnecting everyone it
   * lost. Default 12 h (0 turns it off: churn rises on the scenario families; README).
   */
  failBackDwellMs: number;
  /**
   * Round-robin's stickiness margin during the fail-back dwell. Default 3 (a 4× better score).
   * Least-traffic judges a fail-back move by what it gains (the starved test), and uses this
   * only to discount what the returned server offers a newcomer there (its free bandwidth per
   * user ÷ (1 + this)): the 4× margin on the move itself held users on saturated small links
   * where a large server came back with a cooled peak (README).
   */
  failBackHysteresis: number;
  /**
   * Least-traffic only: a user whose current server has spare capacity (its known capacity —
   * override or learned peak, never the floor — minus its reported traffic and the arrivals
   * in flight; departures are not spare) of at least what one user wants is getting what it
   * wants: a move cannot raise its satisfaction, nor anyone else's, so it stays. Default true
   * (false: more churn on the scenario families; README).
   */
  keepSatisfied: boolean;
  /**
   * Least-traffic only (decide.ts, rule 0): while the route is blind — no candidate has shown
   * its capacity (none held back, ServerMetrics.heldBack, none with an operator override) — a
   * first pick goes to the candidate with the fewest users, arrivals in flight included.
   * Every learned peak is then only what its users asked for, a lower bound of its link, and
   * free bandwidth per user between lower bounds ranks links by past demand, not size; the
   * even split assumes nothing the figures do not show; once one candidate is seen full (or
   * has an override) the scores decide first picks. And (rule 0b) a user whose server works
   * and has not shown its capacity moves only when that server's users are measured held back
   * (traffic per user below the pool's best by heldBackMargin), not for a score alone.
   * Default true (false: first picks and moves by the scores always; README).
   */
  evenWhileBlind: boolean;
}

export const DEFAULT_OPTIONS: Readonly<BalancerOptions> = Object.freeze({
  capacityFloorBps: 100_000_000,
  defaultUserBps: 2_000_000,
  peakHalfLifeMs: DEFAULT_PEAK_HALF_LIFE_MS,
  minMoveGainBps: 2_000_000,
  failBackDwellMs: 12 * 3600 * 1000,
  failBackHysteresis: 3,
  keepSatisfied: true,
  evenWhileBlind: true,
});

export interface DecideInput {
  userId: string;
  route: RouteInput;
  servers: ServerMetricsLookup;
  /** The inbound this user had on this route, if any. */
  previousInboundId: string | null;
  nowMs: number;
  /** In-flight additions per server (see inflight.ts). */
  inflight?: InflightLookup;
  /**
   * route.inbounds, in order, already resolved by the caller (the Balancer's view: learned
   * peaks merged, in-flight load at hand, rendezvous keys kept). When given, `servers` and
   * `inflight` are not read.
   */
  resolved?: readonly ResolvedInbound[];
  options?: Partial<BalancerOptions>;
  /**
   * Per-candidate scores and notes and the one-line explanation (default true). The
   * subscription hot path passes false: the choice (inbound, server, reason) is the same,
   * `candidates` is empty and `explanation` is "".
   */
  explain?: boolean;
}

export type DecisionReason = "best" | "sticky" | "fallback" | "panic" | "none";
export type ExclusionReason = "server-disabled" | "server-down" | "inbound-unavailable" | "fallback-reserve";

export interface CandidateScore {
  inboundId: string;
  serverId: string;
  /**
   * Higher is better. least-traffic: free bits/s per user, max(C − T, 0) / (U + 1).
   * round-robin: coefficient / (U + 1) (the inverse of the design's "lowest (U+1)/coefficient").
   * null when the inbound was excluded.
   */
  score: number | null;
  /** least-traffic secondary key (equal scores, e.g. all saturated): fair share C / (U + 1). */
  share?: number;
  excluded?: ExclusionReason;
  note: string;
}

export interface Decision {
  routeId: string;
  inboundId: string | null;
  serverId: string | null;
  reason: DecisionReason;
  candidates: CandidateScore[];
  explanation: string;
}

export interface SubscriberRequest {
  userId: string;
  /** Routes in position order. Empty routes are skipped. */
  routes: readonly RouteInput[];
  servers: ServerMetricsLookup;
  /** routeId → inboundId the user had. */
  previousAssignments: ReadonlyMap<string, string>;
  nowMs: number;
  /** Per-candidate scores, notes and explanations (default true); see DecideInput.explain. */
  explain?: boolean;
}

export interface RouteDecision {
  routeId: string;
  decision: Decision;
}

export interface ServerReport {
  users: number;
  trafficBps: number;
  atMs: number;
}
