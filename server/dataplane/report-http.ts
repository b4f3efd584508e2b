/**
 * POST /api/agent/report — one agent report (DESIGN §4), `Authorization: Bearer <agent token>`.
 * 401 missing/unknown token; 503 + Retry-After when the panel is busy (admission control:
 * server/dataplane/report-batcher.ts) or its database away; 429 + Retry-After beyond one report per the cluster's report
 * interval (burst REPORT_BURST); 400 invalid body (naming the field); 413 body over the limit;
 * none of them changes anything. 200 AgentReportAck otherwise, sent once the report is
 * committed (group commit: server/dataplane/report-batcher.ts).
 *
 * This route is the only way a report is taken in: tests start it on their own database, batcher,
 * buckets and clock (agentReportRoute; server/dataplane/report-testing.ts).
 */
import { getDb } from "@/server/db";
import type { Db } from "@/db/client";
import type { IncomingMessage, ServerResponse } from "node:http";
import { readLimited, sendJson, type RouteHandler } from "@/server/http/util";
import { remainingBytesOf } from "@/server/usage/remaining";
import { counter } from "@/server/metrics";
import { isDatabaseDown } from "@/server/db-errors";
import { agentOrRefuse, type AgentServer } from "@/server/dataplane/agent-auth";
import { agentLimits, REPORT_BURST, type TokenBuckets } from "@/server/dataplane/rate-limit";
import { reportBatcher, type ReportBatcher } from "@/server/dataplane/report-batcher";
import { parseReport, REPORT_BODY_LIMIT } from "./reports";
import { findBadText } from "@/core/text-safety";
import { reportLimits, reportLimitsFor, type ReportLimits } from "@/server/dataplane/report-size";

const reports = counter("routeboard_agent_reports_total", "POST /api/agent/report answers by outcome");
const tooLarge = () => ({ error: `body larger than ${REPORT_BODY_LIMIT / 1024 / 1024} MB` });
/** Issue 21: the bound follows from the cluster's subscriber count (server/dataplane/report-size.ts). */
const tooLargeFor = (l: ReportLimits) => ({
  error: `body larger than ${l.bodyBytes} bytes, the most a report may carry for this cluster's ${l.subscribers} subscribers: nothing was stored`,
});

/**
 * What the route takes reports with: the database, the group commit (whose own clock must be
 * `now`), the per-agent token buckets, and the clock every step reads (rate limit, size cache).
 */
export interface ReportIntake {
  db: () => Promise<Db>;
  batcher: ReportBatcher;
  buckets: TokenBuckets;
  now: () => number;
}

let processRoute: RouteHandler | null = null;
/** The process's route: its database, its batcher (started by server/services.ts), its buckets, the real clock. */
export const agentReportHandler: RouteHandler = (req, res, url) => {
  processRoute ??= agentReportRoute({ db: getDb, batcher: reportBatcher(getDb), buckets: agentLimits().reports, now: Date.now });
  return processRoute(req, res, url);
};

export const agentReportRoute = (intake: ReportIntake): RouteHandler => async (req, res) => {
  if (req.method !== "POST") {
    sendJson(res, 405, { error: "use POST" }, { allow: "POST" });
    return;
  }
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > REPORT_BODY_LIMIT) {
    reports.inc({ outcome: "too_large" });
    sendJson(res, 413, tooLarge(), { connection: "close" });
    req.resume();
    return;
  }
  const agent = await agentOrRefuse(req, res, (outcome) => reports.inc({ outcome }), intake.db);
  if (!agent) return;
  // Refused early, before buffering: a report never needs more room than its cluster's users.
  const limits = await reportLimitsFor(await intake.db(), agent.clusterId, intake.now()).catch(() => reportLimits(Number.MAX_SAFE_INTEGER));
  if (Number.isFinite(declared) && declared > limits.bodyBytes) {
    reports.inc({ outcome: "too_large" });
    sendJson(res, 413, tooLargeFor(limits), { connection: "close" });
    req.resume();
    return;
  }
  const batcher = intake.batcher;
  if (!batcher.admit()) {
    reports.inc({ outcome: "busy" });
    sendJson(res, 503, { error: "the panel is busy: nothing was stored, send this report again after Retry-After" }, { "retry-after": "1" });
    req.resume();
    return;
  }
  try {
    await admitted(req, res, agent, intake, limits);
  } finally {
    batcher.release();
  }
};

