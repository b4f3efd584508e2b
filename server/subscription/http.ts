import type { IncomingMessage } from "node:http";
import { env } from "@/server/env";
import { isHttps, requestHost } from "@/server/http/client";
import type { RouteHandler } from "@/server/http/util";
import { sendText } from "@/server/http/util";
import { renderMetrics } from "@/server/metrics";
import { subscriptionService } from "./service";
import { deviceFromHeaders } from "@/core/devices";

/** GET /sub/<token>: answered outside Next's router (the hot public endpoint). */
export const subscriptionHandler: RouteHandler = async (req, res, url) => {
  if (req.method !== "GET" && req.method !== "HEAD") {
    sendText(res, 405, "Method not allowed\n", { allow: "GET, HEAD" });
    return;
  }
  const service = subscriptionService();
  if (!service) {
    sendText(res, 503, "Starting up\n", { "retry-after": "1" });
    return;
  }
  // The last segment: /sub/<token>, or an imported subscriber's old URL (legacySubscriptionRoute).
  let token: string;
  try {
    token = decodeURIComponent(url.pathname.slice(url.pathname.lastIndexOf("/") + 1));
  } catch {
    token = "";
  }
  const host = requestHost(req, { trustProxy: env().TRUST_PROXY }) ?? null;
  const answer = await service.answerPath(host, url.pathname, token, url.searchParams.get("format"), {
    userAgent: req.headers["user-agent"] ?? null,
    origin: publicOrigin(req),
    device: deviceFromHeaders(req.headers),
    acceptLanguage: req.headers["accept-language"] ?? null,
  });
  const encoding = answer.ascii ? "latin1" : "utf8";
  // A length, not chunks: apps show download progress, and HEAD tells the size it would be.
  res.writeHead(answer.status, { ...answer.headers, "content-length": String(Buffer.byteLength(answer.body, encoding)) });
  if (req.method === "HEAD") res.end();
  else res.end(answer.body, encoding);
};

/**
 * Old subscription URLs of imported subscribers outside /sub/ (another prefix, or the root of
 * the old panel's host): answered by subscriptionHandler when the index holds that prefix
 * or host; anything else goes on to the dashboard. Prefixes never start with a segment the
 * app serves (server/import/legacy.ts RESERVED_SEGMENTS), so no app route is shadowed.
 */
export function legacySubscriptionRoute(req: IncomingMessage, url: URL): RouteHandler | null | Promise<RouteHandler | null> {
  if (req.method !== "GET" && req.method !== "HEAD") return null;
  const service = subscriptionService();
  if (!service) return null;
  const host = requestHost(req, { trustProxy: env().TRUST_PROXY }) ?? null;
  const decide = () => (service.mayServeLegacy(host, url.pathname) ? subscriptionHandler : null);
  // Just after an import the index may not hold its URLs yet: read it first (rare), then decide.
  return service.legacyMayBeStale ? service.refresh().then(decide, decide) : decide();
}

/**
 * The origin the subscriber's page builds its links from: PUBLIC_URL when set; else what
 * the request asked for (Host, or X-Forwarded-Host/-Proto behind TRUST_PROXY). A Host that
 * is not a plain host[:port] is not echoed back: the page then says localhost.
 */
export function publicOrigin(req: IncomingMessage): string {
  const e = env();
  if (e.PUBLIC_URL) return e.PUBLIC_URL.replace(/\/+$/, "");
  const trust = { trustProxy: e.TRUST_PROXY };
  const host = requestHost(req, trust);
  const safe = host && /^[a-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-f:.]+\](:\d{1,5})?$/.test(host) ? host : "localhost";
  return `${isHttps(req, trust) ? "https" : "http"}://${safe}`;
}

/** GET /metrics: Prometheus text format. */
export const metricsHandler: RouteHandler = (_req, res) => {
  res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8", "cache-control": "no-store" });
  res.end(renderMetrics());
};
