/**
 * npm run soak -- --phase heartbeats [--agents N] [--minutes M] [--seed S]
 *
 * The fast failover path under bad weather, in process, on a simulated clock (runs in
 * seconds; loopback only: nothing is sent anywhere). Many agents send heartbeats every
 * HEARTBEAT_INTERVAL_S; some are lost, some late, some machines stall for several seconds
 * (a busy box), fast probes of live servers time out now and then; servers really die
 * (some refuse at once, some black-hole until the probe's timeout); twice the panel loses its
 * own network for a while (every heartbeat lost, every probe timing out) and once its event
 * loop stalls with heartbeats queued. The panel's side is the watcher's algorithm made of the
 * real rules of core/heartbeat.ts (heartbeatPhase, isPanelBlind, stallGraceUntil,
 * startGraceUntil, lossConfirmed), ticking every WATCH_TICK_MS; the watcher's SQL around the
 * same rules is covered by server/monitoring/failover.test.ts.
 *
 * Prints one JSON object: healthyMarkedDown (aim 0), deaths and failover times (death to
 * confirmed, i.e. to the status change that the subscription snapshot reads at once).
 */
import { mulberry32 } from "./simulator/prng";
import {
  FAST_PROBE_CONNECTS,
  FAST_PROBE_GAP_MS,
  FAST_PROBE_TIMEOUT_MS,
  HEARTBEAT_INTERVAL_S,
  heartbeatPhase,
  isPanelBlind,
  lossConfirmed,
  stallGraceUntil,
  startGraceUntil,
  WATCH_TICK_MS,
  type FastProbeRecord,
} from "../core/heartbeat";

export interface HeartbeatSoakOptions {
  agents: number;
  minutes: number;
  seed: number;
  /** Chance a heartbeat is lost on the way. */
  lossRate: number;
  /** Chance a heartbeat is late, by up to maxLateMs. */
  lateRate: number;
  maxLateMs: number;
  /** Chance per heartbeat slot that the machine stalls (busy) for 3–9 s: no heartbeats, port still answers. */
  stallRate: number;
  /** Chance one TCP connect of a fast probe to a live server times out (independently per connect). */
  probeTimeoutRate: number;
  /** Deaths per minute across the fleet. */
  deathsPerMinute: number;
}

export const DEFAULT_HEARTBEAT_SOAK: HeartbeatSoakOptions = {
  agents: 1000,
  minutes: 30,
  seed: 24,
  lossRate: 0.1,
  lateRate: 0.1,
  maxLateMs: 3000,
  stallRate: 0.002,
  probeTimeoutRate: 0.05,
  deathsPerMinute: 2,
};

export interface HeartbeatSoakResult {
  agents: number;
  simulatedMinutes: number;
  heartbeatsSent: number;
  heartbeatsLost: number;
  heartbeatsLate: number;
  machineStalls: number;
  fastProbes: number;
  /** Fast probes of live servers that failed (every connect timed out), outside the panel's outages. */
  probeTimeoutsOnLiveServers: number;
  panelNetworkOutages: Array<{ atS: number; forS: number }>;
  panelStall: { atS: number; forS: number };
  blindTicks: number;
  deaths: number;
  deathsRoutedAround: number;
  /** Deaths that happened while the panel was blind (outage, stall, start). */
  deathsWhilePanelBlind: number;
  /** Death → out of rotation, for deaths the panel could see (no blind window in between). */
  failoverMs: { p50: number; p99: number; max: number } | null;
  /** The same for deaths a blind window delayed (the panel's own outage or stall came between). */
  failoverDelayedByBlindnessMs: { count: number; max: number } | null;
  healthyMarkedDown: number;
  /** The first few, to see why. */
  healthyMarkedDownDetails: Array<{ atS: number; server: number; silentS: number; probes: Array<{ atS: number; ok: boolean }> }>;
  wallMs: number;
}


