/**
 * Scenario simulator engine (format: ../shared/scenarios/README.md).
 *
 * Model, second by simulated second (event buckets at 1 s resolution):
 * - Workload (identical for every policy, drawn from `seed`): N users arrive uniformly within
 *   `arrival.overS` (a Poisson process conditioned on N arrivals is uniform; `burst` is the same
 *   draw over a short window). Each user wants a fixed log-normal demand while online. A user
 *   comes online on arrival, then alternates exponential on (`meanOnS`) and off (`meanOffS`)
 *   periods drawn from a per-user stream, so every policy sees the same sessions.
 * - Fetches: a user fetches the subscription on arrival and every `refreshS` after it
 *   (whether online or not: the app refreshes in the background). On every fetch the policy
 *   assigns a server. Only scheduled refreshes count towards `churn`'s denominator.
 * - Failover assumption (applied identically to every policy): the balancer learns of an outage
 *   `probeDetectS` after it starts; at that second every ONLINE user assigned to that server
 *   re-fetches at once (the app fails over as soon as the control plane stops handing the
 *   server out), and an OFFLINE user assigned to a server the balancer knows is down
 *   re-fetches when its next session starts, before connecting. Hence no policy spends
 *   online seconds on a server the balancer knows is down, except a balancer that chooses
 *   such a server itself (routeboard's panic mode when nothing is available).
 *   Users on a server that is down but not yet detected get nothing (satisfaction 0).
 * - Servers share capacity max-min fairly (water filling) among their online users; a server in
 *   outage carries nothing. The balancer sees each server's load every
 *   min(`reportIntervalS`, `loadIntervalS`) seconds, `loadIntervalS` defaulting to
 *   LOAD_INTERVAL_S (10 s, core/heartbeat.ts): agents measure their load every 10 s and send
 *   it in their next heartbeat, and the panel gives it to the balancer as a report's load;
 *   reports every `reportIntervalS` carry health and per-user accounting, which the simulator
 *   does not model. `loadIntervalS` = `reportIntervalS` plays agents that send no load in
 *   heartbeats. Phases are staggered evenly across servers over that interval, as independent
 *   agents are. An observation is the average carried traffic since the server's last one and
 *   the users online at any moment since then, as an agent counts them (the users who moved
 *   traffic in the window, agent.ts; the users online at its last second were fewer, and the
 *   balancer's traffic per user higher than a real agent's). Nothing is sent while a server
 *   is down. The balancer never sees `capacityMbps`.
 * - Policies see the balancer's view of availability (known up/down). The oracle additionally
 *   sees true capacities, outages and demands.
 *
 * Metrics (per policy):
 *   jain              Jain's index of satisfaction (achieved ÷ wanted) over online users,
 *                     computed every second and averaged weighted by online users (i.e. over
 *                     online user-seconds).
 *   p5Satisfaction    5th percentile of satisfaction over online user-seconds (0.001 bins).
 *   overloadShare     share of server-seconds where online demand exceeded (true) capacity.
 *   churn             moves on a scheduled refresh while the previous server was known available,
 *                     ÷ scheduled refreshes.
 *   onDownUserSeconds online user-seconds on a server after the balancer knew it was down.
 *   decisionsPerSecond  decisions ÷ wall time spent inside the policy's decision function.
 */
import { DEFAULT_LOAD_INTERVAL_S, DEFAULT_PROBE_DETECT_S, type Scenario } from "./scenario";
import { exponential, lognormal, mulberry32, subSeed } from "./prng";
import type { Policy, SimView } from "./policies";

export interface PolicyResult {
  jain: number;
  p5Satisfaction: number;
  overloadShare: number;
  churn: number;
  onDownUserSeconds: number;
  decisionsPerSecond: number;
}

export interface Workload {
  arrivalS: Int32Array;
  demandBps: Float64Array;
  userIds: string[];
}

export function buildWorkload(sc: Scenario): Workload {
  const rng = mulberry32(subSeed(sc.seed, 1));
  const n = sc.users.count;
  const arr = new Array<number>(n);
  for (let i = 0; i < n; i++) arr[i] = Math.floor(rng() * sc.users.arrival.overS);
  arr.sort((a, b) => a - b);
  const demandBps = new Float64Array(n);
  const d = sc.users.demandMbps;
  for (let i = 0; i < n; i++) demandBps[i] = lognormal(rng, d.median, d.sigma) * 1e6;
  return {
    arrivalS: Int32Array.from(arr),
    demandBps,
    userIds: Array.from({ length: n }, (_, i) => `user-${i}`),
  };
}

