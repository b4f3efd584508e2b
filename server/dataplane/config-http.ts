/**
 * GET /api/agent/config — the server's core config for its agent (DESIGN §4, §6).
 *   Authorization: Bearer <agent token>    (401 {error} when missing or unknown)
 *   If-None-Match: "<version>"             (304 when unchanged)
 *   ?wait=<0–60>                           (long-poll: answer as soon as the version changes,
 *                                           else 304 after that many seconds; 400 otherwise)
 * 200: the config (core/agent-wire.ts agentConfigSchema) with ETag: "<version>".
 * 429 + Retry-After when one token polls abusively; 503 + Retry-After when too many wait.
 */
import type { ServerResponse } from "node:http";
import { getDb } from "@/server/db";
import { MAX_CONFIG_WAIT_S } from "@/core/agent-wire";
import { sendJson, type RouteHandler } from "@/server/http/util";
import { counter } from "@/server/metrics";
import { isDatabaseDown } from "@/server/db-errors";
import { agentOrRefuse } from "./agent-auth";
import { configBody, type BuiltConfig, type ClusterConfigs } from "./config";
import { configHub } from "./config-hub";
import { agentLimits, CONFIG_BURST, CONFIG_REFILL_PER_S } from "./rate-limit";

const answers = counter("routeboard_agent_config_requests_total", "GET /api/agent/config answers by outcome");

/** The version an If-None-Match header names, if any ("v", W/"v", or a list of them). */
export function matchesVersion(ifNoneMatch: string | undefined, version: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(",").some((t) => {
    const v = t.trim().replace(/^W\//, "");
    return v === `"${version}"` || v === version || v === "*";
  });
}

/** ?wait: absent = 0; an integer 0–60 otherwise. */
export function parseWait(raw: string | null): number | { error: string } {
  if (raw === null || raw === "") return 0;
  if (!/^\d{1,3}$/.test(raw) || Number(raw) > MAX_CONFIG_WAIT_S) return { error: `wait: expected a whole number of seconds from 0 to ${MAX_CONFIG_WAIT_S}` };
  return Number(raw);
}

function sendConfig(res: ServerResponse, cluster: ClusterConfigs, built: BuiltConfig): void {
  answers.inc({ outcome: "config" });
  res.writeHead(200, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", etag: `"${built.version}"` });
  res.end(configBody(cluster, built));
}

function sendNotModified(res: ServerResponse, version: string): void {
  answers.inc({ outcome: "not_modified" });
  res.writeHead(304, { etag: `"${version}"`, "cache-control": "no-store" });
  res.end();
}

export const agentConfigHandler: RouteHandler = async (req, res, url) => {
  if (req.method !== "GET" && req.method !== "HEAD") {
    sendJson(res, 405, { error: "use GET" }, { allow: "GET" });
    return;
  }
  const agent = await agentOrRefuse(req, res, (outcome) => answers.inc({ outcome }));
  if (!agent) return;
  const retryAfter = agentLimits().config.take(agent.serverId, CONFIG_BURST, CONFIG_REFILL_PER_S);
  if (retryAfter > 0) {
    answers.inc({ outcome: "rate_limited" });
    sendJson(res, 429, { error: `too many config requests from this agent: retry after ${retryAfter} s` }, { "retry-after": String(retryAfter) });
    return;
  }
  const wait = parseWait(url.searchParams.get("wait"));
  if (typeof wait !== "number") {
    answers.inc({ outcome: "bad_request" });
    sendJson(res, 400, wait);
    return;
  }
  const hub = configHub(getDb);
  let cluster: ClusterConfigs;
  try {
    cluster = await hub.get(agent.clusterId);
  } catch (err) {
    if (!isDatabaseDown(err)) throw err;
    // The agent keeps running its last good config and asks again.
    answers.inc({ outcome: "unavailable" });
    sendJson(res, 503, { error: "the panel's database is unreachable: keep the current config and retry" }, { "retry-after": "5" });
    return;
  }
  const built = cluster.byServer.get(agent.serverId);
  if (!built) {
    sendJson(res, 401, { error: "unknown agent token" }, { "www-authenticate": "Bearer" });
    return;
  }
  if (!matchesVersion(req.headers["if-none-match"], built.version)) {
    sendConfig(res, cluster, built);
    return;
  }
  if (wait === 0) {
    sendNotModified(res, built.version);
    return;
  }
  const abort = new AbortController();
  const onClose = () => abort.abort();
  res.on("close", onClose);
  const waiting = hub.wait(agent.clusterId, agent.serverId, built.version, wait * 1000, abort.signal);
  if (!waiting) {
    res.off("close", onClose);
    answers.inc({ outcome: "busy" });
    sendJson(res, 503, { error: "too many agents are waiting for config changes: retry shortly" }, { "retry-after": "5" });
    return;
  }
  const result = await waiting;
  res.off("close", onClose);
  if (res.destroyed || res.writableEnded) return;
  if (result.kind === "changed") sendConfig(res, result.cluster, result.built);
  else if (result.kind === "gone") sendJson(res, 401, { error: "unknown agent token" }, { "www-authenticate": "Bearer" });
  else sendNotModified(res, built.version);
};
