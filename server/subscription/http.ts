import type { RouteHandler } from "@/server/http/util";
import { sendText } from "@/server/http/util";
import { renderMetrics } from "@/server/metrics";
import { subscriptionService } from "./service";

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
  let token: string;
  try {
    token = decodeURIComponent(url.pathname.slice("/sub/".length));
  } catch {
    token = "";
  }
  const answer = await service.answer(token, url.searchParams.get("format"));
  res.writeHead(answer.status, answer.headers);
  res.end(req.method === "HEAD" ? undefined : answer.body);
};

/** GET /metrics: Prometheus text format. */
export const metricsHandler: RouteHandler = (_req, res) => {
  res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8", "cache-control": "no-store" });
  res.end(renderMetrics());
};