interface Sim {
  /** Next heartbeat send time (agent clock = panel clock here). */
  nextSendMs: number;
  /** Busy until: no heartbeats leave, the port still answers. */
  stalledUntilMs: number;
  diedAtMs: number | null;
  /** A dead machine that black-holes (probe times out) rather than refusing. */
  blackHole: boolean;
  /** Panel side. */
  lastHeartbeatAtMs: number | null;
  down: boolean;
  probes: FastProbeRecord[];
  probeForHeartbeat: number | null;
  probeInFlightUntil: number | null;
  probeResult: boolean;
  probeStartedAt: number;
  nextProbeAtMs: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export function runHeartbeatSoak(opts: HeartbeatSoakOptions = DEFAULT_HEARTBEAT_SOAK): HeartbeatSoakResult {
  const wallStart = Date.now();
  const rand = mulberry32(opts.seed);
  const intervalMs = HEARTBEAT_INTERVAL_S * 1000;
  const endMs = opts.minutes * 60_000;
  const STEP = 50;
  const sims: Sim[] = Array.from({ length: opts.agents }, () => ({
    nextSendMs: rand() * intervalMs,
    stalledUntilMs: 0,
    diedAtMs: null,
    blackHole: false,
    lastHeartbeatAtMs: null,
    down: false,
    probes: [],
    probeForHeartbeat: null,
    probeInFlightUntil: null,
    probeResult: false,
    probeStartedAt: 0,
    nextProbeAtMs: 0,
  }));
  // Panel faults: two network outages (5–30 s) and one event-loop stall (10–20 s), at random times.
  const outages = [0, 1].map((k) => ({ atMs: Math.round(((k + 0.3 + rand() * 0.4) * endMs) / 2), forMs: Math.round(5000 + rand() * 25_000) }));
  const stall = { atMs: Math.round(endMs * (0.1 + rand() * 0.1)), forMs: Math.round(10_000 + rand() * 10_000) };
  const offline = (t: number) => outages.some((o) => t >= o.atMs && t < o.atMs + o.forMs);
  const stalled = (t: number) => t >= stall.atMs && t < stall.atMs + stall.forMs;

  // Heartbeats on the way: arrival time → agent index (late ones arrive later; during a stall they queue).
  const inFlight: Array<{ at: number; i: number }> = [];
  let sent = 0;
  let lost = 0;
  let late = 0;
  let machineStalls = 0;
  let fastProbes = 0;
  let probeTimeoutsLive = 0;
  let blindTicks = 0;
  const failovers: number[] = [];
  /** Deaths whose detection a blind window (the panel's outage or stall) came between. */
  const failoversDelayed: number[] = [];
  const markedDownHealthy: HeartbeatSoakResult["healthyMarkedDownDetails"] = [];
  let lastBlindTick = Number.NEGATIVE_INFINITY;
  let deaths = 0;
  let deathsWhileBlind = 0;
  let prevTick: number | null = null;
  let blindUntil = startGraceUntil(0);
  let nextTick = 0;
  const deathEveryMs = opts.deathsPerMinute > 0 ? 60_000 / opts.deathsPerMinute : Infinity;
  let nextDeath = deathEveryMs / 2;

  for (let t = 0; t < endMs; t += STEP) {
    // Deaths: a random live server, as a machine dies (heartbeats stop, its port stops answering).
    if (t >= nextDeath) {
      nextDeath += deathEveryMs * (0.5 + rand());
      const alive = sims.map((s, i) => (s.diedAtMs === null ? i : -1)).filter((i) => i >= 0);
      if (alive.length > opts.agents / 2 + 1) {
        const i = alive[Math.floor(rand() * alive.length)]!;
        sims[i]!.diedAtMs = t;
        sims[i]!.blackHole = rand() < 0.5;
        deaths++;
        if (offline(t) || stalled(t) || t < blindUntil) deathsWhileBlind++;
      }
    }
    // Agents send.
    for (let i = 0; i < sims.length; i++) {
      const s = sims[i]!;
      if (s.diedAtMs !== null || t < s.nextSendMs) continue;
      s.nextSendMs += intervalMs;
      if (t < s.stalledUntilMs) continue;
      if (rand() < opts.stallRate) {
        s.stalledUntilMs = t + 3000 + rand() * 6000;
        machineStalls++;
        continue;
      }
      sent++;
      if (offline(t) || rand() < opts.lossRate) {
        lost++;
        continue;
      }
      let delay = 1 + rand() * 20;
      if (rand() < opts.lateRate) {
        delay += rand() * opts.maxLateMs;
        late++;
      }
      inFlight.push({ at: t + delay, i });
    }
    if (stalled(t)) continue; // the panel's event loop does nothing; heartbeats queue up
    // Arrivals (a stalled panel reads its queue when it wakes: the arrival time is now).
    for (let k = inFlight.length - 1; k >= 0; k--) {
      const h = inFlight[k]!;
      if (h.at > t) continue;
      inFlight.splice(k, 1);
      const s = sims[h.i]!;
      s.lastHeartbeatAtMs = Math.max(s.lastHeartbeatAtMs ?? 0, t);
      if (s.down && s.diedAtMs === null) s.down = false; // a heartbeat brings it back
    }
    // Probe answers.
    for (const s of sims) {
      if (s.probeInFlightUntil !== null && t >= s.probeInFlightUntil) {
        s.probes.push({ startedAtMs: s.probeStartedAt, ok: s.probeResult });
        if (s.probes.length > 8) s.probes.shift();
        s.probeInFlightUntil = null;
        s.nextProbeAtMs = t + FAST_PROBE_GAP_MS;
      }
    }
    if (t < nextTick) continue;
    nextTick = t + WATCH_TICK_MS;
    // The watcher's tick (server/monitoring/failover.ts), on the real rules.
    blindUntil = stallGraceUntil(prevTick, t, WATCH_TICK_MS, blindUntil);
    prevTick = t;
    let heartbeating = 0;
    let silent = 0;
    for (const s of sims) {
      const phase = heartbeatPhase(s.lastHeartbeatAtMs, t);
      if (phase === "never" || phase === "stale") continue;
      heartbeating++;
      if (phase !== "alive") silent++;
    }
    const blind = t < blindUntil || isPanelBlind(heartbeating, silent);
    if (blind) {
      blindTicks++;
      lastBlindTick = t;
      continue;
    }
    for (let i = 0; i < sims.length; i++) {
      const s = sims[i]!;
      const phase = heartbeatPhase(s.lastHeartbeatAtMs, t);
      if (s.down || (phase !== "late" && phase !== "suspect")) continue;
      if (s.probeForHeartbeat !== s.lastHeartbeatAtMs) {
        s.probeForHeartbeat = s.lastHeartbeatAtMs;
        s.probes = [];
      }
      if (lossConfirmed(s.lastHeartbeatAtMs, s.probes, t, false, HEARTBEAT_INTERVAL_S, lastBlindTick)) {
        s.down = true;
        if (s.diedAtMs === null) markedDownHealthy.push({ atS: t / 1000, server: i, silentS: (t - s.lastHeartbeatAtMs!) / 1000, probes: s.probes.map((p) => ({ atS: p.startedAtMs / 1000, ok: p.ok })) });
        else if (lastBlindTick >= s.diedAtMs) failoversDelayed.push(t - s.diedAtMs);
        else failovers.push(t - s.diedAtMs);
        continue;
      }
      if (s.probeInFlightUntil === null && t >= s.nextProbeAtMs) {
        fastProbes++;
        s.probeStartedAt = t;
        const dead = s.diedAtMs !== null;
        // FAST_PROBE_CONNECTS parallel connects: a live server's probe times out only when each does.
        let allTimeOut = true;
        for (let k = 0; k < FAST_PROBE_CONNECTS; k++) allTimeOut = allTimeOut && rand() < opts.probeTimeoutRate;
        const timesOut = offline(t) || (dead ? s.blackHole : allTimeOut);
        if (!dead && timesOut && !offline(t)) probeTimeoutsLive++;
        s.probeResult = !dead && !timesOut;
        s.probeInFlightUntil = t + (timesOut ? FAST_PROBE_TIMEOUT_MS : dead ? 1 : 5 + rand() * 40);
      }
    }
  }
  const sorted = [...failovers].sort((a, b) => a - b);
  return {
    agents: opts.agents,
    simulatedMinutes: opts.minutes,
    heartbeatsSent: sent,
    heartbeatsLost: lost,
    heartbeatsLate: late,
    machineStalls,
    fastProbes,
    probeTimeoutsOnLiveServers: probeTimeoutsLive,
    panelNetworkOutages: outages.map((o) => ({ atS: Math.round(o.atMs / 1000), forS: Math.round(o.forMs / 1000) })),
    panelStall: { atS: Math.round(stall.atMs / 1000), forS: Math.round(stall.forMs / 1000) },
    blindTicks,
    deaths,
    deathsRoutedAround: failovers.length + failoversDelayed.length,
    deathsWhilePanelBlind: deathsWhileBlind,
    failoverMs: sorted.length ? { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1]! } : null,
    failoverDelayedByBlindnessMs: failoversDelayed.length ? { count: failoversDelayed.length, max: Math.max(...failoversDelayed) } : null,
    healthyMarkedDown: markedDownHealthy.length,
    healthyMarkedDownDetails: markedDownHealthy.slice(0, 5),
    wallMs: Date.now() - wallStart,
  };
}

function numArg(name: string, fallback: number, min: number, max: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!Number.isFinite(n) || n < min || n > max) {
    process.stderr.write(`soak: --${name} must be a number from ${min} to ${max}\n`);
    process.exit(2);
  }
  return n;
}

/** The `--phase heartbeats` entry of scripts/soak.ts. */
export function heartbeatSoakMain(): void {
  const result = runHeartbeatSoak({
    ...DEFAULT_HEARTBEAT_SOAK,
    agents: Math.floor(numArg("agents", DEFAULT_HEARTBEAT_SOAK.agents, 2, 20_000)),
    minutes: numArg("minutes", DEFAULT_HEARTBEAT_SOAK.minutes, 1, 240),
    seed: Math.floor(numArg("seed", DEFAULT_HEARTBEAT_SOAK.seed, 0, 2 ** 31)),
  });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  if (result.healthyMarkedDown > 0) process.exitCode = 1;
}
