/**
 * Agent heartbeats (issue 24, core/heartbeat.ts): POST /api/agent/heartbeat,
 * `Authorization: Bearer <agent token>`, every HEARTBEAT_INTERVAL_S, with no body or, every
 * LOAD_INTERVAL_S, the load the agent measured (core/agent-wire.ts heartbeatBodySchema:
 * `{"load":{"usersOnline":…,"rxBps":…,"txBps":…}}`). A body that is not that is a 400 naming
 * the field, one over MAX_HEARTBEAT_BODY_BYTES a 413; neither stores anything, not even the
 * heartbeat's time. A rate above the server's report capacity is stored as the capacity, and
 * raises server.report_implausible as a report's does.
 *
 * A separate endpoint, not the report: a report carries traffic and is group-committed with
 * accounting, so it is neither tiny nor fast; and not the config long-poll, which answers only
 * every ~50 s and whose socket close a dead machine never sends. A heartbeat costs one cached
 * token lookup and a map write here; HeartbeatBatcher stores every server's latest time in
 * one statement per HEARTBEAT_FLUSH_MS, and the loads in one transaction, so the database sees
 * two writes per flush, not one per agent. 204 once queued; 401/503 as every agent route; 429 + Retry-After past
 * HEARTBEAT_BURST (refilled at 2 a second: the agent sends one every 2 s).
 * A heartbeat from a server whose loss the watcher had confirmed recomputes it at once.
 */
import "server-only";
import type { Db } from "@/db/client";
import { getDb } from "@/server/db";
import { publishChange } from "@/server/bus";
import { logger } from "@/server/logger";
import { counter } from "@/server/metrics";
import { readLimited, sendJson, type RouteHandler } from "@/server/http/util";
import { recordHeartbeats } from "@/server/monitoring/heartbeat";
import { storeLoads, type HeartbeatLoadItem } from "@/server/monitoring/reported-health";
import { heartbeatBodySchema, MAX_HEARTBEAT_BODY_BYTES, type HeartbeatLoad } from "@/core/agent-wire";
import { alertLoadsAboveCapacity, parseAgentBody, storableFloat, type LoadAboveCapacity } from "./reports";
import { agentOrRefuse, type AgentServer } from "./agent-auth";
import { TokenBuckets } from "./rate-limit";

export const HEARTBEAT_FLUSH_MS = 200;
export const HEARTBEAT_BURST = 5;
const HEARTBEAT_REFILL_PER_S = 2;

const tooLarge = `a heartbeat body is at most ${MAX_HEARTBEAT_BODY_BYTES} bytes: nothing was stored`;
const beats = counter("routeboard_agent_heartbeats_total", "POST /api/agent/heartbeat answers by outcome");

