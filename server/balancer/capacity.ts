/**
 * Peak learning (DESIGN §2): peak ← max(T_now, peak · 2^(−Δt / halfLife)).
 * Pure functions; the clock is always an argument. A clock going backwards (Δt < 0) is
 * treated as Δt = 0: the peak neither grows nor explodes.
 */

export const DEFAULT_PEAK_HALF_LIFE_MS = 24 * 3600 * 1000;

export interface LearnedPeak {
  peakBps: number;
  /** The latest time the peak was updated at (monotone: never moves backwards). */
  atMs: number;
}

function sane(x: number): number {
  return Number.isFinite(x) && x > 0 ? x : 0;
}

/** The peak `dtMs` later, halved every halfLife. dt ≤ 0 or non-finite → unchanged. */
export function decayPeak(peakBps: number, dtMs: number, halfLifeMs = DEFAULT_PEAK_HALF_LIFE_MS): number {
  const p = sane(peakBps);
  if (!(dtMs > 0) || !Number.isFinite(dtMs) || !(halfLifeMs > 0)) return p;
  return p * Math.pow(2, -dtMs / halfLifeMs);
}

/** Fold one traffic observation into the learned peak. */
export function updatePeak(
  prev: LearnedPeak | null | undefined,
  trafficBps: number,
  atMs: number,
  halfLifeMs = DEFAULT_PEAK_HALF_LIFE_MS,
): LearnedPeak {
  const t = sane(trafficBps);
  if (!prev) return { peakBps: t, atMs };
  const dt = atMs - prev.atMs; // negative when the clock went backwards → no decay
  const decayed = decayPeak(prev.peakBps, dt, halfLifeMs);
  return { peakBps: Math.max(t, decayed), atMs: Math.max(prev.atMs, Number.isFinite(atMs) ? atMs : prev.atMs) };
}

/** Capacity C used by least-traffic: operator override, else max(learned peak, floor). */
export function effectiveCapacity(overrideBps: number | null, learnedPeakBps: number, floorBps: number): number {
  if (overrideBps !== null && Number.isFinite(overrideBps) && overrideBps >= 0) return overrideBps;
  return Math.max(sane(learnedPeakBps), sane(floorBps));
}

/**
 * Whether a server's capacity is known rather than only bounded from below: the operator set
 * it, or a report showed its users held back (ServerMetrics.heldBack), so its learned peak is
 * what the link carries.
 */
export function capacityShown(m: { capacityOverrideBps: number | null; heldBack?: boolean }): boolean {
  const o = m.capacityOverrideBps;
  return m.heldBack === true || (o !== null && Number.isFinite(o) && o >= 0);
}
