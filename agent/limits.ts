/**
 * Traffic limits enforced by the agent itself (issue 25 point 8): a subscriber with a 1 MB
 * limit downloaded 19.1 MB before the next report cut her off. The panel answers each report
 * with the remaining bytes of the limited users in it, as of that report (core/agent-wire.ts
 * AgentReportAck.limits); the agent reads its counters every few seconds, adds what each
 * limited user moved since that report, and removes a user from the core the moment the sum
 * passes what was left — also while the panel is away. The panel stays the authority: every
 * byte still goes to it once in the reports, it drops the user from every config as before,
 * and a user it hands out again (limit raised or reset) is served again.
 *
 * Pure bookkeeping, no I/O; the state is bounded by the config's users (keepOnly).
 */
import type { UserRemaining } from "../core/agent-wire";
import type { TrafficByEmail } from "./stats";

export interface SavedLimits {
  limited: Array<[email: string, remainingBytes: number]>;
  over: string[];
}

interface Limited {
  /** Bytes left as of the last acknowledged report that named the user. */
  remaining: number;
  /** Bytes read since that report. */
  spent: number;
}

export class UserLimits {
  private readonly limited = new Map<string, Limited>();
  /** Users the panel named without a limit (a report of theirs was answered without one). */
  private readonly unlimited = new Set<string>();
  /** Users taken out of the core for passing their limit. */
  private readonly over = new Set<string>();
  /** Users with traffic the panel has not yet said anything about: the next report asks. */
  private readonly unknownActive = new Set<string>();
  /** The panel sends limits (it answered a report with the field): enforcement is on. */
  private panelSendsLimits = false;

  /**
   * What survives an agent restart: the remaining bytes as of the last acknowledged report and
   * who is out. What was spent since is not kept: it is exactly the traffic the delivery file
   * has not had acknowledged yet, which `restore` takes back.
   */
  saved(): SavedLimits {
    return { limited: [...this.limited].map(([email, l]) => [email, l.remaining]), over: [...this.over] };
  }

  /** Back from `saved()` after a restart; `unacknowledged(email)` is what the delivery file still holds for the user. */
  restore(saved: SavedLimits, unacknowledged: (email: string) => number): void {
    this.panelSendsLimits = true;
    for (const [email, remaining] of saved.limited) this.limited.set(email, { remaining, spent: unacknowledged(email) });
    for (const email of saved.over) this.over.add(email);
  }

  /** True once the panel has sent limits: counters are then read between reports. */
  get enabled(): boolean {
    return this.panelSendsLimits;
  }

  /** True when a user with traffic is unknown to these tables: a report now would tell. */
  get wantsReport(): boolean {
    return this.unknownActive.size > 0;
  }

  /** Users currently kept out of the core. */
  get removed(): ReadonlySet<string> {
    return this.over;
  }

  /** Up to `max` limited users still served, closest to their limit first: whom a targeted reading covers. */
  watched(max: number): string[] {
    const list: Array<[string, number]> = [];
    for (const [email, l] of this.limited) if (!this.over.has(email)) list.push([email, l.remaining - l.spent]);
    list.sort((a, b) => a[1] - b[1]);
    return list.slice(0, max).map(([email]) => email);
  }

  /** What is known of a user (tests, logs). */
  of(email: string): { remaining: number; spent: number } | "unlimited" | null {
    const l = this.limited.get(email);
    if (l) return { ...l };
    return this.unlimited.has(email) ? "unlimited" : null;
  }

  /**
   * Counters just read: adds each limited user's bytes. Returns the users who crossed their
   * limit with this reading (not yet removed).
   */
  onRead(traffic: TrafficByEmail): string[] {
    const crossed: string[] = [];
    for (const [email, t] of traffic) {
      const bytes = t.up + t.down;
      if (bytes <= 0) continue;
      const l = this.limited.get(email);
      if (l) {
        l.spent += bytes;
        if (l.spent >= l.remaining && !this.over.has(email)) {
          this.over.add(email);
          crossed.push(email);
        }
      } else if (!this.unlimited.has(email)) {
        this.unknownActive.add(email);
      }
    }
    return crossed;
  }

  /**
   * The panel acknowledged a report carrying `reported` users' traffic and answered with the
   * limited ones' remaining bytes as of that report. `sinceReport(email)` is what the agent
   * read for the user after that report was cut (still to be delivered). Returns users to put
   * back (now under their limit, or without one) and users to take out.
   */
  onAck(reported: readonly string[], limits: readonly UserRemaining[], sinceReport: (email: string) => number): { restore: string[]; remove: string[] } {
    this.panelSendsLimits = true;
    const restore: string[] = [];
    const remove: string[] = [];
    const named = new Set<string>();
    for (const { email, remainingBytes } of limits) {
      named.add(email);
      this.unlimited.delete(email);
      this.unknownActive.delete(email);
      const spent = sinceReport(email);
      this.limited.set(email, { remaining: remainingBytes, spent });
      const isOver = spent >= remainingBytes;
      if (isOver && !this.over.has(email)) {
        this.over.add(email);
        remove.push(email);
      } else if (!isOver && this.over.delete(email)) {
        restore.push(email);
      }
    }
    for (const email of reported) {
      if (named.has(email)) continue;
      this.unknownActive.delete(email);
      this.limited.delete(email);
      this.unlimited.add(email);
      if (this.over.delete(email)) restore.push(email);
    }
    return { restore, remove };
  }

  /**
   * A new config from the panel: users no longer in it are forgotten (bounding the state). A
   * user the agent took out whom the panel no longer lists has been dropped by the panel too:
   * from then on the panel decides, so when it lists the user again (limit raised or reset)
   * the user is served and the next report asks for the new remaining bytes.
   */
  keepOnly(listed: (email: string) => boolean): void {
    for (const e of this.limited.keys()) if (!listed(e)) this.limited.delete(e);
    for (const e of this.unlimited) if (!listed(e)) this.unlimited.delete(e);
    for (const e of this.over) if (!listed(e)) this.over.delete(e);
    for (const e of this.unknownActive) if (!listed(e)) this.unknownActive.delete(e);
  }

  /** True when nothing is known of anyone (nothing to forget). */
  get empty(): boolean {
    return this.limited.size === 0 && this.unlimited.size === 0 && this.unknownActive.size === 0;
  }
}

/**
 * Whether an email is among `users`: a binary search when they are sorted by email (as the
 * panel sends them), so a million users need no set built at every config change.
 */
export function listedIn(users: ReadonlyArray<{ email: string }>): (email: string) => boolean {
  for (let k = 1; k < users.length; k++) {
    if (!(users[k - 1]!.email < users[k]!.email)) {
      const set = new Set(users.map((u) => u.email));
      return (e) => set.has(e);
    }
  }
  return (e) => {
    let lo = 0;
    let hi = users.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const m = users[mid]!.email;
      if (m === e) return true;
      if (m < e) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  };
}
