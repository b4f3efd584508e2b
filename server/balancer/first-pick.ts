/**
 * A route's first pick without explanation: what decideRoute answers when the user has no
 * inbound on the route yet and at least one candidate is available (reason "best"), over a
 * table of the route's candidates made once per metrics view. A first fetch decides every
 * route of a subscriber this way; the table keeps what does not change between decisions
 * (which inbounds are candidates, their servers' reported load and peaks) in arrays, so a
 * decision reads little more than the in-flight load and the decayed peaks.
 *
 * The arithmetic is decideRoute's, in the same order (so the same floating-point values and
 * the same ties); lean.test.ts checks the two against each other, in-flight load included.
 */
import { capacityShown, effectiveCapacity, peakNow, seenFullBps } from "./capacity";
import { rendezvousSeed } from "./hash";
import { expectedUserBps, type InflightLedger } from "./inflight";
import type { BalancerOptions, ResolvedInbound, ResolvedServer, RouteInbound, RouteInput, ServerMetrics } from "./types";

/** A resolved server with its slot in the in-flight ledger and its place in the view's PeakMemo. */
export interface FirstPickServer extends ResolvedServer {
  readonly slot: number;
  readonly memoIndex: number;
}

/**
 * Each view server's peak decayed to the last nowMs asked for, side by side: a subscriber's
 * routes share servers and one nowMs, so a peak is decayed once per server, not per route.
 */
export class PeakMemo {
  private readonly atMs: Float64Array;
  private readonly halfLifeMs: Float64Array;
  private readonly value: Float64Array;
  constructor(n: number) {
    this.atMs = new Float64Array(n).fill(Number.NaN);
    this.halfLifeMs = new Float64Array(n).fill(Number.NaN);
    this.value = new Float64Array(n);
  }
  /** peakNow(peakBps, nowMs − reportedAt, halfLifeMs, seenFull) of server i. */
  decayed(i: number, peakBps: number, reportedAt: number, nowMs: number, halfLifeMs: number, seenFull: number): number {
    if (this.atMs[i] !== nowMs || this.halfLifeMs[i] !== halfLifeMs) {
      this.value[i] = peakNow(peakBps, nowMs - reportedAt, halfLifeMs, seenFull);
      this.atMs[i] = nowMs;
      this.halfLifeMs[i] = halfLifeMs;
    }
    return this.value[i] as number;
  }
}

/** Per candidate in FirstPickTable.data, in this order. */
const USERS = 0;
const TRAFFIC = 1;
/** m.learnedPeakBps, or 0 when it has none (≤ 0). */
const PEAK = 2;
/** NaN when the server has no override. */
const OVERRIDE = 3;
/** Round-robin weight, sanitised as decideRoute does. */
const COEF = 4;
const REPORTED_AT = 5;
const SLOT = 6;
const MEMO = 7;
/** The traffic an arrival adds in the ledger: expectedUserBps of the server's report. */
const ARRIVAL_BPS = 8;
/** seenFullBps(m): the peak never counts below it. */
const SEEN_FULL = 9;
const STRIDE = 10;

export interface FirstPickTable {
  readonly leastTraffic: boolean;
  /**
   * Least-traffic with evenWhileBlind, and no candidate has shown its capacity (none held
   * back, none with an override): fewest users wins, arrivals in flight included (decide.ts,
   * rule 0). Settled once per table: it reads the metrics only, never the in-flight load.
   */
  readonly blind: boolean;
  readonly inbounds: readonly RouteInbound[];
  readonly rendezvous: ResolvedInbound["rendezvous"];
  /** Each candidate's place in route.inbounds (its index in `rendezvous`). */
  readonly index: Int32Array;
  /** STRIDE numbers per candidate, side by side: one route's candidates in a few cache lines. */
  readonly data: Float64Array;
}

/**
 * The table of a route's candidates (enabled, available, not the fallback, the inbound itself
 * not unavailable), or null when it
 * has none: then decideRoute's fallback and panic rules apply.
 */
export function firstPickTable(route: RouteInput, resolved: readonly ResolvedInbound[], defaultUserBps: number, evenWhileBlind: boolean): FirstPickTable | null {
  const idx: number[] = [];
  for (let i = 0; i < route.inbounds.length; i++) {
    const m = resolved[i]?.server?.m;
    const ib = route.inbounds[i] as RouteInbound;
    if (m && m.enabled && m.available && !ib.isFallback && !m.unavailableInbounds?.has(ib.inboundId)) idx.push(i);
  }
  if (idx.length === 0) return null;
  const data = new Float64Array(idx.length * STRIDE);
  let shown = false;
  idx.forEach((i, j) => {
    const s = (resolved[i] as ResolvedInbound).server as FirstPickServer;
    const m = s.m as ServerMetrics;
    const o = j * STRIDE;
    data[o + USERS] = m.reportedUsers || 0;
    data[o + TRAFFIC] = m.reportedTrafficBps || 0;
    data[o + PEAK] = m.learnedPeakBps > 0 ? m.learnedPeakBps : 0;
    data[o + SEEN_FULL] = seenFullBps(m);
    data[o + OVERRIDE] = m.capacityOverrideBps === null ? Number.NaN : m.capacityOverrideBps;
    data[o + COEF] = Number.isFinite(m.coefficient) && m.coefficient > 0 ? m.coefficient : 0;
    data[o + REPORTED_AT] = m.reportedAt;
    data[o + SLOT] = s.slot;
    data[o + MEMO] = s.memoIndex;
    data[o + ARRIVAL_BPS] = expectedUserBps(m.reportedTrafficBps, m.reportedUsers, defaultUserBps);
    if (capacityShown(m)) shown = true;
  });
  const leastTraffic = route.algorithm !== "round-robin";
  return {
    leastTraffic,
    blind: leastTraffic && evenWhileBlind && !shown,
    inbounds: idx.map((i) => route.inbounds[i] as RouteInbound),
    rendezvous: (resolved[0] as ResolvedInbound).rendezvous,
    index: Int32Array.from(idx),
    data,
  };
}

