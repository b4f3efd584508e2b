/**
 * The least-traffic move rules (decide.ts, rules 1–4) as one pure verdict over numbers: would a
 * user on `cur` move to `best`? decideRoute asks it for the user's current server (stickiness)
 * and, while the pool is blind, for each candidate of a first pick as if the user were already
 * there (rule 0): a first pick the move rules would undo at the user's next refresh costs a
 * reconnect and gains nothing. first-pick.ts asks it with the same numbers, so both agree.
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
  /**
   * No candidate of the pool has shown its capacity (rule 0's blind pool): every score is a
   * lower bound, and only a measured shortfall moves a user (rule 0b).
   */
  blind: boolean;
  /** The current server's reported users (rule 0b's standard error). */
  curUsers: number;
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
  /**
   * Rule 0b: the pool is blind and the current server's users are not measured held back
   * (their traffic per user is not below the pool's best by heldBackMargin), so the user stays.
   */
  blindKeep: boolean;
  /** Rule 4's reference rate; refIsOffer when it is best's offer ÷ (1 + failBackHysteresis). */
  refBps: number;
  refIsOffer: boolean;
}

export function ltMoveVerdict(x: LtMoveInput): LtMoveVerdict {
  const { cs, bs, margin, minMoveGainBps } = x;
  let pool: number | null | undefined;
  const poolRate = (): number | null => (pool === undefined ? (pool = x.poolRate()) : pool);
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
    const ref = poolRate();
    const offer = bs / (1 + Math.max(0, x.failBackHysteresis));
    const hasRef = offer > 0 || ref !== null;
    refIsOffer = offer > 0 && (ref === null || offer > ref);
    refBps = refIsOffer ? offer : (ref ?? 0);
    satisfied = hasRef && x.curRate !== null && x.curRate * (1 + x.hysteresis) >= refBps;
  }
  const want = x.keepSatisfied && (byFree || bySh) && x.headroom > 0 ? Math.max(x.perUser, poolRate() ?? 0, minMoveGainBps) : 0;
  const unsaturated = want > 0 && x.headroom >= want;
  const wouldMove = (byFree || bySh) && !satisfied && !unsaturated;
  let blindKeep = false;
  if (wouldMove && x.blind) {
    const ref = poolRate();
    const heldBack = ref !== null && x.curUsers >= RATE_MIN_USERS && x.curRate !== null && x.curRate * (1 + heldBackMargin(x.curUsers, x.hysteresis)) < ref;
    blindKeep = !heldBack;
  }
  return { move: wouldMove && !blindKeep, byFree, bySh, smallerShare, satisfied, unsaturated, want, blindKeep, refBps, refIsOffer };
}
