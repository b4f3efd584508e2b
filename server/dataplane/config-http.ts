/**
 * GET /api/agent/config — the server's core config for its agent (DESIGN §4, §6).
 *   Authorization: Bearer <agent token>    (401 {error} when missing or unknown)
 *   If-None-Match: "<version>"             (304 when unchanged)
 *   ?wait=<0–60>                           (long-poll: answer as soon as the version changes,
 *                                           else 304 after that many seconds; 400 otherwise)
 *   ?delta=1                               (issue 23: answer {kind:"delta"} with only the users
 *                                           changed since the If-None-Match version when that is
 *                                           all that changed, else the config with kind:"full";
 *                                           If-None-Match must then name one version)
 *   ?scheme=2                              (the config version scheme the agent checks,
 *                                           core/config-version.ts: 2 is updated per user; absent
 *                                           or 1, an agent from before it, gets scheme 1, computed
 *                                           for it, and never a delta)
 *   Accept-Encoding: br | gzip             (the answer is compressed)
 * 200: the config (core/agent-wire.ts agentConfigSchema; without delta=1 exactly that shape,
 * which agents from before deltas parse strictly) with ETag: "<version>" (in the scheme asked).
 * 429 + Retry-After when one token polls abusively; 503 + Retry-After when too many wait.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { promisify } from "node:util";
import zlib from "node:zlib";
import { getDb } from "@/server/db";
import { isConfigVersion, MAX_CONFIG_WAIT_S } from "@/core/agent-wire";
import { sendJson, type RouteHandler } from "@/server/http/util";
import { counter } from "@/server/metrics";
import { isDatabaseDown } from "@/server/db-errors";
import { agentOrRefuse } from "./agent-auth";
import { configBody, configBodyPieces, legacyVersion, type BuiltConfig, type ClusterConfigs } from "./config";
import { configHub } from "./config-hub";
import { deltaJson, type DeltaAnswer } from "./config-journal";
import { gzipWithSharedTail, MAX_STORED_HEAD } from "./shared-gzip";
import { agentLimits, CONFIG_BURST, CONFIG_REFILL_PER_S } from "./rate-limit";

const answers = counter("routeboard_agent_config_requests_total", "GET /api/agent/config answers by outcome");
const answerBytes = counter("routeboard_agent_config_bytes_total", "Bytes of GET /api/agent/config bodies sent, by kind (full, delta) and encoding");
const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

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

/** ?delta: absent or 0 = the plain config; 1 = a delta when possible. */
export function parseDelta(raw: string | null): boolean | { error: string } {
  if (raw === null || raw === "" || raw === "0") return false;
  if (raw === "1") return true;
  return { error: "delta: expected 1 (answer a delta when only users changed) or 0" };
}

/** ?scheme: absent or 1 = scheme 1 (agents from before scheme 2); 2 = scheme 2. */
export function parseScheme(raw: string | null): 1 | 2 | { error: string } {
  if (raw === null || raw === "" || raw === "1") return 1;
  if (raw === "2") return 2;
  return { error: "scheme: expected 2 (the config version scheme updated per user) or 1" };
}

/**
 * With delta=1 the version the agent runs: one entity tag, "<version>" or W/"<version>";
 * null when the header is absent (an agent without a config yet).
 */
export function parseDeltaFrom(ifNoneMatch: string | undefined): string | null | { error: string } {
  if (ifNoneMatch === undefined || ifNoneMatch.trim() === "") return null;
  const m = /^\s*(?:W\/)?"([^"]*)"\s*$/.exec(ifNoneMatch);
  if (!m || !isConfigVersion(m[1]!)) return { error: 'If-None-Match: with delta=1 it must name the one config version the agent runs, in quotes as the ETag gave it (e.g. "AbC_1-x")' };
  return m[1]!;
}

