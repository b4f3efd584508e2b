/**
 * The fast failover path of DESIGN §3 (issue 24): pure rules, the clock is an input.
 *
 * An agent sends a tiny heartbeat (POST /api/agent/heartbeat) every HEARTBEAT_INTERVAL_S,
 * with no body, or with the load it measured over the last LOAD_INTERVAL_S. The panel:
 *  - counts a server `late` once it has been silent for more than LATE_AFTER_MISSED intervals
 *    and starts fast probes (bare TCP connects to its probe port, FAST_PROBE_TIMEOUT_MS);
 *  - counts it `suspect` after SUSPECT_AFTER_MISSED intervals (6 s by default);
 *  - takes it out of rotation only when it is suspect AND its last FAST_PROBE_CONFIRMATIONS
 *    fast probes, all started after its last heartbeat, failed (`lossConfirmed`). A late
 *    heartbeat from a busy machine whose port still answers never moves users.
 *  - never confirms while it is "blind" (`isPanelBlind`, `stallGraceUntil`): more than half of
 *    the heartbeating servers silent at once, or its own event loop / clock jumped, is the
 *    panel's own problem (its network, a pause), not the fleet's; the last known statuses stay.
 * A server that never sent a heartbeat (no agent, or an older agent) is never judged here:
 * the slow path (reports, probes with thresholds, mesh vote) keeps deciding for it.
 */

export const HEARTBEAT_INTERVAL_S = 2;
/**
 * How often an agent measures its load (users who moved traffic, rx and tx rates) and sends it
 * in its next heartbeat (core/agent-wire.ts heartbeatLoadSchema). The balancer's view of a
 * burst is this old at most, instead of one report interval (60 s by default): on the
 * scenario families, fresh load is what tells a small link from a large one before users are
 * put on it (docs/balancer-rounds.md, loads every 10 s). Ten seconds, not every heartbeat:
 * the users online are the users who moved traffic in the window, and a 2-s window misses
 * those between two packets; each measurement is one read of the core's counters.
 */
export const LOAD_INTERVAL_S = 10;
/** Silent for more than this many intervals: fast probes start. */
export const LATE_AFTER_MISSED = 1.5;
/** Silent for more than this many intervals: suspect (confirmation can move users). */
export const SUSPECT_AFTER_MISSED = 3;
/** A fast probe is FAST_PROBE_CONNECTS parallel TCP connects with this timeout. */
export const FAST_PROBE_TIMEOUT_MS = 1000;
/**
 * Parallel connects per fast probe; it fails only when all of them fail. A connect to a live
 * host times out mostly because one SYN was lost (the kernel resends it only after 1 s, our
 * timeout); two connects from two source ports rarely both lose theirs, a dead host fails both.
 */
export const FAST_PROBE_CONNECTS = 2;
/** Failed fast probes in a row that confirm a suspect. */
export const FAST_PROBE_CONFIRMATIONS = 3;
/** Pause between two fast probes of one server. */
export const FAST_PROBE_GAP_MS = 250;
/**
 * The fast path judges a silence only during its first minute: a server silent for longer is
 * left to the slow path (no-data after 3 report intervals, probes with thresholds). So a
 * server dead for hours does not count towards "more than half silent", and a panel blind
 * for more than a minute does not fast-probe the whole fleet when it comes back.
 */
export const FAST_PATH_WINDOW_MS = 60_000;
/** How often the panel's failover watcher looks (and measures its own stalls). */
export const WATCH_TICK_MS = 500;

export type HeartbeatPhase = "never" | "alive" | "late" | "suspect" | "stale";

function intervalMs(intervalS: number): number {
  return (Number.isFinite(intervalS) && intervalS > 0 ? intervalS : HEARTBEAT_INTERVAL_S) * 1000;
}

