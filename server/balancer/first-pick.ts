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
import { effectiveCapacity } from "./capacity";
import { rendezvousSeed } from "./hash";
import type { BalancerOptions, Decision, Load, ResolvedInbound, ResolvedServer, RouteInbound, RouteInput, ServerMetrics } from "./types";

export interface FirstPickTable {
  readonly leastTraffic: boolean;
  readonly inbounds: readonly RouteInbound[];
  readonly servers: readonly ResolvedServer[];
  readonly rendezvous: ResolvedInbound["rendezvous"];
  /** Each candidate's place in route.inbounds (its index in `rendezvous`). */
  readonly index: Int32Array;
  readonly reportedUsers: Float64Array;
  readonly reportedTrafficBps: Float64Array;
  /** m.learnedPeakBps as given (0 or less: no peak yet). */
  readonly learnedPeakBps: Float64Array;
  /** NaN when the server has no override. */
  readonly capacityOverrideBps: Float64Array;
  /** Round-robin weight, sanitised as decideRoute does. */
  readonly coefficient: Float64Array;
}

/**
 * The table of a route's candidates (enabled, available, not the fallback), or null when it
 * has none: then decideRoute's fallback and panic rules apply.
 */
export function firstPickTable(route: RouteInput, resolved: readonly ResolvedInbound[]): FirstPickTable | null {
  const idx: number[] = [];
  for (let i = 0; i < route.inbounds.length; i++) {
    const m = resolved[i]?.server?.m;
    if (m && m.enabled && m.available && !(route.inbounds[i] as RouteInbound).isFallback) idx.push(i);
  }
  if (idx.length === 0) return null;
  const n = idx.length;
  const t = {
    leastTraffic: route.algorithm !== "round-robin",
    inbounds: idx.map((i) => route.inbounds[i] as RouteInbound),
    servers: idx.map((i) => (resolved[i] as ResolvedInbound).server as ResolvedServer),
    rendezvous: (resolved[0] as ResolvedInbound).rendezvous,
    index: Int32Array.from(idx),
    reportedUsers: new Float64Array(n),
    reportedTrafficBps: new Float64Array(n),
    learnedPeakBps: new Float64Array(n),
    capacityOverrideBps: new Float64Array(n),
    coefficient: new Float64Array(n),
  };
  for (let j = 0; j < n; j++) {
    const m = t.servers[j]!.m as ServerMetrics;
    t.reportedUsers[j] = m.reportedUsers || 0;
    t.reportedTrafficBps[j] = m.reportedTrafficBps || 0;
    t.learnedPeakBps[j] = m.learnedPeakBps > 0 ? m.learnedPeakBps : 0;
    t.capacityOverrideBps[j] = m.capacityOverrideBps === null ? Number.NaN : m.capacityOverrideBps;
    t.coefficient[j] = Number.isFinite(m.coefficient) && m.coefficient > 0 ? m.coefficient : 0;
  }
  return t;
}

let scratchPeak = new Float64Array(64);
let scratchRank = new Float64Array(64);
let scratchShare = new Float64Array(64);

/** The user's rendezvous seed, kept for the subscriber's next route. */
let seedUser: string | undefined;
let seedValue = 0;

export function firstPick(t: FirstPickTable, routeId: string, userId: string, nowMs: number, opts: BalancerOptions): Decision {
  const n = t.inbounds.length;
  if (scratchPeak.length < n) {
    scratchPeak = new Float64Array(n);
    scratchRank = new Float64Array(n);
    scratchShare = new Float64Array(n);
  }
  const peaks = scratchPeak;
  const rank = scratchRank;
  const share = scratchShare;
  const lt = t.leastTraffic;
  let peerPeak = 0;
  if (lt) {
    let sum = 0;
    let k = 0;
    for (let j = 0; j < n; j++) {
      const p = t.learnedPeakBps[j]! > 0 ? t.servers[j]!.decayedPeak(nowMs, opts.peakHalfLifeMs) : 0;
      peaks[j] = p;
      if (p > 0) {
        sum += p;
        k++;
      }
    }
    if (k > 0) peerPeak = sum / k;
  }
  let best = 0;
  for (let j = 0; j < n; j++) {
    const add: Readonly<Load> | undefined = t.servers[j]!.additions();
    const U = Math.max(0, t.reportedUsers[j]! + (add ? add.users : 0));
    const div = U + 1;
    if (lt) {
      const T = Math.max(0, t.reportedTrafficBps[j]! + (add ? add.trafficBps : 0));
      const o = t.capacityOverrideBps[j]!;
      const C = effectiveCapacity(Number.isNaN(o) ? null : o, t.learnedPeakBps[j]! > 0 ? peaks[j]! : peerPeak, opts.capacityFloorBps);
      const free = Math.max(C - T, 0) / div;
      rank[j] = free >= opts.minMoveGainBps ? free : 0;
      share[j] = C / div;
    } else {
      rank[j] = t.coefficient[j]! / div;
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
  const ib = t.inbounds[best]!;
  return { routeId, inboundId: ib.inboundId, serverId: ib.serverId, reason: "best", candidates: [], explanation: "" };
}
