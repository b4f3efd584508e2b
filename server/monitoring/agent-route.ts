/**
 * POST /api/agent/report — one agent report (DESIGN §4), `Authorization: Bearer <agent token>`.
 * 401 missing/unknown token, 400 invalid body (naming the field), 413 body over 64 KB;
 * none of them changes anything. 200 `{ ok: true, status }` otherwise.
 */
import { getDb } from "@/db/client";
import { publishChange } from "@/server/bus";
import type { IncomingMessage } from "node:http";
import { sendJson, type RouteHandler } from "@/server/http/util";
import { ingestAgentReport, REPORT_BODY_LIMIT } from "./store";

export const agentReportHandler: RouteHandler = async (req, res) => {
  if (req.method !== "POST") {
    sendJson(res, 405, { error: "use POST" }, { allow: "POST" });
    return;
  }
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > REPORT_BODY_LIMIT) {
    sendJson(res, 413, { error: `body larger than ${REPORT_BODY_LIMIT / 1024} KB` }, { connection: "close" });
    req.resume();
    return;
  }
  const body = await readLimited(req, REPORT_BODY_LIMIT);
  if (body === null) {
    sendJson(res, 413, { error: `body larger than ${REPORT_BODY_LIMIT / 1024} KB` }, { connection: "close" });
    return;
  }
  const outcome = await ingestAgentReport(await getDb(), req.headers.authorization, body);
  if (outcome.httpStatus === 200) {
    publishChange("metrics", outcome.clusterId);
    if (outcome.statusChanged) publishChange("health", outcome.clusterId);
  }
  sendJson(res, outcome.httpStatus, outcome.body, outcome.httpStatus === 401 ? { "www-authenticate": "Bearer" } : {});
};

/** The body as text, or null once it exceeds `limit` (the rest is drained, not buffered). */
function readLimited(req: IncomingMessage, limit: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    let size = 0;
    let over = false;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        resolve(null);
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => {
      if (!over) resolve(Buffer.concat(chunks).toString("utf8"));
    });
    req.on("error", reject);
  });
}
