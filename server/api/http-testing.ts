/**
 * An app instance in-process for tests that go through HTTP: the listener of server/main.ts
 * (tRPC, /sub, /api/agent/*) on a fresh PGlite database, on 127.0.0.1 and a free port, with
 * a signed-in operator per role. Next's pages are not served (404): tests here need the API.
 */
import http from "node:http";
import type net from "node:net";
import { openTestDatabase, type TestDatabase } from "@/db/testing";
import { operators } from "@/db/schema";
import { createSession, SESSION_COOKIE, type OperatorRole } from "@/server/auth/sessions";
import { createAppListener, KEEP_ALIVE_TIMEOUT_MS } from "@/server/http/app";
import { createTrpcHandler } from "./trpc-http";
import { SubscriptionService, setSubscriptionService } from "@/server/subscription/service";
import { servedRouter } from "./root";

export interface TestApp {
  url: string;
  database: TestDatabase;
  subscriptions: SubscriptionService;
  /** Resolves once no request is open (each answered, or its client gone). */
  idle(): Promise<void>;
  /** Cookie header of a session of an operator with this role (created on first use). */
  cookie(role: OperatorRole): Promise<string>;
  close(): Promise<void>;
}

const DATABASE_KEY = Symbol.for("routeboard.database");

export async function startTestApp(opts: { devtools: boolean }): Promise<TestApp> {
  const database = await openTestDatabase("pglite");
  // getDatabase() (tRPC context, agent routes) answers with this database in this process.
  (globalThis as Record<symbol, unknown>)[DATABASE_KEY] = Promise.resolve(database);
  const subscriptions = new SubscriptionService(database.db);
  subscriptions.start();
  setSubscriptionService(subscriptions);
  const listener = createAppListener(createTrpcHandler(servedRouter(opts.devtools)), (_req, res) => {
    res.writeHead(404).end();
  });
  let open = 0;
  let idleWaiters: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    open++;
    res.once("close", () => {
      if (--open > 0) return;
      for (const wake of idleWaiters) wake();
      idleWaiters = [];
    });
    listener(req, res);
  });
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  const cookies = new Map<OperatorRole, string>();
  return {
    url,
    database,
    subscriptions,
    idle: () => (open === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve))),
    async cookie(role) {
      const known = cookies.get(role);
      if (known) return known;
      const [op] = await database.db.insert(operators).values({ username: `http-${role}`, passwordHash: "x", role }).returning();
      const { token } = await createSession(database.db, op!.id, "vitest");
      const c = `${SESSION_COOKIE}=${token}`;
      cookies.set(role, c);
      return c;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await subscriptions.stop();
      setSubscriptionService(undefined);
      delete (globalThis as Record<symbol, unknown>)[DATABASE_KEY];
      await database.dispose();
    },
  };
}

/** One tRPC call over HTTP (no batching, superjson-encoded input). */
export async function trpcHttp(app: Pick<TestApp, "url">, cookie: string | null, type: "query" | "mutation", path: string, input: unknown) {
  const { default: superjson } = await import("superjson");
  const encoded = input === undefined ? undefined : superjson.serialize(input);
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (cookie) headers.cookie = cookie;
  const res =
    type === "query"
      ? await fetch(`${app.url}/api/trpc/${path}${encoded ? `?input=${encodeURIComponent(JSON.stringify(encoded))}` : ""}`, { headers })
      : await fetch(`${app.url}/api/trpc/${path}`, { method: "POST", headers, body: encoded ? JSON.stringify(encoded) : undefined });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body: body as { result?: { data?: { json?: unknown } }; error?: { json?: { message?: string; code?: number; data?: { code?: string; httpStatus?: number; path?: string; fieldErrors?: Record<string, string> | null } } } } };
}
