/**
 * In-flight accounting (DESIGN §2 rule 1). Servers report every few minutes; between two
 * reports the balancer adds the users it has itself just assigned (and their expected
 * traffic) to that server's U and T, and subtracts the ones it moved away. An entry taken
 * before the server's latest report is dropped: the report already includes it.
 *
 * The ledger is a plain in-memory object; every method takes the clock as an argument.
 */
import type { Load } from "./types";

interface Entry {
  atMs: number;
  users: number;
  trafficBps: number;
}

interface ServerLedger {
  entries: Entry[];
  users: number;
  trafficBps: number;
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
  private readonly servers = new Map<string, ServerLedger>();

  /** Record `users` (negative for a departure) with `trafficBps` in total, at atMs. */
  record(serverId: string, atMs: number, users: number, trafficBps: number): void {
    let l = this.servers.get(serverId);
    if (!l) {
      l = { entries: [], users: 0, trafficBps: 0, minAtMs: atMs };
      this.servers.set(serverId, l);
    }
    if (atMs < l.minAtMs) l.minAtMs = atMs;
    l.entries.push({ atMs, users, trafficBps });
    l.users += users;
    l.trafficBps += trafficBps;
  }

  /** Drop entries taken before `reportedAtMs` (the report already includes them). */
  prune(serverId: string, reportedAtMs: number): void {
    const l = this.servers.get(serverId);
    if (!l || l.entries.length === 0) return;
    if (l.minAtMs >= reportedAtMs) return; // fast path: nothing is older than the report
    const kept = l.entries.filter((e) => e.atMs >= reportedAtMs);
    if (kept.length === 0) {
      this.servers.delete(serverId);
      return;
    }
    l.entries = kept;
    let u = 0;
    let t = 0;
    let min = Infinity;
    for (const e of kept) {
      u += e.users;
      t += e.trafficBps;
      if (e.atMs < min) min = e.atMs;
    }
    l.users = u;
    l.trafficBps = t;
    l.minAtMs = min;
  }

  /** Additions to U and T for a server whose latest report was taken at reportedAtMs. */
  additions(serverId: string, reportedAtMs: number): Load | undefined {
    this.prune(serverId, reportedAtMs);
    const l = this.servers.get(serverId);
    return l ? { users: l.users, trafficBps: l.trafficBps } : undefined;
  }

  /** Number of entries held (for tests / metrics). */
  size(): number {
    let n = 0;
    for (const l of this.servers.values()) n += l.entries.length;
    return n;
  }

  clear(): void {
    this.servers.clear();
  }
}
