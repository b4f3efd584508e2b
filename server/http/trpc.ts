import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import { servedRouter, type AppRouter, type DevtoolsAppRouter } from "@/server/api/root";
import { createContext } from "@/server/api/trpc";
import { env } from "@/server/env";
import { logger } from "@/server/logger";

/**
 * /api/trpc/* served by tRPC's node adapter (queries, mutations, SSE subscriptions). The
 * router is the environment's (tooling only with ROUTEBOARD_DEVTOOLS=1) unless a test
 * passes one.
 */
export function createTrpcHandler(router: AppRouter | DevtoolsAppRouter = servedRouter(env().ROUTEBOARD_DEVTOOLS)) {
  return createHTTPHandler({
    router,
    basePath: "/api/trpc/",
    createContext,
    responseMeta({ errors }) {
      // 429 carries Retry-After (the login throttle puts the seconds in the error's cause).
      for (const e of errors) {
        const retryAfter = (e.cause as { retryAfter?: number } | undefined)?.retryAfter;
        if (e.code === "TOO_MANY_REQUESTS" && retryAfter) return { headers: { "retry-after": String(retryAfter) } };
      }
      return {};
    },
    onError({ error, path }) {
      if (error.code === "INTERNAL_SERVER_ERROR") logger().error({ err: error, path }, "tRPC procedure failed");
    },
  });
}
