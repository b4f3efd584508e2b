/**
 * The least-traffic move rules (decide.ts, rules 1–4) as one pure verdict over numbers (would a
 * user on `cur` move to `best`?), and rule 0b's test of a blind pool (measuredHeldBack).
 */

import { heldBackMargin } from "./capacity";

/**
 * A server's reported traffic per user counts as the pool's reference ("what users get where
 * they are not held back") only with at least this many users: one heavy user alone says
 * nothing about what others get.
 */
export const RATE_MIN_USERS = 5;

/** The numbers the rules read; scores and shares are free and fair share per user (bit/s). */
export interface LtMoveInput {
  /** Free bandwidth per user on the current server, the user counted there. */
  cs: number;
  /** Fair share C / U on the current server, the user counted there. */
  curShare: number;
  bs: number;
  bestShare: number;
  /** The margin the gain must clear (the route's hysteresis). */
  margin: number;
  hysteresis: number;
  /** `best` came back less than failBackDwellMs ago (rule 4). */
  failBack: boolean;
  /** Known capacity (override or learned peak) − traffic on the current server; NaN when unknown. */
  headroom: number;
  /** One user's traffic on the current server (expectedUserBps of its report). */
  perUser: number;
  /** The current server's reported traffic per user, null when it reported no users. */
  curRate: number | null;
  /** The pool's best reported traffic per user (referencePerUser), read only when a rule needs it. */
  poolRate: () => number | null;
  minMoveGainBps: number;
  failBackHysteresis: number;
  keepSatisfied: boolean;
}

export interface LtMoveVerdict {
  move: boolean;
  /** Rule 1: more free bandwidth per user by the margin, and a larger-or-equal fair share. */
  byFree: boolean;
  /** Rule 1b: the current server is saturated and best's fair share is larger by the margin. */
  bySh: boolean;
  /** Rule 2: spare capacity on a server with a smaller fair share. */
  smallerShare: boolean;
  /** Rule 4: during the dwell, the current server is not starved beside refBps. */
  satisfied: boolean;
  /** Rule 3: the current server carries at least `want` more. */
  unsaturated: boolean;
  want: number;
  /** Rule 4's reference rate; refIsOffer when it is best's offer ÷ (1 + failBackHysteresis). */
  refBps: number;
  refIsOffer: boolean;
}

/** The verdict of the move rules, written into `out` (decideRoute reuses one: no allocation per decision). */
export function ltMoveVerdict(x: LtMoveInput, out: LtMoveVerdict = newVerdict()): LtMoveVerdict {
  const { cs, bs, margin, minMoveGainBps } = x;
  // The pool's best rate, read at most once and only when a rule needs it.
  let rate: number | null | undefined;
  const spare = cs >= minMoveGainBps && bs > cs * (1 + margin) && bs - cs >= minMoveGainBps;
  const smallerShare = spare && x.bestShare < x.curShare;
  const byFree = spare && !smallerShare;
  const bySh = cs < minMoveGainBps && x.bestShare > x.curShare * (1 + margin);
  let satisfied = false;
  let refBps = 0;
  let refIsOffer = false;
  if (x.failBack && (byFree || bySh)) {
    // Without the offer an emptied server that came back counted for nothing: it has no users
    // to report a rate, so on a fleet that ran full while it was away no server was starved.
    rate = x.poolRate();
    const offer = bs / (1 + Math.max(0, x.failBackHysteresis));
    const hasRef = offer > 0 || rate !== null;
    refIsOffer = offer > 0 && (rate === null || offer > rate);
    refBps = refIsOffer ? offer : (rate ?? 0);
    satisfied = hasRef && x.curRate !== null && x.curRate * (1 + x.hysteresis) >= refBps;
  }
  let want = 0;
  if (x.keepSatisfied && (byFree || bySh) && x.headroom > 0) {
    if (rate === undefined) rate = x.poolRate();
    want = Math.max(x.perUser, rate ?? 0, minMoveGainBps);
  }
  const unsaturated = want > 0 && x.headroom >= want;
  out.move = (byFree || bySh) && !satisfied && !unsaturated;
  out.byFree = byFree;
  out.bySh = bySh;
  out.smallerShare = smallerShare;
  out.satisfied = satisfied;
  out.unsaturated = unsaturated;
  out.want = want;
  out.refBps = refBps;
  out.refIsOffer = refIsOffer;
  return out;
}

export function newVerdict(): LtMoveVerdict {
  return { move: false, byFree: false, bySh: false, smallerShare: false, satisfied: false, unsaturated: false, want: 0, refBps: 0, refIsOffer: false };
}

/**
 * Rule 0b's test: a server's users are measured held back when their reported traffic per user
 * (`rate`, over `users` users, at least RATE_MIN_USERS) is below the pool's best (`poolRate`) by
 * more than heldBackMargin(users, margin). While a pool is blind only such a server's users move.
 */
export function measuredHeldBack(rate: number | null, users: number, poolRate: number | null, margin: number): boolean {
  return poolRate !== null && rate !== null && users >= RATE_MIN_USERS && rate * (1 + heldBackMargin(users, margin)) < poolRate;
}
