/**
 * How large an agent report of a cluster may be (issue 21, point 8): a report carries at most
 * one row per user the server could have served, so its size follows from the cluster's
 * subscriber count: a fixed part (health, neighbours, unserved inbounds, config error) plus
 * REPORT_BYTES_PER_USER per subscriber, with slack for subscribers deleted or added since the
 * agent's config. Never above REPORT_BODY_LIMIT. The HTTP route refuses a larger report from
 * its Content-Length before reading it, and stops reading a chunked one at the bound.
 *
 * Counts are cached per cluster for COUNT_TTL_MS and dropped on a "subscribers" change (raised
 * by the number of subscribers it names, when it names them). One count runs per cluster at a
 * time, and a count past its TTL keeps serving while the next one runs: at a million
 * subscribers a count takes about half a second of the database, and every report arriving
 * meanwhile (17 a second from a thousand servers) ran its own, 32 counts in a minute of
 * `bench:scale`, a third of PostgreSQL's time.
 */
import "server-only";
import { count, eq } from "drizzle-orm";
import type { Db } from "@/db/client";
import { subscribers } from "@/db/schema";
import { onChange } from "@/server/bus";
import { REPORT_BODY_LIMIT } from "./reports";

/** Health figures, 1,000 neighbours, 1,000 unserved inbounds with reasons, a config error. */
export const REPORT_FIXED_BYTES = 1024 * 1024;
/** One compact row: {"email":"<uuid>","up":<16 digits>,"down":<16 digits>}, with room to spare. */
export const REPORT_BYTES_PER_USER = 128;
/** Rows beyond the cluster's subscribers a report may carry (deleted since, in flight). */
export function userSlack(subscriberCount: number): number {
  return Math.max(100, Math.ceil(subscriberCount / 10));
}

export interface ReportLimits {
  subscribers: number;
  /** Most rows in `users`. */
  users: number;
  /** Most body bytes. */
  bodyBytes: number;
}

export function reportLimits(subscriberCount: number): ReportLimits {
  const users = subscriberCount + userSlack(subscriberCount);
  return { subscribers: subscriberCount, users, bodyBytes: Math.min(REPORT_BODY_LIMIT, REPORT_FIXED_BYTES + REPORT_BYTES_PER_USER * users) };
}

const COUNT_TTL_MS = 10_000;
interface CountCache {
  byCluster: Map<string, { n: number; atMs: number }>;
  /** The count running per cluster (its result goes into byCluster unless dropped meanwhile). */
  counting: Map<string, Promise<number>>;
  off?: () => void;
}
const KEY = Symbol.for("routeboard.reportSize");
function cache(): CountCache {
  const g = globalThis as typeof globalThis & { [KEY]?: CountCache };
  if (!g[KEY]) {
    const c: CountCache = { byCluster: new Map(), counting: new Map() };
    c.off = onChange((e) => {
      if (e.kind !== "subscribers" && e.kind !== "topology") return;
      const hit = e.clusterId ? c.byCluster.get(e.clusterId) : undefined;
      // A change that names its subscribers adds at most that many: the count is raised by
      // that much (an overcount only loosens the bound until the TTL counts again) rather than
      // counting a million subscribers again for the next report after every edit.
      if (hit && e.kind === "subscribers" && e.subscriberIds?.length) hit.n += e.subscriberIds.length;
      else if (e.clusterId) {
        c.byCluster.delete(e.clusterId);
        c.counting.delete(e.clusterId);
      } else {
        c.byCluster.clear();
        c.counting.clear();
      }
    });
    g[KEY] = c;
  }
  return g[KEY];
}

/** The limits of a report from a server of `clusterId` (one count query per cluster per TTL). */
export async function reportLimitsFor(db: Db, clusterId: string, nowMs = Date.now()): Promise<ReportLimits> {
  const c = cache();
  const hit = c.byCluster.get(clusterId);
  if (hit && nowMs - hit.atMs < COUNT_TTL_MS) return reportLimits(hit.n);
  let counting = c.counting.get(clusterId);
  if (!counting) {
    const started = (async () => {
      const [row] = await db.select({ n: count() }).from(subscribers).where(eq(subscribers.clusterId, clusterId));
      return Number(row?.n ?? 0);
    })();
    counting = started;
    c.counting.set(clusterId, started);
    void started.then(
      (n) => {
        // Dropped by a change while it ran: its figure may predate the change, so it is not kept.
        if (c.counting.get(clusterId) !== started) return;
        c.counting.delete(clusterId);
        if (c.byCluster.size > 10_000) c.byCluster.clear();
        c.byCluster.set(clusterId, { n, atMs: nowMs });
      },
      () => {
        if (c.counting.get(clusterId) === started) c.counting.delete(clusterId);
      },
    );
  }
  // Past its TTL but not dropped: the count before serves while the next one runs.
  if (hit) return reportLimits(hit.n);
  return reportLimits(await counting);
}