let scratchPeak = new Float64Array(64);
let scratchRank = new Float64Array(64);
let scratchShare = new Float64Array(64);

/** The user's rendezvous seed, kept for the subscriber's next route. */
let seedUser: string | undefined;
let seedValue = 0;

/** The chosen candidate's index in t.inbounds. */
export function firstPick(t: FirstPickTable, ledger: InflightLedger, memo: PeakMemo, userId: string, nowMs: number, opts: BalancerOptions): number {
  const n = t.inbounds.length;
  if (scratchPeak.length < n) {
    scratchPeak = new Float64Array(n);
    scratchRank = new Float64Array(n);
    scratchShare = new Float64Array(n);
  }
  const d = t.data;
  const peaks = scratchPeak;
  const rank = scratchRank;
  const share = scratchShare;
  const lt = t.leastTraffic;
  const even = t.blind;
  let peerPeak = 0;
  // A blind pool's pick reads users only: no peak to decay.
  if (lt && !even) {
    let sum = 0;
    let k = 0;
    for (let j = 0, o = 0; j < n; j++, o += STRIDE) {
      const learned = d[o + PEAK]!;
      const p = learned > 0 ? memo.decayed(d[o + MEMO]!, learned, d[o + REPORTED_AT]!, nowMs, opts.peakHalfLifeMs, d[o + SEEN_FULL]!) : 0;
      peaks[j] = p;
      if (p > 0) {
        sum += p;
        k++;
      }
    }
    if (k > 0) peerPeak = sum / k;
  }
  let best = 0;
  for (let j = 0, o = 0; j < n; j++, o += STRIDE) {
    const slot = d[o + SLOT]!;
    let addUsers = 0;
    let addTraffic = 0;
    // The ledger's arrays are read through it: a prune writes them, never replaces them.
    if (ledger.count[slot] !== 0) {
      ledger.pruneSlot(slot, d[o + REPORTED_AT]!);
      if (ledger.count[slot] !== 0) {
        addUsers = ledger.sumUsers[slot]!;
        addTraffic = ledger.sumTrafficBps[slot]!;
      }
    }
    const U = Math.max(0, d[o + USERS]! + addUsers);
    const div = U + 1;
    if (even) {
      rank[j] = 1 / div;
      share[j] = 0;
    } else if (lt) {
      const T = Math.max(0, d[o + TRAFFIC]! + addTraffic);
      const ov = d[o + OVERRIDE]!;
      const C = effectiveCapacity(Number.isNaN(ov) ? null : ov, d[o + PEAK]! > 0 ? peaks[j]! : peerPeak, opts.capacityFloorBps);
      const free = Math.max(C - T, 0) / div;
      rank[j] = free >= opts.minMoveGainBps ? free : 0;
      share[j] = C / div;
    } else {
      rank[j] = d[o + COEF]! / div;
      share[j] = 0;
    }
    if (j > 0 && (rank[j]! > rank[best]! || (rank[j] === rank[best] && share[j]! > share[best]!))) best = j;
  }
  // Ties on (rank, share) go to the highest rendezvous weight, then the smaller inbound id.
  const top = best;
  let bestHash = -1;
  for (let j = 0; j < n; j++) {
    if (j === top || rank[j] !== rank[top] || share[j] !== share[top]) continue;
    if (userId !== seedUser) {
      seedValue = rendezvousSeed(userId);
      seedUser = userId;
    }
    if (bestHash < 0) bestHash = t.rendezvous.weight(t.index[best]!, seedValue);
    const h = t.rendezvous.weight(t.index[j]!, seedValue);
    if (h > bestHash || (h === bestHash && t.inbounds[j]!.inboundId < t.inbounds[best]!.inboundId)) {
      best = j;
      bestHash = h;
    }
  }
  return best;
}

/** The in-flight arrival of a user first-picked onto candidate j (the Balancer's recordArrival, +1). */
export function recordFirstPick(t: FirstPickTable, j: number, ledger: InflightLedger, nowMs: number): void {
  const o = j * STRIDE;
  ledger.recordSlot(t.data[o + SLOT]!, nowMs, 1, t.data[o + ARRIVAL_BPS]!);
}
