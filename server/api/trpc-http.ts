import type { IncomingMessage, ServerResponse } from "node:http";
import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import { servedRouter, type AppRouter, type DevtoolsAppRouter } from "@/server/api/root";
import { createContext } from "@/server/api/trpc";
import { env } from "@/server/env";
import { bearerCredential, checkOrigin, type ProxyTrust } from "@/server/http/client";
import { securityHeaders } from "@/server/http/headers";
import { sendJson } from "@/server/http/util";
import { logger } from "@/server/logger";
import { BATCH_LINK_MAX_ITEMS, UNBATCHED_PROCEDURES } from "@/lib/trpc-links";

/** Largest tRPC request body. The biggest real input (a probe config) is a few kB. */
export const MAX_BODY_BYTES = 1_000_000;
/** Most calls in one batch; the dashboard's batch link sends at most BATCH_LINK_MAX_ITEMS. */
export const MAX_BATCH_SIZE = 2 * BATCH_LINK_MAX_ITEMS;

const BASE_PATH = "/api/trpc/";

/**
 * Every tRPC answer: the security headers, and no-store (answers hold subscribers, tokens and
 * links; no browser or proxy cache may keep them).
 */
const trpcHeaders = (): Record<string, string> => ({ ...securityHeaders(), "cache-control": "no-store" });

/** A refusal in tRPC's own error shape, so clients show the message like any other error. */
function refuse(res: ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}) {
  sendJson(res, status, { error: { json: { message, code: -32600, data: { code, httpStatus: status } } } }, { ...trpcHeaders(), ...headers });
}

/**
 * /api/trpc/* served by tRPC's node adapter (queries, mutations, SSE subscriptions). The
 * router is the environment's (tooling only with ROUTEBOARD_DEVTOOLS=1) unless a test
 * passes one.
 */
export function createTrpcHandler(
  router: AppRouter | DevtoolsAppRouter = servedRouter(env().ROUTEBOARD_DEVTOOLS),
  trust: ProxyTrust = { trustProxy: env().TRUST_PROXY, publicUrl: env().PUBLIC_URL },
) {
  const handler = createHTTPHandler({
    router,
    basePath: BASE_PATH,
    createContext: (opts) => createContext(opts, trust),
    maxBodySize: MAX_BODY_BYTES,
    maxBatchSize: MAX_BATCH_SIZE,
    responseMeta({ errors }) {
      const headers: Record<string, string> = trpcHeaders();
      // 429 carries Retry-After (the login throttle puts the seconds in the error's cause).
      for (const e of errors) {
        const retryAfter = (e.cause as { retryAfter?: number } | undefined)?.retryAfter;
        if (e.code === "TOO_MANY_REQUESTS" && retryAfter) headers["retry-after"] = String(retryAfter);
      }
      return { headers };
    },
    onError({ error, path }) {
      if (error.code === "INTERNAL_SERVER_ERROR") logger().error({ err: error, path }, "tRPC procedure failed");
    },
  });

  return (req: IncomingMessage, res: ServerResponse, url: URL) => {
    // Checked before a byte of the body is read: a refused request costs nothing. Bodies
    // without a length are counted as they stream in (tRPC's maxBodySize, also a 413).
    const length = Number(req.headers["content-length"]);
    if (Number.isFinite(length) && length > MAX_BODY_BYTES) {
      refuse(res, 413, "PAYLOAD_TOO_LARGE", `Request body too large (at most ${MAX_BODY_BYTES} bytes)`, { connection: "close" });
      req.resume(); // discarded, never kept
      return;
    }
    if (req.method === "POST") {
      // The origin check protects the session cookie, a credential the browser attaches on
      // its own. A bearer request carries no ambient credential: a page cannot make a
      // browser add Authorization to a cross-site request without a CORS preflight we never
      // grant, and such a request is the token alone (its cookies are never read, see
      // createContext). So scripts and bots may send any Origin; throttles still apply.
      const origin = bearerCredential(req.headers.authorization) === undefined ? checkOrigin(req, trust) : { ok: true as const };
      if (!origin.ok) return refuse(res, 403, "FORBIDDEN", origin.reason);
      // Only JSON: a page can post text/plain, multipart or octet-stream to another site
      // without a CORS preflight, never application/json.
      const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
      if (type !== "application/json") {
        return refuse(res, 415, "UNSUPPORTED_MEDIA_TYPE", "tRPC calls must send Content-Type: application/json");
      }
    }
    if (url.searchParams.get("batch") === "1") {
      const paths = safeDecode(url.pathname.slice(BASE_PATH.length)).split(",");
      const unbatched = paths.find((p) => UNBATCHED_PROCEDURES.has(p));
      if (unbatched) {
        return refuse(res, 400, "BAD_REQUEST", `${unbatched} cannot be batched: send it alone, without ?batch=1`);
      }
    }
    handler(req, res);
  };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