/** Silence since the last heartbeat (≥ 0: a timestamp in the future counts as just now). */
export function heartbeatSilenceMs(lastAtMs: number | null, nowMs: number): number | null {
  if (lastAtMs === null || !Number.isFinite(lastAtMs)) return null;
  if (!Number.isFinite(nowMs)) return 0;
  return Math.max(0, nowMs - lastAtMs);
}

/**
 * never: no heartbeat ever (the rule does not apply); alive; late (> 1.5 intervals: probe);
 * suspect (> 3 intervals); stale (> FAST_PATH_WINDOW_MS: the slow path's business).
 * Boundaries are inclusive for the better phase.
 */
export function heartbeatPhase(lastAtMs: number | null, nowMs: number, intervalS = HEARTBEAT_INTERVAL_S): HeartbeatPhase {
  const silence = heartbeatSilenceMs(lastAtMs, nowMs);
  if (silence === null) return "never";
  const iv = intervalMs(intervalS);
  if (silence > FAST_PATH_WINDOW_MS) return "stale";
  if (silence > SUSPECT_AFTER_MISSED * iv) return "suspect";
  if (silence > LATE_AFTER_MISSED * iv) return "late";
  return "alive";
}

export interface FastProbeRecord {
  /** When the probe started (panel clock). */
  startedAtMs: number;
  ok: boolean;
}

/**
 * The panel is blind when more than half of the servers that send heartbeats are silent
 * (late or worse) at the same time: a fleet does not die in one breath, a panel's network
 * does. `silent` ≤ `heartbeating` is clamped; no heartbeating server = not blind.
 */
export function isPanelBlind(heartbeating: number, silent: number): boolean {
  const total = Math.max(0, Math.floor(heartbeating));
  if (total === 0) return false;
  const s = Math.min(total, Math.max(0, Math.floor(silent)));
  return s * 2 > total;
}

/**
 * After a stall of the panel itself (its event loop did not tick for much longer than
 * `tickMs`, e.g. the process was paused, or its clock went backwards), heartbeats that were
 * queued meanwhile have not been read yet: every silence is the panel's fault until one full
 * suspect window has passed. Returns the new "blind until" time (ms), or `blindUntilMs`.
 */
export function stallGraceUntil(prevTickMs: number | null, nowMs: number, tickMs: number, blindUntilMs: number, intervalS = HEARTBEAT_INTERVAL_S): number {
  if (prevTickMs === null || !Number.isFinite(prevTickMs) || !Number.isFinite(nowMs)) return blindUntilMs;
  const gap = nowMs - prevTickMs;
  const stalled = gap < 0 || gap > 2 * tickMs + intervalMs(intervalS);
  if (!stalled) return blindUntilMs;
  return Math.max(Number.isFinite(blindUntilMs) ? blindUntilMs : 0, nowMs + SUSPECT_AFTER_MISSED * intervalMs(intervalS));
}

/**
 * The watcher starting (the app restarting, or this instance taking the prober over) is a
 * stall too: the stored heartbeat times are old because nobody listened, not because servers
 * died. Blind for one suspect window from `nowMs`.
 */
export function startGraceUntil(nowMs: number, intervalS = HEARTBEAT_INTERVAL_S): number {
  return (Number.isFinite(nowMs) ? nowMs : 0) + SUSPECT_AFTER_MISSED * intervalMs(intervalS);
}

/**
 * Whether a suspect server's loss is confirmed: not blind, suspect now, and its last
 * FAST_PROBE_CONFIRMATIONS fast probes started after its last heartbeat and after
 * `notBeforeMs` (the end of the panel's last blind window: a probe sent while the panel's own
 * network was already failing, before the blindness showed, is no evidence) and all failed.
 * A probe started at the very millisecond of the last heartbeat or of `notBeforeMs` does not
 * count (the heartbeat wins ties: no healthy server is marked down on equal timestamps).
 */