// event kinds (encoded as user * 4 + kind)
const ARRIVE = 0;
const ON = 1;
const OFF = 2;
const REFRESH = 3;

const BINS = 1000; // satisfaction histogram resolution 0.001

interface ServerState {
  capBps: number;
  members: number[]; // online users assigned here
  dirty: boolean;
  trueUp: boolean;
  knownUp: boolean;
  // current allocation summary
  n: number;
  sumS: number;
  sumS2: number;
  demand: number;
  carried: number;
  bins: Uint16Array; // satisfaction bin per member (parallel to members at last recompute)
  binsLen: number;
  since: number;
  // load observations (policy.onReport)
  phase: number;
  carriedAccum: number;
  lastReportT: number;
  /** Users online at any moment since the last observation: what an agent counts as online. */
  active: Set<number>;
  // oracle cache
  sorted: Float64Array | null;
}

export function runPolicy(sc: Scenario, wl: Workload, policy: Policy, now: () => number): PolicyResult {
  const D = sc.durationS;
  const S = sc.servers.length;
  const N = sc.users.count;
  /** Seconds between two observations of a server's load (policy.onReport). */
  const R = Math.min(sc.reportIntervalS, sc.loadIntervalS ?? DEFAULT_LOAD_INTERVAL_S);
  const detect = sc.probeDetectS ?? DEFAULT_PROBE_DETECT_S;
  const { meanOnS, meanOffS } = sc.users.sessions;
  const refreshS = sc.users.refreshS;

  const servers: ServerState[] = sc.servers.map((s, i) => ({
    capBps: s.capacityMbps * 1e6,
    members: [],
    dirty: false,
    trueUp: true,
    knownUp: true,
    n: 0,
    sumS: 0,
    sumS2: 0,
    demand: 0,
    carried: 0,
    bins: new Uint16Array(16),
    binsLen: 0,
    since: 0,
    phase: Math.floor((i * R) / S),
    carriedAccum: 0,
    lastReportT: 0,
    active: new Set(),
    sorted: null,
  }));

  // ---- event buckets ----
  const buckets: (number[] | undefined)[] = new Array(D);
  const push = (t: number, ev: number) => {
    if (t >= D) return;
    const b = buckets[t];
    if (b) b.push(ev);
    else buckets[t] = [ev];
  };
  for (let u = 0; u < N; u++) push(wl.arrivalS[u] as number, u * 4 + ARRIVE);

  // outage changes: [t, server, kind] kind 0 trueDown 1 trueUp 2 knownDown 3 knownUp
  const changes: (Array<[number, number]> | undefined)[] = new Array(D + detect + 1);
  const addChange = (t: number, s: number, k: number) => {
    if (t >= D) return;
    const c = changes[t];
    if (c) c.push([s, k]);
    else changes[t] = [[s, k]];
  };
  sc.servers.forEach((srv, s) => {
    for (const o of srv.outages ?? []) {
      addChange(o.fromS, s, 0);
      addChange(o.toS, s, 1);
      addChange(o.fromS + detect, s, 2);
      addChange(o.toS + detect, s, 3);
    }
  });

  // ---- user state ----
  const assigned = new Int32Array(N).fill(-1);
  const online = new Uint8Array(N);
  const pos = new Int32Array(N).fill(-1); // index in server.members
  const sessionRng = new Array<ReturnType<typeof mulberry32> | undefined>(N);
  const assignedCount = new Int32Array(S);
  let unserved = 0; // online users with no server
  let unservedSince = 0;
  const hist = new Float64Array(BINS + 1);

  const view: SimView = {
    servers: sc.servers,
    knownUp: servers.map(() => true),
    trueUp: servers.map(() => true),
    assignedCount,
    demandBps: wl.demandBps,
    userIds: wl.userIds,
    online,
    assigned,
    sortedDemands: (s: number) => {
      const st = servers[s] as ServerState;
      if (!st.sorted) {
        const a = new Float64Array(st.members.length);
        for (let i = 0; i < st.members.length; i++) a[i] = wl.demandBps[st.members[i] as number] as number;
        a.sort();
        st.sorted = a;
      }
      return st.sorted;
    },
  };

  const addMember = (s: number, u: number) => {
    const st = servers[s] as ServerState;
    pos[u] = st.members.length;
    st.members.push(u);
    st.active.add(u);
    st.dirty = true;
    st.sorted = null; // the oracle's next look must see this user, even within the same second
  };
  const removeMember = (s: number, u: number) => {
    const st = servers[s] as ServerState;
    const i = pos[u] as number;
    const last = st.members.pop() as number;
    if (last !== u) {
      st.members[i] = last;
      pos[last] = i;
    }
    pos[u] = -1;
    st.dirty = true;
    st.sorted = null;
  };
  const flushUnserved = (t: number) => {
    hist[0] = (hist[0] as number) + unserved * (t - unservedSince);
    unservedSince = t;
  };

  let decisions = 0;
  let decisionTime = 0;
  let refreshes = 0;
  let moves = 0;

  const fetch = (u: number, t: number, isRefresh: boolean) => {
    const prev = assigned[u] as number;
    const t0 = now();
    const next = policy.assign(u, prev, t, view);
    decisionTime += now() - t0;
    decisions++;
    if (isRefresh) {
      refreshes++;
      if (prev >= 0 && next !== prev && view.knownUp[prev]) moves++;
    }
    if (next === prev) return;
    if (prev >= 0) assignedCount[prev] = (assignedCount[prev] as number) - 1;
    if (next >= 0) assignedCount[next] = (assignedCount[next] as number) + 1;
    assigned[u] = next;
    if (online[u]) {
      if (prev >= 0) removeMember(prev, u);
      else {
        flushUnserved(t);
        unserved--;
      }
      if (next >= 0) addMember(next, u);
      else {
        flushUnserved(t);
        unserved++;
      }
    }
  };

  const goOnline = (u: number, t: number) => {
    online[u] = 1;
    const s = assigned[u] as number;
    if (s >= 0) addMember(s, u);
    else {
      flushUnserved(t);
      unserved++;
    }
  };
  const goOffline = (u: number, t: number) => {
    online[u] = 0;
    const s = assigned[u] as number;
    if (s >= 0) removeMember(s, u);
    else {
      flushUnserved(t);
      unserved--;
    }
  };

  const recompute = (st: ServerState, t: number) => {
    // flush the previous allocation's histogram contribution
    const dt = t - st.since;
    if (dt > 0) {
      for (let i = 0; i < st.binsLen; i++) {
        const bin = st.bins[i] as number;
        hist[bin] = (hist[bin] as number) + dt;
      }
    }
    st.since = t;
    st.dirty = false;
    st.sorted = null;
    const m = st.members;
    const n = m.length;
    if (st.bins.length < n) st.bins = new Uint16Array(Math.max(n, st.bins.length * 2));
    st.binsLen = n;
    let demand = 0;
    for (let i = 0; i < n; i++) demand += wl.demandBps[m[i] as number] as number;
    st.demand = demand;
    st.n = n;
    const C = st.trueUp ? st.capBps : 0;
    if (demand <= C) {
      st.carried = demand;
      st.sumS = n;
      st.sumS2 = n;
      st.bins.fill(BINS, 0, n);
      return;
    }
    // water filling
    const sorted = view.sortedDemands(servers.indexOf(st));
    let remaining = C;
    let level = 0;
    for (let i = 0; i < n; i++) {
      const d = sorted[i] as number;
      const share = remaining / (n - i);
      if (d <= share) remaining -= d;
      else {
        level = share;
        break;
      }
      level = Infinity;
    }
    let sumS = 0;
    let sumS2 = 0;
    for (let i = 0; i < n; i++) {
      const d = wl.demandBps[m[i] as number] as number;
      const s = d <= level ? 1 : level / d;
      sumS += s;
      sumS2 += s * s;
      st.bins[i] = Math.min(BINS, Math.floor(s * BINS));
    }
    st.carried = C;
    st.sumS = sumS;
    st.sumS2 = sumS2;
  };

  let jainNum = 0;
  let jainDen = 0;
  let overloaded = 0;
  let onDown = 0;

  /** An observation's window starts at t (after one, or when a server comes back): nothing carried yet, its online users seen. */
  const openWindow = (st: ServerState, t: number) => {
    st.carriedAccum = 0;
    st.lastReportT = t;
    st.active = new Set(st.members);
  };

  for (let t = 0; t < D; t++) {
    // 1. outage truth and detection
    const ch = changes[t];
    if (ch) {
      for (const [s, k] of ch) {
        const st = servers[s] as ServerState;
        if (k === 0 || k === 1) {
          st.trueUp = k === 1;
          view.trueUp[s] = st.trueUp;
          st.dirty = true;
          if (st.trueUp) openWindow(st, t);
        } else {
          const up = k === 3;
          if (st.knownUp === up) continue;
          st.knownUp = up;
          view.knownUp[s] = up;
          policy.onAvailability?.(s, up, t);
          if (!up) for (const u of st.members.slice()) fetch(u, t, false);
        }
      }
    }
    // 2. load observations
    for (let s = 0; s < S; s++) {
      const st = servers[s] as ServerState;
      if (!st.trueUp || t < st.phase || (t - st.phase) % R !== 0) continue;
      if (st.dirty) recompute(st, t);
      const win = t - st.lastReportT;
      const traffic = win > 0 ? st.carriedAccum / win : st.carried;
      policy.onReport?.(s, { users: st.active.size, trafficBps: traffic, atMs: t * 1000 });
      openWindow(st, t);
    }
    // 3. user events
    const b = buckets[t];
    if (b) {
      for (let i = 0; i < b.length; i++) {
        const ev = b[i] as number;
        const u = ev >> 2;
        const kind = ev & 3;
        if (kind === ARRIVE) {
          const rng = mulberry32(subSeed(sc.seed, 1000 + u));
          sessionRng[u] = rng;
          fetch(u, t, false);
          goOnline(u, t);
          push(t + Math.max(1, Math.round(exponential(rng, meanOnS))), u * 4 + OFF);
          push(t + refreshS, u * 4 + REFRESH);
        } else if (kind === ON) {
          const s = assigned[u] as number;
          if (s < 0 || !view.knownUp[s]) fetch(u, t, false);
          goOnline(u, t);
          push(t + Math.max(1, Math.round(exponential(sessionRng[u] as () => number, meanOnS))), u * 4 + OFF);
        } else if (kind === OFF) {
          goOffline(u, t);
          push(t + Math.max(1, Math.round(exponential(sessionRng[u] as () => number, meanOffS))), u * 4 + ON);
        } else {
          fetch(u, t, true);
          push(t + refreshS, u * 4 + REFRESH);
        }
      }
      buckets[t] = undefined;
    }
    // 4. allocation and per-second metrics
    let n = unserved;
    let sumS = 0;
    let sumS2 = 0;
    for (let s = 0; s < S; s++) {
      const st = servers[s] as ServerState;
      if (st.dirty) recompute(st, t);
      n += st.n;
      sumS += st.sumS;
      sumS2 += st.sumS2;
      st.carriedAccum += st.carried;
      if (st.demand > (st.trueUp ? st.capBps : 0)) overloaded++;
      if (!st.knownUp) onDown += st.n;
    }
    if (n > 0) {
      jainNum += sumS2 > 0 ? (sumS * sumS) / sumS2 : 0; // J_t × n_t
      jainDen += n;
    }
  }
  for (const st of servers) recompute(st, D);
  flushUnserved(D);

  // p5 from histogram
  let total = 0;
  for (let i = 0; i <= BINS; i++) total += hist[i] as number;
  let p5 = 1;
  if (total > 0) {
    let acc = 0;
    for (let i = 0; i <= BINS; i++) {
      acc += hist[i] as number;
      if (acc >= 0.05 * total) {
        p5 = i / BINS;
        break;
      }
    }
  }
  const r4 = (x: number) => Math.round(x * 10000) / 10000;
  return {
    jain: r4(jainDen > 0 ? jainNum / jainDen : 1),
    p5Satisfaction: r4(p5),
    overloadShare: r4(overloaded / (S * D)),
    churn: r4(refreshes > 0 ? moves / refreshes : 0),
    onDownUserSeconds: onDown,
    decisionsPerSecond: decisionTime > 0 ? Math.round(decisions / (decisionTime / 1000)) : 0,
  };
}
