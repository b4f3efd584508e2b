/**
 * The active probe's streak machine (Apigee MaxFailures / Azure unhealthy threshold). Pure.
 *
 * - `probeHealthy === null`: no verdict yet — the probe has never succeeded and has not yet
 *   failed `unhealthyThreshold` times in a row. For a server that once succeeded the status
 *   machine does not count null as "probe failing"; for one that never did, any failure
 *   counts (core/status.ts).
 * - The first success ever turns null into `true` at once, whatever healthyThreshold is:
 *   it is the server's first successful check and takes it out of `pending`.
 *   healthyThreshold governs recovery from `false` only.
 * - `unhealthyThreshold` failures in a row make it `false` (also from null: a server that
 *   has never passed its probe but reports fine via its agent is "probe failing", not healthy).
 * - From `false`, `healthyThreshold` successes in a row make it `true` again.
 * Thresholds are read on every call, so changing them takes effect on the next result.
 */

export interface ProbeResultLike {
  ok: boolean;
  code?: number;
  latencyMs?: number;
  reason?: string;
  /** When the probe ran (ms since epoch), if the caller tracks it. */
  atMs?: number;
}

export interface ProbeStreakState {
  consecutiveFailures: number;
  consecutiveSuccesses: number;
  /** null = no verdict yet (never succeeded, fewer than unhealthyThreshold failures). */
  probeHealthy: boolean | null;
  everSucceeded: boolean;
  lastResult: ProbeResultLike | null;
}

export interface ProbeThresholds {
  unhealthyThreshold: number;
  healthyThreshold: number;
}

export const INITIAL_PROBE_STREAK: Readonly<ProbeStreakState> = Object.freeze({
  consecutiveFailures: 0,
  consecutiveSuccesses: 0,
  probeHealthy: null,
  everSucceeded: false,
  lastResult: null,
});

export function initialProbeStreak(): ProbeStreakState {
  return { ...INITIAL_PROBE_STREAK };
}

function threshold(n: number): number {
  return Number.isFinite(n) && n >= 1 ? Math.floor(n) : 1;
}

/** Caps the counters so a server probed for years cannot overflow anything. */
const COUNTER_CAP = 1_000_000;

export function applyProbeResult(
  state: ProbeStreakState | null | undefined,
  result: ProbeResultLike,
  thresholds: ProbeThresholds,
): ProbeStreakState {
  const prev = state ?? INITIAL_PROBE_STREAK;
  const unhealthyAt = threshold(thresholds.unhealthyThreshold);
  const healthyAt = threshold(thresholds.healthyThreshold);
  if (result.ok) {
    const successes = Math.min(prev.consecutiveSuccesses + 1, COUNTER_CAP);
    let healthy: boolean | null = prev.probeHealthy;
    if (healthy === null) healthy = true;
    else if (healthy === false && successes >= healthyAt) healthy = true;
    return {
      consecutiveFailures: 0,
      consecutiveSuccesses: successes,
      probeHealthy: healthy,
      everSucceeded: true,
      lastResult: result,
    };
  }
  const failures = Math.min(prev.consecutiveFailures + 1, COUNTER_CAP);
  return {
    consecutiveFailures: failures,
    consecutiveSuccesses: 0,
    probeHealthy: failures >= unhealthyAt ? false : prev.probeHealthy,
    everSucceeded: prev.everSucceeded,
    lastResult: result,
  };
}
