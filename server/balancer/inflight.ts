/**
 * In-flight accounting (DESIGN §2 rule 1). Servers report every few minutes; between two
 * reports the balancer adds the users it has itself just assigned (and their expected
 * traffic) to that server's U and T, and subtracts the ones it moved away. An entry taken
 * before the server's latest report is dropped: the report already includes it.
 *
 * The ledger is a plain in-memory object; every method takes the clock as an argument.
 */
import type { Load } from "./types";

/**
 * One server's entries, as parallel arrays of plain numbers: a first-fetch burst records
 * hundreds of thousands of them, and numbers in arrays cost the garbage collector nothing
 * per entry, where an object per entry is one more to trace.
 */
interface ServerEntries {
  atMs: number[];
  users: number[];
  trafficBps: number[];
}

/** Expected traffic of one more user on a server: T / max(U, 1), or the default when unknown. */
export function expectedUserBps(reportedTrafficBps: number, reportedUsers: number, defaultBps: number): number {
  if (reportedUsers > 0 && Number.isFinite(reportedTrafficBps) && reportedTrafficBps > 0) {
    return reportedTrafficBps / Math.max(reportedUsers, 1);
  }
  return defaultBps;
}

export class InflightLedger {
  /** Each server recorded or asked for by a decision view has a slot for as long as this ledger lives. */
  private readonly slots = new Map<string, number>();
  private readonly entries: ServerEntries[] = [];
  private readonly loads: Load[] = [];
  /**
   * Per slot, side by side: the entries' running sums, how many there are and the oldest
   * one's time. A first pick reads these for every candidate, and dense arrays stay in cache
   * where an object per server would not. Replaced when they grow: read them through the
   * ledger each time, do not keep them.
   */
  sumUsers = new Float64Array(64);
  sumTrafficBps = new Float64Array(64);
  count = new Int32Array(64);
  minAtMs = new Float64Array(64).fill(Infinity);

  /** The server's slot, made (empty) if it has none. */
  slotOf(serverId: string): number {
    let k = this.slots.get(serverId);
    if (k === undefined) {
      k = this.entries.length;
      this.slots.set(serverId, k);
      this.entries.push({ atMs: [], users: [], trafficBps: [] });
      this.loads.push({ users: 0, trafficBps: 0 });
      if (k >= this.count.length) this.grow();
    }
    return k;
  }

  private grow(): void {
    const n = this.count.length * 2;
    const widen = (a: Float64Array, fill: number) => {
      const b = new Float64Array(n).fill(fill);
      b.set(a);
      return b;
    };
    this.sumUsers = widen(this.sumUsers, 0);
    this.sumTrafficBps = widen(this.sumTrafficBps, 0);
    this.minAtMs = widen(this.minAtMs, Infinity);
    const c = new Int32Array(n);
    c.set(this.count);
    this.count = c;
  }

  /** Record `users` (negative for a departure) with `trafficBps` in total, at atMs. */
  record(serverId: string, atMs: number, users: number, trafficBps: number): void {
    this.recordSlot(this.slotOf(serverId), atMs, users, trafficBps);
  }

  recordSlot(k: number, atMs: number, users: number, trafficBps: number): void {
    const e = this.entries[k] as ServerEntries;
    if (atMs < (this.minAtMs[k] as number)) this.minAtMs[k] = atMs;
    e.atMs.push(atMs);
    e.users.push(users);
    e.trafficBps.push(trafficBps);
    this.count[k] = e.atMs.length;
    this.sumUsers[k] = (this.sumUsers[k] as number) + users;
    this.sumTrafficBps[k] = (this.sumTrafficBps[k] as number) + trafficBps;
  }

  /** Drop entries taken before `reportedAtMs` (the report already includes them). */
  prune(serverId: string, reportedAtMs: number): void {
    const k = this.slots.get(serverId);
    if (k !== undefined) this.pruneSlot(k, reportedAtMs);
  }

  /**
   * Additions to U and T for a server whose latest report was taken at reportedAtMs, or
   * undefined when there are none. The ledger's own object, not a copy: read it at once, and
   * do not change it.
   */
  additions(serverId: string, reportedAtMs: number): Readonly<Load> | undefined {
    const k = this.slots.get(serverId);
    return k === undefined ? undefined : this.additionsOf(k, reportedAtMs);
  }

  additionsOf(k: number, reportedAtMs: number): Readonly<Load> | undefined {
    if (this.count[k] === 0) return undefined;
    this.pruneSlot(k, reportedAtMs);
    if (this.count[k] === 0) return undefined;
    const load = this.loads[k] as Load;
    load.users = this.sumUsers[k] as number;
    load.trafficBps = this.sumTrafficBps[k] as number;
    return load;
  }

  /** Drops the slot's entries taken before reportedAtMs. */
  pruneSlot(k: number, reportedAtMs: number): void {
    if (this.count[k] === 0 || (this.minAtMs[k] as number) >= reportedAtMs) return; // nothing is older than the report
    const l = this.entries[k] as ServerEntries;
    let n = 0;
    let u = 0;
    let t = 0;
    let min = Infinity;
    for (let i = 0; i < l.atMs.length; i++) {
      const at = l.atMs[i] as number;
      if (at < reportedAtMs) continue;
      const du = l.users[i] as number;
      const dt = l.trafficBps[i] as number;
      l.atMs[n] = at;
      l.users[n] = du;
      l.trafficBps[n] = dt;
      n++;
      u += du;
      t += dt;
      if (at < min) min = at;
    }
    l.atMs.length = n;
    l.users.length = n;
    l.trafficBps.length = n;
    this.count[k] = n;
    this.sumUsers[k] = u;
    this.sumTrafficBps[k] = t;
    this.minAtMs[k] = min;
  }

  /** Number of entries held (for tests / metrics). */
  size(): number {
    let n = 0;
    for (let k = 0; k < this.entries.length; k++) n += this.count[k] as number;
    return n;
  }

  clear(): void {
    for (let k = 0; k < this.entries.length; k++) this.pruneSlot(k, Infinity);
  }
}