/** Accept-Encoding values seen, and what they accept: agents send the same few, thousands of times a second. */
const acceptedCache = new Map<string, (coding: string) => number>();
const ACCEPTED_CACHE_MAX = 64;

/** Each coding's q-value in Accept-Encoding ("*" stands for those not named; absent = 0). */
function acceptedQuality(acceptEncoding: string | undefined): (coding: string) => number {
  const hit = acceptedCache.get(acceptEncoding ?? "");
  if (hit) return hit;
  const of = parseAccepted(acceptEncoding);
  if (acceptedCache.size >= ACCEPTED_CACHE_MAX) acceptedCache.clear();
  acceptedCache.set(acceptEncoding ?? "", of);
  return of;
}

function parseAccepted(acceptEncoding: string | undefined): (coding: string) => number {
  const q = new Map<string, number>();
  for (const part of (acceptEncoding ?? "").split(",")) {
    const [name, ...params] = part.trim().toLowerCase().split(";");
    if (!name) continue;
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    const value = qParam === undefined ? 1 : Number(qParam.slice(2));
    q.set(name, Number.isFinite(value) ? value : 0);
  }
  return (coding) => q.get(coding) ?? q.get("*") ?? 0;
}

/** The encoding of the answer: br or gzip when Accept-Encoding allows it (q > 0), else none. */
export function pickEncoding(acceptEncoding: string | undefined): "br" | "gzip" | null {
  const of = acceptedQuality(acceptEncoding);
  if (of("br") > 0 && of("br") >= of("gzip")) return "br";
  return of("gzip") > 0 ? "gzip" : null;
}

/**
 * The encoding of a delta: gzip whenever the agent takes it at least as gladly as br (agents
 * send "br, gzip"), since a change's users are then deflated once for every agent it wakes
 * (sendDelta); otherwise as pickEncoding (br compressed per answer).
 */
export function pickDeltaEncoding(acceptEncoding: string | undefined): "br" | "gzip" | null {
  const of = acceptedQuality(acceptEncoding);
  return of("gzip") > 0 && of("gzip") >= of("br") ? "gzip" : pickEncoding(acceptEncoding);
}

/** Bodies up to this size are compressed on the event loop (see encodeBody). */
const SYNC_COMPRESS_BYTES = 64 * 1024;

/**
 * The body's bytes in that encoding. A large body (a full config) is compressed off the event
 * loop, on zlib's thread pool; a small one (a delta) at once, with a window no larger than
 * itself: for a few hundred bytes the thread pool's round trip and brotli's default 4 MB
 * window cost about ten times the compression (a thousand agents answered per change).
 */
export async function encodeBody(body: string, encoding: "br" | "gzip" | null): Promise<Buffer> {
  const bytes = Buffer.from(body);
  const small = bytes.length <= SYNC_COMPRESS_BYTES;
  if (encoding === "br") {
    const params = brotliParams(bytes.length);
    if (!small) return brotli(bytes, { params });
    params[zlib.constants.BROTLI_PARAM_LGWIN] = Math.max(zlib.constants.BROTLI_MIN_WINDOW_BITS, Math.ceil(Math.log2(bytes.length + 1)));
    return zlib.brotliCompressSync(bytes, { params });
  }
  if (encoding === "gzip") return small ? zlib.gzipSync(bytes) : gzip(bytes);
  return bytes;
}

/** Full configs of more users than this are streamed (sendStreamed); smaller ones go as one body. */
const STREAM_FROM_USERS = 2000;

/** Brotli's settings for a large body: quality 5, most of its gain at gzip's speed (11, the default, takes seconds on a large config). */
function brotliParams(sizeHint: number): Record<number, number> {
  return { [zlib.constants.BROTLI_PARAM_QUALITY]: 5, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: sizeHint };
}

/**
 * A full config of many users: written in pieces of about a megabyte (configBodyPieces) into
 * the compressor and on to the agent as they come (chunked, no Content-Length), so a million
 * users' 90 MB never exist as one string or one buffer, and the event loop serves other
 * requests between pieces.
 */