export function lossConfirmed(
  lastHeartbeatAtMs: number | null,
  probes: readonly FastProbeRecord[],
  nowMs: number,
  blind: boolean,
  intervalS = HEARTBEAT_INTERVAL_S,
  notBeforeMs = Number.NEGATIVE_INFINITY,
): boolean {
  if (blind) return false;
  if (heartbeatPhase(lastHeartbeatAtMs, nowMs, intervalS) !== "suspect") return false;
  const since = Math.max(lastHeartbeatAtMs!, Number.isNaN(notBeforeMs) ? Number.NEGATIVE_INFINITY : notBeforeMs);
  const after = probes.filter((p) => Number.isFinite(p.startedAtMs) && p.startedAtMs > since);
  if (after.length < FAST_PROBE_CONFIRMATIONS) return false;
  const lastN = [...after].sort((a, b) => a.startedAtMs - b.startedAtMs).slice(-FAST_PROBE_CONFIRMATIONS);
  return lastN.every((p) => !p.ok);
}

/**
 * The status machine's view (core/status.ts): a confirmed loss holds while no heartbeat came
 * after it. Equal timestamps: the heartbeat wins.
 */
export function heartbeatLostNow(lastHeartbeatAtMs: number | null | undefined, lostAtMs: number | null | undefined): boolean {
  if (lastHeartbeatAtMs == null || lostAtMs == null) return false;
  if (!Number.isFinite(lastHeartbeatAtMs) || !Number.isFinite(lostAtMs)) return false;
  return lostAtMs > lastHeartbeatAtMs;
}

/**
 * A server's loads (heartbeats) stay current this long after the last one arrived; while they
 * do, they are its balancing figures and a report's are not (balancerLoad). Three load
 * intervals: one lost heartbeat does not hand the balancer a report's figures.
 */
export const LOAD_CURRENT_MS = 3 * LOAD_INTERVAL_S * 1000;

/** One load figure: users who moved traffic in its window, its traffic (bits/s), when it arrived. */
export interface LoadFigure {
  atMs: number;
  users: number;
  trafficBps: number;
}

/**
 * Whether loads are still arriving as of `atMs` (e.g. a report's time): the last one came at
 * most LOAD_CURRENT_MS before it. A load from the future (clocks of two panel instances) is
 * current.
 */
export function loadsCurrent(loadAtMs: number | null, atMs: number): boolean {
  if (loadAtMs === null || !Number.isFinite(loadAtMs)) return false;
  return !(atMs - loadAtMs > LOAD_CURRENT_MS);
}

/**
 * The figure the balancer reads for a server: its last load while loads are current at its
 * last report's time, else the report. The two are not mixed: a report counts the users who
 * moved traffic over its whole interval (60 s by default), a load over LOAD_INTERVAL_S, so the
 * report's traffic per user is lower for the same link and would read as users held back. An
 * agent without load heartbeats, or whose heartbeats stopped for LOAD_CURRENT_MS before a
 * report, is balanced on its reports as before.
 */
export function balancerLoad(report: LoadFigure, load: LoadFigure | null): LoadFigure {
  if (load === null || !loadsCurrent(load.atMs, report.atMs)) return report;
  return load;
}

/** A server's stored metrics row, as far as its balancing figure goes (server_metrics). */
export interface StoredFigures {
  reportedAt: Date;
  usersOnline: number;
  rxBps: number;
  txBps: number;
  loadAt: Date | null;
  loadUsers: number | null;
  loadBps: number | null;
}

/** The row's balancing figure (balancerLoad): its load while loads are current, else its report; traffic is the larger of rx and tx. */
export function storedFigure(m: StoredFigures): LoadFigure {
  const report = { atMs: m.reportedAt.getTime(), users: m.usersOnline, trafficBps: Math.max(m.rxBps, m.txBps) };
  const load = m.loadAt !== null ? { atMs: m.loadAt.getTime(), users: m.loadUsers ?? 0, trafficBps: m.loadBps ?? 0 } : null;
  return balancerLoad(report, load);
}
