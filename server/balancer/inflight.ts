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
export interface ServerLedger {
  atMs: number[];
  users: number[];
  trafficBps: number[];
  /** Their sums, handed out by additions() (always exactly { users, trafficBps }). */
  load: Load;
  minAtMs: number;
}

/** Expected traffic of one more user on a server: T / max(U, 1), or the default when unknown. */
export function expectedUserBps(reportedTrafficBps: number, reportedUsers: number, defaultBps: number): number {
  if (reportedUsers > 0 && Number.isFinite(reportedTrafficBps) && reportedTrafficBps > 0) {
    return reportedTrafficBps / Math.max(reportedUsers, 1);
  }
  return defaultBps;
}

export class InflightLedger {
  /**
   * One ledger per server ever recorded, kept (emptied, not deleted) when its entries are
   * pruned: a decision view holds a server's ledger for as long as it lives (ledgerOf).
   */
  private readonly servers = new Map<string, ServerLedger>();

  /** The server's ledger, created empty if it has none: the same object for as long as this ledger lives. */
  ledgerOf(serverId: string): ServerLedger {
    let l = this.servers.get(serverId);
    if (!l) {
      l = { atMs: [], users: [], trafficBps: [], load: { users: 0, trafficBps: 0 }, minAtMs: Infinity };
      this.servers.set(serverId, l);
    }
    return l;
  }

  /** Record `users` (negative for a departure) with `trafficBps` in total, at atMs. */
  record(serverId: string, atMs: number, users: number, trafficBps: number): void {
    const l = this.ledgerOf(serverId);
    if (atMs < l.minAtMs) l.minAtMs = atMs;
    l.atMs.push(atMs);
    l.users.push(users);
    l.trafficBps.push(trafficBps);
    l.load.users += users;
    l.load.trafficBps += trafficBps;
  }

  /** Drop entries taken before `reportedAtMs` (the report already includes them). */
  prune(serverId: string, reportedAtMs: number): void {
    const l = this.servers.get(serverId);
    if (l) pruneLedger(l, reportedAtMs);
  }

  /**
   * Additions to U and T for a server whose latest report was taken at reportedAtMs. The
   * ledger's own running sums, not a copy (one lookup per candidate of every decision): read
   * them at once, and do not change them.
   */
  additions(serverId: string, reportedAtMs: number): Readonly<Load> | undefined {
    const l = this.servers.get(serverId);
    return l ? ledgerAdditions(l, reportedAtMs) : undefined;
  }

  /** Number of entries held (for tests / metrics). */
  size(): number {
    let n = 0;
    for (const l of this.servers.values()) n += l.atMs.length;
    return n;
  }

  clear(): void {
    for (const l of this.servers.values()) pruneLedger(l, Infinity);
  }
}

/** additions() of one server's ledger: undefined when it holds no entry. */
export function ledgerAdditions(l: ServerLedger, reportedAtMs: number): Readonly<Load> | undefined {
  if (l.atMs.length === 0) return undefined;
  if (l.minAtMs < reportedAtMs) pruneLedger(l, reportedAtMs);
  return l.atMs.length === 0 ? undefined : l.load;
}

function pruneLedger(l: ServerLedger, reportedAtMs: number): void {
  if (l.atMs.length === 0 || l.minAtMs >= reportedAtMs) return; // fast path: nothing is older than the report
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
  l.load.users = u;
  l.load.trafficBps = t;
  l.minAtMs = min;
}
