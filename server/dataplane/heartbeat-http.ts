/**
 * Agent heartbeats (issue 24, core/heartbeat.ts): POST /api/agent/heartbeat, no body,
 * `Authorization: Bearer <agent token>`, every HEARTBEAT_INTERVAL_S.
 *
 * A separate endpoint, not the report: a report carries traffic and is group-committed with
 * accounting, so it is neither tiny nor fast; and not the config long-poll, which answers only
 * every ~50 s and whose socket close a dead machine never sends. A heartbeat costs one cached
 * token lookup and a map write here; HeartbeatBatcher stores every server's latest time in
 * one statement per HEARTBEAT_FLUSH_MS, so the database sees one write per flush, not one per
 * agent. 204 once queued; 401/503 as every agent route; 429 + Retry-After past
 * HEARTBEAT_BURST (refilled at 2 a second: the agent sends one every 2 s).
 * A heartbeat from a server whose loss the watcher had confirmed recomputes it at once.
 */
import "server-only";
import type { Db } from "@/db/client";
import { getDb } from "@/server/db";
import { publishChange } from "@/server/bus";
import { logger } from "@/server/logger";
import { counter } from "@/server/metrics";
import { sendJson, type RouteHandler } from "@/server/http/util";
import { recordHeartbeats } from "@/server/monitoring/heartbeat";
import { agentOrRefuse } from "./agent-auth";
import { TokenBuckets } from "./rate-limit";

export const HEARTBEAT_FLUSH_MS = 200;
export const HEARTBEAT_BURST = 5;
const HEARTBEAT_REFILL_PER_S = 2;

const beats = counter("routeboard_agent_heartbeats_total", "POST /api/agent/heartbeat answers by outcome");

/** Queues heartbeats in memory and stores them in one statement per flush. */
export class HeartbeatBatcher {
  private pending = new Map<string, number>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly db: () => Promise<Db>,
    private readonly flushMs = HEARTBEAT_FLUSH_MS,
  ) {}

  push(serverId: string, atMs: number): void {
    const prev = this.pending.get(serverId);
    if (prev === undefined || atMs > prev) this.pending.set(serverId, atMs);
    if (!this.timer && !this.flushing) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref?.();
    }
  }

  /** Stores what is queued now (tests and shutdown call it directly). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.flushing) await this.flushing;
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = (async () => {
      try {
        const changed = await recordHeartbeats(await this.db(), batch);
        for (const c of changed) publishChange("health", c);
      } catch (err) {
        // Lost heartbeats only delay a verdict; the watcher never confirms on silence alone.
        logger().child({ component: "heartbeat" }).warn({ err }, "heartbeats not stored");
      }
    })();
    await this.flushing;
    this.flushing = null;
    if (this.pending.size > 0 && !this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref?.();
    }
  }
}

const KEY = Symbol.for("routeboard.heartbeats");
type G = typeof globalThis & { [KEY]?: { batcher: HeartbeatBatcher; limits: TokenBuckets } };
function state() {
  const g = globalThis as G;
  g[KEY] ??= { batcher: new HeartbeatBatcher(getDb), limits: new TokenBuckets() };
  return g[KEY];
}
export function heartbeatBatcher(): HeartbeatBatcher {
  return state().batcher;
}

export const agentHeartbeatHandler: RouteHandler = async (req, res) => {
  if (req.method !== "POST") {
    sendJson(res, 405, { error: "use POST" }, { allow: "POST" });
    return;
  }
  const agent = await agentOrRefuse(req, res, (outcome) => beats.inc({ outcome }));
  if (!agent) return;
  req.resume(); // a heartbeat has no body; whatever was sent is ignored
  const { batcher, limits } = state();
  const retryAfter = limits.take(agent.serverId, HEARTBEAT_BURST, HEARTBEAT_REFILL_PER_S);
  if (retryAfter > 0) {
    beats.inc({ outcome: "rate_limited" });
    sendJson(res, 429, { error: `too many heartbeats from this agent: retry after ${retryAfter} s` }, { "retry-after": String(retryAfter) });
    return;
  }
  batcher.push(agent.serverId, Date.now());
  beats.inc({ outcome: "ok" });
  res.writeHead(204, { "cache-control": "no-store" });
  res.end();
};
