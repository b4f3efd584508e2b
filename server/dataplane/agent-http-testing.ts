/**
 * Test support (imported only by tests): agent routes over real HTTP on a fresh test database
 * that is made the process-wide one, so the routes' getDatabase() answers with it.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { openTestDatabase, type TestDatabase, type TestDbKind } from "@/db/testing";
import type { RouteHandler } from "@/server/http/util";

const DB_KEY = Symbol.for("routeboard.database");

export interface AgentRoutesServer {
  t: TestDatabase;
  /** http://127.0.0.1:<port> */
  base: string;
  close(): Promise<void>;
}

/** Serves `routes` by path on 127.0.0.1 at a free port (404 elsewhere, 500 when a handler throws). */
export async function serveAgentRoutes(kind: TestDbKind, routes: Record<string, RouteHandler>): Promise<AgentRoutesServer> {
  const t = await openTestDatabase(kind);
  (globalThis as Record<symbol, unknown>)[DB_KEY] = Promise.resolve(t);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const h = routes[url.pathname];
    if (!h) {
      res.writeHead(404).end();
      return;
    }
    Promise.resolve(h(req, res, url)).catch(() => {
      if (!res.headersSent) res.writeHead(500).end("Internal error");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    t,
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await t.dispose();
    },
  };
}
