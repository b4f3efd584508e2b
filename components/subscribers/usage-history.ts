/**
 * The Usage tab's figures from subscribers.usageHistory's rows (bytes per UTC day per server):
 * every day of the range (days without traffic at 0, so the chart's bars are evenly spaced),
 * and the range's total per server. Pure, so the sums are unit-tested.
 */

export interface UsageRow {
  day: string;
  serverId: string;
  server: string;
  upBytes: number;
  downBytes: number;
}

export interface UsageDay {
  day: string;
  upBytes: number;
  downBytes: number;
  /** Bytes per server that day, by server name, largest first. */
  servers: Array<{ server: string; bytes: number }>;
}

export interface UsageServer {
  serverId: string;
  server: string;
  upBytes: number;
  downBytes: number;
  days: number;
}

/** yyyy-mm-dd of each UTC day from `from` to `to`, both included. */
export function daysBetween(from: string, to: string): string[] {
  const out: string[] = [];
  const end = Date.parse(`${to}T00:00:00Z`);
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= end && out.length < 400; t += 86_400_000) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

export function usageByDay(from: string, to: string, rows: readonly UsageRow[]): UsageDay[] {
  const days = new Map<string, UsageDay>(daysBetween(from, to).map((d) => [d, { day: d, upBytes: 0, downBytes: 0, servers: [] }]));
  for (const r of rows) {
    const d = days.get(r.day);
    if (!d) continue;
    d.upBytes += r.upBytes;
    d.downBytes += r.downBytes;
    d.servers.push({ server: r.server, bytes: r.upBytes + r.downBytes });
  }
  for (const d of days.values()) d.servers.sort((a, b) => b.bytes - a.bytes || a.server.localeCompare(b.server));
  return [...days.values()];
}

export function usageByServer(rows: readonly UsageRow[]): UsageServer[] {
  const byId = new Map<string, UsageServer>();
  for (const r of rows) {
    const s = byId.get(r.serverId) ?? { serverId: r.serverId, server: r.server, upBytes: 0, downBytes: 0, days: 0 };
    s.upBytes += r.upBytes;
    s.downBytes += r.downBytes;
    s.days += 1;
    byId.set(r.serverId, s);
  }
  return [...byId.values()].sort((a, b) => b.upBytes + b.downBytes - (a.upBytes + a.downBytes) || a.server.localeCompare(b.server));
}
