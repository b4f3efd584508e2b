/**
 * GET /agent/routeboard-agent.mjs: the agent as one file (built by `npm run build:agent`), so a
 * VPN server needs only node and this download. The file is read once per change (mtime/size)
 * and served with a content ETag; 503 says how to build it when it is missing.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { RouteHandler } from "./util";
import { sendText } from "./util";

export const AGENT_BUNDLE_PATH = "/agent/routeboard-agent.mjs";
const DEFAULT_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../dist/agent/routeboard-agent.mjs");

export function agentBundleHandler(file = DEFAULT_FILE): RouteHandler {
  let cached: { key: string; body: Buffer; etag: string } | null = null;
  return async (req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") return sendText(res, 405, "use GET\n", { allow: "GET, HEAD" });
    let stat: fs.Stats;
    try {
      stat = await fs.promises.stat(file);
    } catch {
      return sendText(res, 503, "the agent bundle is not built: run npm run build\n");
    }
    const key = `${stat.mtimeMs}:${stat.size}`;
    if (cached?.key !== key) {
      const body = await fs.promises.readFile(file);
      cached = { key, body, etag: `"${crypto.createHash("sha256").update(body).digest("base64url").slice(0, 27)}"` };
    }
    const headers = { "content-type": "text/javascript; charset=utf-8", etag: cached.etag, "cache-control": "no-cache" };
    if (req.headers["if-none-match"] === cached.etag) {
      res.writeHead(304, headers);
      return void res.end();
    }
    res.writeHead(200, { ...headers, "content-length": String(cached.body.length) });
    res.end(req.method === "HEAD" ? undefined : cached.body);
  };
}
