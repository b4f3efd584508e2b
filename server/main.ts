/**
 * The Routeboard process: one node:http server. Hot and machine-facing endpoints
 * (/sub/*, /api/agent/*, /agent/routeboard-agent.mjs, /api/health, /metrics, /api/trpc) are answered here directly;
 * everything else (the dashboard pages) goes to Next's request handler. Measured here,
 * Next's router costs ~97 % of the throughput of a bare handler, so /sub stays outside it.
 */
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import v8 from "node:v8";
import { ConfigError, env, heapGrowthFlag } from "@/server/env";
import { DatabaseOpenError } from "@/db/client";
import { getDatabase } from "@/server/db";
import { bootstrap } from "@/server/bootstrap";
import { logger } from "@/server/logger";
import { createTrpcHandler } from "@/server/api/trpc-http";
import { createAppListener, KEEP_ALIVE_TIMEOUT_MS } from "@/server/http/app";
import { startServices, stopServices } from "@/server/services";
import { closeConfigHub } from "@/server/dataplane/config-hub";
import { setupCodeFile } from "@/server/auth/setup-code";
import { dashboardUrl, startBanner } from "@/server/start-banner";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function fail(message: string): never {
  process.stderr.write(`routeboard: ${message}\n`);
  process.exit(1);
}

async function main() {
  let e;
  try {
    e = env();
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
  // Read by V8 at each full collection, so setting it here (before the database and the
  // snapshots are loaded) bounds the heap from the first one on (env.ts says why).
  const heapFlag = heapGrowthFlag(e.ROUTEBOARD_HEAP_GROWTH_PERCENT);
  if (heapFlag) v8.setFlagsFromString(heapFlag);
  const log = logger();
  let boot;
  try {
    const database = await getDatabase();
    boot = await bootstrap(database.db, e);
    log.info({ database: database.kind }, "database ready");
  } catch (err) {
    if (err instanceof ConfigError || err instanceof DatabaseOpenError) fail(err.message);
    fail(`start-up failed: ${(err as Error).message}`);
  }

  const dev = e.NODE_ENV === "development";
  const { default: next } = await import("next");
  const nextApp = next({ dev, dir: ROOT, hostname: "localhost", port: e.PORT });
  try {
    await nextApp.prepare();
  } catch (err) {
    const msg = (err as Error).message;
    if (/production build|next build/i.test(msg)) fail("no production build found: run `npm start` (it builds first) or `npm run build`");
    throw err;
  }
  const nextHandler = nextApp.getRequestHandler();
  const trpcHandler = createTrpcHandler();

  const server = http.createServer(createAppListener(trpcHandler, (req, res) => void nextHandler(req, res)));
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;

  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "EADDRINUSE") fail(`port ${e.PORT} is already in use: stop the other process or set PORT`);
      if (err.code === "EACCES") fail(`no permission to listen on port ${e.PORT}: set PORT to 1024 or higher`);
      reject(err);
    });
    server.listen(e.PORT, e.HOST, resolve);
  });
  await startServices();

  // PORT=0 lets the system pick: the banner names the port actually bound.
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : e.PORT;
  const url = dashboardUrl(e, port);
  process.stdout.write(startBanner(e, boot, port, setupCodeFile(e.DATA_DIR)));
  log.info({ url, dev }, "listening");

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "stopping");
    // Agents waiting in a config long-poll get their 304 before the connections close.
    closeConfigHub();
    server.close();
    server.closeAllConnections();
    await stopServices().catch(() => {});
    await (await getDatabase()).close().catch(() => {});
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
}

void main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof DatabaseOpenError) fail(err.message);
  process.stderr.write(`routeboard: start-up failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
