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

/**
 * What a link carried when a report last showed it full (ServerMetrics.heldBackBps), or 0. A
 * learned peak decays with the demand that set it; a link seen full does not shrink with the
 * quiet hours after, so the peak the balancer uses is never below this. Without it, a link seen
 * full on Monday counted on Friday as a known link of a sixteenth of its size (24 h half-life).
 */
export function seenFullBps(m: { heldBack?: boolean; heldBackBps?: number }): number {
  const b = m.heldBackBps;
  return m.heldBack === true && b !== undefined && Number.isFinite(b) && b > 0 ? b : 0;
}

/** The peak the balancer uses: the learned one decayed by dtMs, never below `seenFull` (seenFullBps). */
export function peakNow(peakBps: number, dtMs: number, halfLifeMs: number, seenFull: number): number {
  return Math.max(decayPeak(peakBps, dtMs, halfLifeMs), seenFull);
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

/**
 * Users a report needs before its traffic per user says whether users are held back. The mean
 * of n users' rates has a relative standard error of CV / √n; per-user traffic is heavy-tailed
 * (CV about 1), so with 64 users a 25 % shortfall (the default margin) is two standard errors,
 * not the luck of a few heavy users. With 5 users a few heavy users marked servers held back
 * within minutes of the start (rolling-outages 45 and 55, steady-mixed 47).
 */
export const HELD_BACK_MIN_USERS = 64;

/**
 * The standard errors of a server's traffic per user its shortfall must exceed to say its users
 * are held back: at HELD_BACK_MIN_USERS users, two of them are the default margin (25 %).
 */
export const HELD_BACK_STANDARD_ERRORS = 2;

/**
 * The shortfall (a fraction of the rate compared with) that traffic per user measured over
 * `users` users must show to count as held back: `margin`, or HELD_BACK_STANDARD_ERRORS
 * standard errors of the mean (CV ≈ 1, so 2 / √users) when that is larger.
 */
export function heldBackMargin(users: number, margin: number): number {
  return users > 0 ? Math.max(margin, HELD_BACK_STANDARD_ERRORS / Math.sqrt(users)) : Number.POSITIVE_INFINITY;
}

/** A report's traffic per user, or null when it has too few users (or bad numbers) to say. */
export function reportedUserRate(users: number, trafficBps: number): number | null {
  if (!(users >= HELD_BACK_MIN_USERS) || !Number.isFinite(users) || !Number.isFinite(trafficBps) || trafficBps < 0) return null;
  return trafficBps / users;
}

/**
 * Held back (ServerMetrics.heldBack): a report's users get less than the users of another
 * server of the same pool got at its latest report, by more than `margin` (the default
 * hysteresis). Then the link is full, and its learned peak is what it carries.
 *
 * The reference is the pool's latest reports, not the best rate ever seen: traffic per user
 * follows the time of day, and an evening's best would mark every server at night. Reports
 * older than `maxAgeMs` are left out of it (the panel: a server that stopped reporting).
 */
export class LatestUserRates {
  private readonly latest = new Map<string, { rateBps: number; atMs: number }>();
  constructor(
    private readonly margin: number,
    private readonly maxAgeMs = Number.POSITIVE_INFINITY,
  ) {}

  /** Folds in one report; true when it shows the server's users held back. */
  observe(serverId: string, users: number, trafficBps: number, atMs: number): boolean {
    const rate = reportedUserRate(users, trafficBps);
    if (rate === null) {
      this.latest.delete(serverId);
      return false;
    }
    this.latest.set(serverId, { rateBps: rate, atMs });
    let best = 0;
    for (const r of this.latest.values()) if (r.rateBps > best && !(atMs - r.atMs > this.maxAgeMs)) best = r.rateBps;
    return rate * (1 + this.margin) < best;
  }
}
