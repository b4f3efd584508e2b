/**
 * The request listener of an app instance: machine-facing routes and /api/trpc answered
 * directly, everything else handed to `fallback` (Next's handler in server/main.ts). Tests
 * build the same listener, so what they exercise is what production routes.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { logger } from "@/server/logger";
import { machineRoutes } from "@/server/services";
import { AGENT_BUNDLE_PATH, agentBundleHandler } from "./agent-bundle";
import { MACHINE_CSP, securityHeaders } from "./headers";
import { healthHandler } from "./health";
import { sendText, type RouteHandler } from "./util";

/**
 * How long an idle keep-alive connection stays open. Longer than the 60 s idle timeout of
 * common load balancers, so they close first (a server closing first races their next
 * request on the socket); test apps use it too, so clients see what production does.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

export function createAppListener(trpcHandler: RouteHandler, fallback: (req: IncomingMessage, res: ServerResponse) => void) {
  const exact: Record<string, RouteHandler> = { "/api/health": healthHandler, [AGENT_BUNDLE_PATH]: agentBundleHandler(), ...machineRoutes.exact };
  const prefixes: Array<[string, RouteHandler]> = [["/api/trpc/", trpcHandler], ...machineRoutes.prefixes];
  return (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const handler = exact[url.pathname] ?? prefixes.find(([p]) => url.pathname.startsWith(p))?.[1];
    if (handler) return serve(handler, req, res, url);
    // Routes that depend on data (old subscription URLs): asked last; the rest is the dashboard's.
    const dynamic = machineRoutes.dynamic.map((match) => match(req, url));
    if (dynamic.every((d) => d === null)) return fallback(req, res);
    Promise.all(dynamic)
      .then((found) => {
        const h = found.find((d) => d !== null);
        if (h) serve(h, req, res, url);
        else fallback(req, res);
      })
      .catch((err: unknown) => {
        logger().error({ err, path: url.pathname }, "request failed");
        if (!res.headersSent) sendText(res, 500, "Internal error\n");
      });
  };
}

function serve(handler: RouteHandler, req: IncomingMessage, res: ServerResponse, url: URL) {
  // Machine answers: set first, so a handler that must can still override them.
  for (const [name, value] of Object.entries(securityHeaders())) res.setHeader(name, value);
  res.setHeader("content-security-policy", MACHINE_CSP);
  Promise.resolve(handler(req, res, url)).catch((err: unknown) => {
    logger().error({ err, path: url.pathname }, "request failed");
    if (!res.headersSent) sendText(res, 500, "Internal error\n");
    else res.end();
  });
}
