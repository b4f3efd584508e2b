/**
 * The mesh vote of DESIGN §3. Pure.
 *
 * Every agent report carries neighbour checks (TCP connects from the observer to each peer).
 * Per (observer, target) we keep the failure streak — consecutive failed checks — and the
 * latest ok/fail. A target is `unreachable` only when
 *   - at least `minVotes` (2) independent observers, AND
 *   - at least half of the usable observers of that target
 * each have a streak ≥ `minStreak` (3) failed checks against it.
 * An observer whose latest report has more than half of its neighbours failing is an
 * unreliable witness (its own network is the likely problem): all its votes are discarded
 * and it is not counted as a usable observer of anything.
 *
 * Persistence: `MeshStreaks[observerId]` (a `ObserverLinks` object) is small JSON and belongs
 * to the observer: store it with the observer's row and update it on each of its reports with
 * `updateObserverLinks`. Observers whose own data is stale (no-data / disabled) should be left
 * out of the vote via `activeObservers`.
 */

export interface MeshLink {
  /** Consecutive failed checks by this observer against this target. */
  failStreak: number;
  /** The latest check's outcome. */
  lastOk: boolean;
}

/** target serverId → link state, for one observer. */
export type ObserverLinks = Record<string, MeshLink>;
/** observer serverId → its links. */
export type MeshStreaks = Record<string, ObserverLinks>;

export interface NeighbourCheckLike {
  serverId: string;
  ok: boolean;
}

export const MESH_MIN_STREAK = 3;
export const MESH_MIN_VOTES = 2;
const STREAK_CAP = 1_000_000;

/**
 * One observer's links after a report. Targets missing from the report are dropped (the
 * observer no longer checks them); a self-check is ignored; for duplicates the last wins.
 */
export function updateObserverLinks(
  prev: ObserverLinks | null | undefined,
  observerId: string,
  checks: readonly NeighbourCheckLike[],
): ObserverLinks {
  const latest = new Map<string, boolean>();
  for (const c of checks) {
    if (c.serverId === observerId) continue;
    latest.set(c.serverId, c.ok);
  }
  const next: ObserverLinks = {};
  for (const [target, ok] of latest) {
    const before = prev && Object.hasOwn(prev, target) ? prev[target] : undefined;
    const link: MeshLink = ok
      ? { failStreak: 0, lastOk: true }
      : { failStreak: Math.min((before?.failStreak ?? 0) + 1, STREAK_CAP), lastOk: false };
    // defineProperty, not assignment: an id like "__proto__" must stay a plain own key
    Object.defineProperty(next, target, { value: link, enumerable: true, writable: true, configurable: true });
  }
  return next;
}

/** Whether an observer's latest report has more than half of its neighbours failing. */
export function isUnreliableWitness(links: ObserverLinks): boolean {
  const all = Object.values(links);
  if (all.length === 0) return false;
  const failing = all.filter((l) => !l.lastOk).length;
  return failing * 2 > all.length;
}

export interface MeshVoteOptions {
  /** Failed checks in a row for a vote (default 3). */
  minStreak?: number;
  /** Independent observers needed (default 2). */
  minVotes?: number;
  /** Only these observers take part (default: every observer in the map). */
  activeObservers?: Iterable<string> | ((observerId: string) => boolean);
}

export interface MeshVerdict {
  targetId: string;
  unreachable: boolean;
  votesAgainst: number;
  usableObservers: number;
  /** Observers of this target whose votes were discarded as unreliable witnesses. */
  discardedObservers: string[];
  /** Usable observers voting "unreachable" (streak ≥ minStreak). */
  voters: string[];
  reason: string;
}

function activePredicate(a: MeshVoteOptions["activeObservers"]): (id: string) => boolean {
  if (a === undefined) return () => true;
  if (typeof a === "function") return a;
  const set = new Set(a);
  return (id) => set.has(id);
}

function verdictFor(
  streaks: MeshStreaks,
  targetId: string,
  unreliable: ReadonlySet<string>,
  isActive: (id: string) => boolean,
  minStreak: number,
  minVotes: number,
): MeshVerdict {
  const discarded: string[] = [];
  const usable: string[] = [];
  const voters: string[] = [];
  for (const observerId of Object.keys(streaks).sort()) {
    if (observerId === targetId || !isActive(observerId)) continue;
    const links = streaks[observerId];
    const link = links && Object.hasOwn(links, targetId) ? links[targetId] : undefined;
    if (!link) continue;
    if (unreliable.has(observerId)) {
      discarded.push(observerId);
      continue;
    }
    usable.push(observerId);
    if (link.failStreak >= minStreak) voters.push(observerId);
  }
  const votes = voters.length;
  const unreachable = votes >= minVotes && votes * 2 >= usable.length;
  let reason: string;
  const discardedNote =
    discarded.length > 0 ? `; ${discarded.length} unreliable observer(s) ignored (${discarded.join(", ")})` : "";
  if (unreachable) {
    reason = `${votes} of ${usable.length} usable observers failed ≥ ${minStreak} checks in a row (${voters.join(", ")})${discardedNote}`;
  } else if (usable.length === 0) {
    reason = `no usable observers${discardedNote}`;
  } else if (votes < minVotes) {
    reason = `${votes} of ${usable.length} usable observers failed ≥ ${minStreak} checks in a row; ${minVotes} needed${discardedNote}`;
  } else {
    reason = `${votes} of ${usable.length} usable observers failed ≥ ${minStreak} checks in a row; at least half needed${discardedNote}`;
  }
  return {
    targetId,
    unreachable,
    votesAgainst: votes,
    usableObservers: usable.length,
    discardedObservers: discarded,
    voters,
    reason,
  };
}

function prepare(streaks: MeshStreaks, opts: MeshVoteOptions) {
  const isActive = activePredicate(opts.activeObservers);
  const unreliable = new Set<string>();
  for (const [observerId, links] of Object.entries(streaks)) {
    if (isActive(observerId) && isUnreliableWitness(links)) unreliable.add(observerId);
  }
  const minStreak = opts.minStreak ?? MESH_MIN_STREAK;
  const minVotes = Math.max(1, opts.minVotes ?? MESH_MIN_VOTES);
  return { isActive, unreliable, minStreak, minVotes };
}

/**
 * Verdicts for every target any observer checks, plus `extraTargets` (e.g. all servers of
 * the cluster, so unobserved servers get an explicit "no usable observers" verdict). A target
 * nobody observes is never unreachable.
 */
export function computeMeshVote(
  streaks: MeshStreaks,
  opts: MeshVoteOptions & { extraTargets?: Iterable<string> } = {},
): Record<string, MeshVerdict> {
  const p = prepare(streaks, opts);
  const targets = new Set<string>(opts.extraTargets ?? []);
  for (const links of Object.values(streaks)) for (const t of Object.keys(links)) targets.add(t);
  const out: Record<string, MeshVerdict> = {};
  for (const t of [...targets].sort()) {
    out[t] = verdictFor(streaks, t, p.unreliable, p.isActive, p.minStreak, p.minVotes);
  }
  return out;
}
