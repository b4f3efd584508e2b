/**
 * Assignment policies played by the simulator. `routeboard` is the real balancer core through
 * the Balancer facade; the others are baselines. Every policy sees the balancer's view of
 * availability (`knownUp`); only the oracle also sees the truth.
 */
import { Balancer } from "@/server/balancer/index";
import type { BalancerOptions, RouteInput, ServerMetrics, ServerReport } from "@/server/balancer/types";
import { mulberry32, subSeed } from "./prng";
import type { Scenario } from "./scenario";

export interface SimView {
  servers: Scenario["servers"];
  /** Balancer's view: false from probeDetectS after an outage starts until probeDetectS after it ends. */
  knownUp: boolean[];
  /** Truth (oracle only). */
  trueUp: boolean[];
  /** Users currently assigned per server (online or not). */
  assignedCount: Int32Array;
  demandBps: Float64Array;
  userIds: string[];
  online: Uint8Array;
  assigned: Int32Array;
  /** Ascending demands of the online users on a server (oracle only). */
  sortedDemands(s: number): Float64Array;
}

export interface Policy {
  readonly name: string;
  /** Server index for user `u` fetching at second t (prev = current server or -1); -1 = none. */
  assign(u: number, prev: number, t: number, view: SimView): number;
  /** Server s's load, every min(reportIntervalS, loadIntervalS) s (engine.ts): what the panel gives the balancer. */
  onReport?(s: number, report: ServerReport): void;
  onAvailability?(s: number, up: boolean, t: number): void;
}

export const POLICY_NAMES = ["routeboard", "random", "cyclic", "fewestUsers", "oracle"] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

/**
 * The real core: one route with every server as an inbound. `linksSet`: every server's link
 * capacity is given, as an operator enters it ("Link capacity", the balancer's capacity
 * override), instead of learned from reports.
 */
export function routeboardPolicy(sc: Scenario, options?: Partial<BalancerOptions>, { linksSet = false }: { linksSet?: boolean } = {}): Policy {
  const balancer = new Balancer(options);
  const route: RouteInput = {
    routeId: "route",
    algorithm: sc.route.algorithm,
    hysteresis: sc.route.hysteresis,
    inbounds: sc.servers.map((s) => ({ inboundId: `in-${s.id}`, serverId: s.id, isFallback: false })),
  };
  const indexOfInbound = new Map(sc.servers.map((s, i) => [`in-${s.id}`, i]));
  // The Balancer keeps what it derives from a lookup while the same lookup is passed: every
  // change below makes a new one.
  let metrics = new Map<string, ServerMetrics>();
  const metricList: ServerMetrics[] = sc.servers.map((s) => {
    const m: ServerMetrics = {
      enabled: true,
      available: true,
      coefficient: s.coefficient ?? 1,
      capacityOverrideBps: linksSet ? s.capacityMbps * 1e6 : null,
      learnedPeakBps: 0,
      reportedUsers: 0,
      reportedTrafficBps: 0,
      reportedAt: -Infinity,
    };
    metrics.set(s.id, m);
    return m;
  });
  const empty = new Map<string, string>();
  return {
    name: "routeboard",
    assign(u, prev, t, view) {
      const prevMap = prev >= 0 ? new Map([["route", route.inbounds[prev]?.inboundId as string]]) : empty;
      const [line] = balancer.decideForSubscriber({
        userId: view.userIds[u] as string,
        routes: [route],
        servers: metrics,
        previousAssignments: prevMap,
        nowMs: t * 1000,
        explain: false, // the subscription hot path: same choice, no per-candidate notes
      });
      const id = line?.decision.inboundId;
      return id == null ? -1 : (indexOfInbound.get(id) ?? -1);
    },
    onReport(s, r) {
      const m = metricList[s] as ServerMetrics;
      m.reportedUsers = r.users;
      m.reportedTrafficBps = r.trafficBps;
      m.reportedAt = r.atMs;
      metrics = new Map(metrics);
      balancer.observeReport(sc.servers[s]?.id as string, r);
    },
    onAvailability(s, up, t) {
      const m = metricList[s] as ServerMetrics;
      m.available = up;
      if (up) m.availableSinceMs = t * 1000;
      metrics = new Map(metrics);
    },
  };
}

export function randomPolicy(sc: Scenario): Policy {
  const rng = mulberry32(subSeed(sc.seed, 2));
  const up: number[] = [];
  return {
    name: "random",
    assign(_u, _prev, _t, view) {
      up.length = 0;
      for (let s = 0; s < view.knownUp.length; s++) if (view.knownUp[s]) up.push(s);
      if (up.length === 0) return -1;
      return up[Math.floor(rng() * up.length)] as number;
    },
  };
}