async function sendStreamed(req: IncomingMessage, res: ServerResponse, version: string, pieces: Iterable<string>, usersCount: number): Promise<void> {
  const encoding = pickEncoding(req.headers["accept-encoding"]);
  if (res.destroyed || res.writableEnded) return;
  answers.inc({ outcome: "config" });
  res.writeHead(200, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    etag: `"${version}"`,
    vary: "accept-encoding",
    ...(encoding ? { "content-encoding": encoding } : {}),
  });
  let sent = 0;
  const count = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      sent += chunk.length;
      done(null, chunk);
    },
  });
  const source = Readable.from(pieces);
  try {
    if (encoding === "br") await pipeline(source, zlib.createBrotliCompress({ params: brotliParams(usersCount * 90) }), count, res);
    else if (encoding === "gzip") await pipeline(source, zlib.createGzip(), count, res);
    else await pipeline(source, count, res);
  } catch {
    // The agent went away (or the socket failed) mid-body: it asks again; pipeline closed the rest.
  } finally {
    answerBytes.inc({ kind: "full", encoding: encoding ?? "identity" }, sent);
  }
}

/** A full config: streamed when it has many users, else one body. */
function sendFull(req: IncomingMessage, res: ServerResponse, cluster: ClusterConfigs, built: BuiltConfig, version: string, kind?: "full"): Promise<void> {
  if (cluster.userList.length > STREAM_FROM_USERS) return sendStreamed(req, res, version, configBodyPieces(cluster, built, version, kind), cluster.userList.length);
  return sendBody(req, res, version, "full", configBody(cluster, built, version, kind));
}

async function sendBody(req: IncomingMessage, res: ServerResponse, version: string, kind: "full" | "delta", body: string): Promise<void> {
  const encoding = pickEncoding(req.headers["accept-encoding"]);
  sendBytes(res, version, kind, encoding, await encodeBody(body, encoding));
}

/**
 * A delta: gzip as one member of this server's head and the change's users deflated once for
 * every agent it wakes (shared-gzip.ts); br or none as any body.
 */
function sendDelta(req: IncomingMessage, res: ServerResponse, version: string, delta: DeltaAnswer): Promise<void> | void {
  const encoding = pickDeltaEncoding(req.headers["accept-encoding"]);
  const head = Buffer.from(delta.head);
  if (encoding !== "gzip" || head.length > MAX_STORED_HEAD) return sendBody(req, res, version, "delta", deltaJson(delta));
  sendBytes(res, version, "delta", encoding, gzipWithSharedTail(head, delta.tail));
}

function sendBytes(res: ServerResponse, version: string, kind: "full" | "delta", encoding: "br" | "gzip" | null, bytes: Buffer): void {
  if (res.destroyed || res.writableEnded) return;
  answers.inc({ outcome: kind === "delta" ? "delta" : "config" });
  answerBytes.inc({ kind, encoding: encoding ?? "identity" }, bytes.length);
  res.writeHead(200, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    etag: `"${version}"`,
    vary: "accept-encoding",
    "content-length": String(bytes.length),
    ...(encoding ? { "content-encoding": encoding } : {}),
  });
  res.end(bytes);
}

/** The server's version in the scheme the agent checks. */
function versionIn(scheme: 1 | 2, cluster: ClusterConfigs, built: BuiltConfig): Promise<string> | string {
  return scheme === 2 ? built.version : legacyVersion(cluster, built);
}

/**
 * The answer for a changed config: without delta=1 the plain config (today's shape); with it,
 * a delta from `from` when the journal has one (scheme 2 only: the journal knows the users by
 * their scheme-2 hash), else the config marked kind "full".
 */