/** The rest of a report's handling, once admitted (see ReportBatcher.admit). */
async function admitted(req: IncomingMessage, res: ServerResponse, agent: AgentServer, intake: ReportIntake, limits: ReportLimits): Promise<void> {
  const retryAfter = intake.buckets.take(agent.serverId, REPORT_BURST, 1 / agent.reportIntervalS, intake.now());
  if (retryAfter > 0) {
    reports.inc({ outcome: "rate_limited" });
    sendJson(
      res,
      429,
      { error: `one report per ${agent.reportIntervalS} s (burst ${REPORT_BURST}): retry after ${retryAfter} s` },
      { "retry-after": String(retryAfter) },
    );
    req.resume();
    return;
  }
  const body = await readLimited(req, limits.bodyBytes);
  if (body === null) {
    reports.inc({ outcome: "too_large" });
    sendJson(res, 413, tooLargeFor(limits), { connection: "close" });
    return;
  }
  const parsed = parseReport(body);
  if ("error" in parsed) {
    reports.inc({ outcome: "bad_request" });
    sendJson(res, 400, { error: parsed.error });
    return;
  }
  // NUL and lone surrogates cannot be stored (PostgreSQL refuses them): a 400 naming the field.
  const badText = findBadText(parsed.report);
  if (badText) {
    reports.inc({ outcome: "bad_request" });
    sendJson(res, 400, { error: `${badText.path || "(root)"}: ${badText.reason}` });
    return;
  }
  const rows = parsed.report.users?.length ?? 0;
  if (rows > limits.users) {
    reports.inc({ outcome: "bad_request" });
    sendJson(res, 400, { error: `users: ${rows} rows, more than this cluster's ${limits.subscribers} subscribers allow (at most ${limits.users}): nothing was stored` });
    return;
  }
  let outcome;
  try {
    outcome = await intake.batcher.submit({ serverId: agent.serverId, clusterId: agent.clusterId }, parsed.report);
  } catch (err) {
    if (!isDatabaseDown(err)) throw err;
    // Nothing was stored: the agent keeps the report (and its traffic) and sends it again.
    reports.inc({ outcome: "unavailable" });
    sendJson(res, 503, { error: "the panel's database is unreachable: nothing was stored, send this report again" }, { "retry-after": "5" });
    return;
  }
  if (outcome.httpStatus === 401) {
    reports.inc({ outcome: "unauthorized" });
    sendJson(res, 401, outcome.body, { "www-authenticate": "Bearer" });
    return;
  }
  reports.inc({ outcome: outcome.httpStatus === 200 ? (outcome.body.duplicate ? "duplicate" : "ok") : "refused" });
  let answer: object = outcome.body;
  const users = parsed.report.users;
  // An empty list still says "this panel sends limits": the agent then reads its counters between reports.
  if (outcome.httpStatus === 200) answer = { ...outcome.body, limits: [] };
  if (outcome.httpStatus === 200 && users && users.length > 0) {
    // The limited users' bytes left, for the agent to enforce between reports (issue 25 point 8).
    // The traffic is stored: a failure here only leaves the field out.
    try {
      const limits = await remainingBytesOf(
        await intake.db(),
        agent.clusterId,
        users.map((u) => u.email),
      );
      answer = { ...outcome.body, limits };
    } catch {
      // the next report's ack carries them
    }
  }
  sendJson(res, outcome.httpStatus, answer);
}