export function cyclicPolicy(): Policy {
  let next = 0;
  return {
    name: "cyclic",
    assign(_u, _prev, _t, view) {
      const S = view.knownUp.length;
      for (let k = 0; k < S; k++) {
        const s = (next + k) % S;
        if (view.knownUp[s]) {
          next = (s + 1) % S;
          return s;
        }
      }
      return -1;
    },
  };
}

/** Least connections: fewest assigned users (the user itself not counted on its current server). */
export function fewestUsersPolicy(): Policy {
  return {
    name: "fewestUsers",
    assign(_u, prev, _t, view) {
      let best = -1;
      let bestN = Infinity;
      for (let s = 0; s < view.knownUp.length; s++) {
        if (!view.knownUp[s]) continue;
        const n = (view.assignedCount[s] as number) - (s === prev ? 1 : 0);
        if (n < bestN || (n === bestN && s === prev)) {
          best = s;
          bestN = n;
        }
      }
      return best;
    },
  };
}

/**
 * Oracle: knows true capacities, outages and every online user's demand; puts each fetching
 * user where its max-min fair allocation is largest (ties: most headroom left, then staying).
 */
export function oraclePolicy(sc: Scenario): Policy {
  const caps = sc.servers.map((s) => s.capacityMbps * 1e6);
  return {
    name: "oracle",
    assign(u, prev, _t, view) {
      const d = view.demandBps[u] as number;
      const isMember = view.online[u] === 1;
      let best = -1;
      let bestA = -1;
      let bestHead = -Infinity;
      let anyTrue = false;
      for (let s = 0; s < caps.length; s++) if (view.knownUp[s] && view.trueUp[s]) anyTrue = true;
      for (let s = 0; s < caps.length; s++) {
        if (!view.knownUp[s] || (anyTrue && !view.trueUp[s])) continue;
        const C = view.trueUp[s] ? (caps[s] as number) : 0;
        const sorted = view.sortedDemands(s);
        const skipSelf = isMember && s === prev;
        const a = newcomerAllocation(sorted, d, C, skipSelf);
        let sum = 0;
        for (let i = 0; i < sorted.length; i++) sum += sorted[i] as number;
        if (skipSelf) sum -= d;
        const head = C - sum - d;
        const eps = 1e-9 * d;
        if (
          best < 0 ||
          a > bestA + eps ||
          (Math.abs(a - bestA) <= eps && (head > bestHead + eps || (Math.abs(head - bestHead) <= eps && s === prev)))
        ) {
          best = s;
          bestA = a;
          bestHead = head;
        }
      }
      // Stay when moving gains nothing measurable.
      if (prev >= 0 && best !== prev && view.knownUp[prev] && view.trueUp[prev]) {
        const sorted = view.sortedDemands(prev);
        const a = newcomerAllocation(sorted, d, caps[prev] as number, isMember);
        if (a >= bestA * (1 - 1e-9)) return prev;
      }
      return best;
    },
  };
}

/** Max-min fair allocation a user with demand d would get on a link of capacity C. */
export function newcomerAllocation(sorted: Float64Array, d: number, C: number, skipOne: boolean): number {
  // Merge d into the ascending list (skipping one copy of d if the user is already there).
  const n = sorted.length - (skipOne ? 1 : 0) + 1;
  let remaining = C;
  let k = 0; // items consumed
  let placed = false;
  let skipped = !skipOne;
  let i = 0;
  while (k < n) {
    let x: number;
    let isSelf = false;
    const next = i < sorted.length ? (sorted[i] as number) : Infinity;
    if (!skipped && next === d) {
      skipped = true;
      i++;
      continue;
    }
    if (!placed && d <= next) {
      x = d;
      placed = true;
      isSelf = true;
    } else {
      x = next;
      i++;
    }
    const share = remaining / (n - k);
    if (x > share) return share; // the level is reached: everyone left (incl. the user) gets share
    if (isSelf) return d;
    remaining -= x;
    k++;
  }
  return d;
}

export function makePolicy(name: PolicyName, sc: Scenario): Policy {
  switch (name) {
    case "routeboard":
      return routeboardPolicy(sc);
    case "random":
      return randomPolicy(sc);
    case "cyclic":
      return cyclicPolicy();
    case "fewestUsers":
      return fewestUsersPolicy();
    case "oracle":
      return oraclePolicy(sc);
  }
}