async function sendConfig(req: IncomingMessage, res: ServerResponse, serverId: string, cluster: ClusterConfigs, built: BuiltConfig, delta: { from: string | null } | null, scheme: 1 | 2): Promise<void> {
  const version = await versionIn(scheme, cluster, built);
  if (!delta) return sendFull(req, res, cluster, built, version);
  const answer = delta.from === null || scheme !== 2 ? null : await configHub(getDb).deltaAnswer(cluster, serverId, built, delta.from);
  if (answer !== null) return sendDelta(req, res, version, answer);
  return sendFull(req, res, cluster, built, version, "full");
}

function badRequest(res: ServerResponse, error: { error: string }): void {
  answers.inc({ outcome: "bad_request" });
  sendJson(res, 400, error);
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
  if (typeof wait !== "number") return badRequest(res, wait);
  const wantsDelta = parseDelta(url.searchParams.get("delta"));
  if (typeof wantsDelta !== "boolean") return badRequest(res, wantsDelta);
  const from = wantsDelta ? parseDeltaFrom(req.headers["if-none-match"]) : null;
  if (from !== null && typeof from !== "string") return badRequest(res, from);
  const delta = wantsDelta ? { from } : null;
  const scheme = parseScheme(url.searchParams.get("scheme"));
  if (typeof scheme !== "number") return badRequest(res, scheme);
  const hub = configHub(getDb);
  // While a change has dropped the cluster's build, a long-poll is answered from the newest
  // build (its change, if the agent lacks it) or waits for the wake-up that brings the next:
  // building at once for each poll would build once per edit instead of at most twice a second
  // per cluster, and answer agents faster than that, into the rate limit.
  const dropped = wait > 0 && scheme === 2 ? hub.droppedBuild(agent.clusterId) : undefined;
  const droppedBuilt = dropped?.byServer.get(agent.serverId);
  if (dropped && droppedBuilt) {
    if (matchesVersion(req.headers["if-none-match"], droppedBuilt.version)) return waitForChange(req, res, agent, dropped, droppedBuilt, wait, delta, scheme);
    return sendConfig(req, res, agent.serverId, dropped, droppedBuilt, delta, scheme);
  }
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
  const current = await versionIn(scheme, cluster, built);
  if (!matchesVersion(req.headers["if-none-match"], current)) {
    await sendConfig(req, res, agent.serverId, cluster, built, delta, scheme);
    return;
  }
  if (wait === 0) {
    sendNotModified(res, current);
    return;
  }
  return waitForChange(req, res, agent, cluster, built, wait, delta, scheme);
};

/** The long-poll of an agent that runs `built`: answered when the hub has a build it does not run, or 304 after `wait` s. */
async function waitForChange(
  req: IncomingMessage,
  res: ServerResponse,
  agent: { clusterId: string; serverId: string },
  cluster: ClusterConfigs,
  built: BuiltConfig,
  wait: number,
  delta: { from: string | null } | null,
  scheme: 1 | 2,
): Promise<void> {
  const hub = configHub(getDb);
  const current = await versionIn(scheme, cluster, built);
  let cancel: (() => void) | null = null;
  const onClose = () => cancel?.();
  res.on("close", onClose);
  // The hub compares builds in scheme 2 whichever scheme the agent checks: the agent runs `built`.
  const waiting = hub.wait(agent.clusterId, agent.serverId, built.version, wait * 1000, (c) => (cancel = c));
  if (!waiting) {
    res.off("close", onClose);
    answers.inc({ outcome: "busy" });
    sendJson(res, 503, { error: "too many agents are waiting for config changes: retry shortly" }, { "retry-after": "5" });
    return;
  }
  const result = await waiting;
  res.off("close", onClose);
  if (res.destroyed || res.writableEnded) return;
  if (result.kind === "changed") await sendConfig(req, res, agent.serverId, result.cluster, result.built, delta, scheme);
  else if (result.kind === "gone") sendJson(res, 401, { error: "unknown agent token" }, { "www-authenticate": "Bearer" });
  else sendNotModified(res, current);
}