/** Queues heartbeats (and their loads) in memory and stores them in two writes per flush. */
export class HeartbeatBatcher {
  private pending = new Map<string, number>();
  private loads = new Map<string, HeartbeatLoadItem>();
  private above = new Map<string, LoadAboveCapacity>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly db: () => Promise<Db>,
    private readonly flushMs = HEARTBEAT_FLUSH_MS,
  ) {}

  push(serverId: string, atMs: number, load?: { clusterId: string; load: HeartbeatLoad; above?: LoadAboveCapacity }): void {
    const prev = this.pending.get(serverId);
    if (prev === undefined || atMs > prev) this.pending.set(serverId, atMs);
    const prevLoad = this.loads.get(serverId);
    if (load && (prevLoad === undefined || atMs > prevLoad.atMs)) this.loads.set(serverId, { serverId, clusterId: load.clusterId, atMs, load: load.load });
    // The first claim of a flush is enough: the alert is once per report interval anyway.
    if (load?.above && !this.above.has(serverId)) this.above.set(serverId, load.above);
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
    const loads = [...this.loads.values()];
    const above = [...this.above.values()];
    this.pending = new Map();
    this.loads = new Map();
    this.above = new Map();
    this.flushing = (async () => {
      const log = () => logger().child({ component: "heartbeat" });
      try {
        const changed = await recordHeartbeats(await this.db(), batch);
        for (const c of changed) publishChange("health", c);
      } catch (err) {
        // Lost heartbeats only delay a verdict; the watcher never confirms on silence alone.
        log().warn({ err }, "heartbeats not stored");
      }
      if (loads.length === 0) return;
      try {
        const db = await this.db();
        const changed = await db.transaction((tx) => storeLoads(tx, loads));
        for (const c of changed) publishChange("metrics", c);
      } catch (err) {
        // A lost load only leaves the balancer on the previous one; the next comes LOAD_INTERVAL_S later.
        log().warn({ err }, "heartbeat loads not stored");
      }
      if (above.length === 0) return;
      try {
        const db = await this.db();
        await db.transaction((tx) => alertLoadsAboveCapacity(tx, above));
      } catch (err) {
        // Apart from the loads: they are stored capped whether or not the alert is.
        log().warn({ err }, "alert for a heartbeat load above capacity not stored");
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

/**
 * The heartbeat's load, null without one, or the 400's message naming the field. A rate above
 * the server's report capacity (the link speed its operator gave) is stored as the capacity, as
 * a report's is (reports.ts checkReports): one agent token cannot claim a link it does not have
 * and draw new users to it, and an honest agent on a link faster than its setting keeps its load.
 */
function parseHeartbeatBody(
  text: string,
  agent: AgentServer,
  nowMs: number,
): { load: HeartbeatLoad | null; above?: LoadAboveCapacity } | { error: string } {
  if (text.trim() === "") return { load: null };
  const parsed = parseAgentBody(heartbeatBodySchema, text);
  if ("error" in parsed) return parsed;
  const load = parsed.value.load;
  if (!load) return { load: null };
  const capBps = agent.reportCapacityMbps * 1e6;
  const capped = { usersOnline: load.usersOnline, rxBps: storableFloat(Math.min(load.rxBps, capBps)), txBps: storableFloat(Math.min(load.txBps, capBps)) };
  const field = load.rxBps > capBps ? "rxBps" : load.txBps > capBps ? "txBps" : null;
  if (!field) return { load: capped };
  return {
    load: capped,
    above: { serverId: agent.serverId, capacityMbps: agent.reportCapacityMbps, intervalS: agent.reportIntervalS, field: `load.${field}`, bps: load[field], nowMs },
  };
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
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > MAX_HEARTBEAT_BODY_BYTES) {
    beats.inc({ outcome: "too_large" });
    sendJson(res, 413, { error: tooLarge }, { connection: "close" });
    req.resume();
    return;
  }
  const agent = await agentOrRefuse(req, res, (outcome) => beats.inc({ outcome }));
  if (!agent) return;
  const text = await readLimited(req, MAX_HEARTBEAT_BODY_BYTES);
  if (text === null) {
    beats.inc({ outcome: "too_large" });
    sendJson(res, 413, { error: tooLarge }, { connection: "close" });
    return;
  }
  const nowMs = Date.now();
  const body = parseHeartbeatBody(text, agent, nowMs);
  if ("error" in body) {
    beats.inc({ outcome: "bad_request" });
    sendJson(res, 400, { error: `${body.error}: nothing was stored` });
    return;
  }
  const { batcher, limits } = state();
  const retryAfter = limits.take(agent.serverId, HEARTBEAT_BURST, HEARTBEAT_REFILL_PER_S);
  if (retryAfter > 0) {
    beats.inc({ outcome: "rate_limited" });
    sendJson(res, 429, { error: `too many heartbeats from this agent: retry after ${retryAfter} s` }, { "retry-after": String(retryAfter) });
    return;
  }
  batcher.push(agent.serverId, nowMs, body.load ? { clusterId: agent.clusterId, load: body.load, above: body.above } : undefined);
  beats.inc({ outcome: "ok" });
  res.writeHead(204, { "cache-control": "no-store" });
  res.end();
};
