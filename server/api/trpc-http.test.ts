/**
 * The /api/trpc front door over real HTTP: batching, body size, origin and content-type
 * checks, broken cookies, proxy headers. One in-process server on a fresh PGlite.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { openTestDatabase, type TestDatabase } from "@/db/testing";
import { operators } from "@/db/schema";
import { hashPassword } from "@/server/auth/password";
import type { ProxyTrust } from "@/server/http/client";

process.env.DATA_DIR ??= mkdtempSync(path.join(os.tmpdir(), "rb-trpc-http-"));
const PASSWORD = "harbour-otter-lantern-42";

let t: TestDatabase;
const servers: http.Server[] = [];

async function serve(trust: ProxyTrust): Promise<string> {
  const { createTrpcHandler } = await import("./trpc-http");
  const handler = createTrpcHandler(undefined, trust);
  const server = http.createServer((req, res) => handler(req, res, new URL(req.url ?? "/", "http://localhost")));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let base: string;
beforeAll(async () => {
  t = await openTestDatabase("pglite");
  // The handler's procedures use the process-wide database: make it this one.
  (globalThis as Record<symbol, unknown>)[Symbol.for("routeboard.database")] = Promise.resolve(t);
  await t.db.insert(operators).values({ username: "owner", passwordHash: await hashPassword(PASSWORD), role: "owner" });
  base = await serve({ trustProxy: 0 });
});
afterAll(async () => {
  for (const s of servers) s.close();
  await t?.dispose();
});

const json = { "content-type": "application/json" };
const loginBody = (username: string, password: string) => JSON.stringify({ json: { username, password } });

function login(url: string, username: string, password: string, headers: Record<string, string> = {}) {
  return fetch(`${url}/api/trpc/auth.login`, { method: "POST", headers: { ...json, ...headers }, body: loginBody(username, password) });
}

describe("finding 1: password guesses cannot be batched or parallelised past the throttle", () => {
  it("refuses a batch that contains auth.login, with a clear message", async () => {
    const n = 501;
    const body = JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [i, { json: { username: "owner", password: i === n - 1 ? PASSWORD : `wrong-${i}` } }])));
    const res = await fetch(`${base}/api/trpc/${Array(n).fill("auth.login").join(",")}?batch=1`, { method: "POST", headers: json, body });
    expect(res.status).toBe(400);
    expect(res.headers.get("set-cookie")).toBeNull();
    expect(JSON.stringify(await res.json())).toContain("auth.login cannot be batched");
    const one = await fetch(`${base}/api/trpc/auth.login?batch=1`, { method: "POST", headers: json, body: JSON.stringify({ 0: { json: { username: "owner", password: PASSWORD } } }) });
    expect(one.status).toBe(400);
  });

  it("limits the size of any batch", async () => {
    const paths = Array(50).fill("auth.status").join(",");
    const input = encodeURIComponent(JSON.stringify({}));
    const res = await fetch(`${base}/api/trpc/${paths}?batch=1&input=${input}`);
    expect(res.status).toBe(400);
    const ok = await fetch(`${base}/api/trpc/auth.status,auth.status?batch=1&input=${input}`);
    expect(ok.status).toBe(200);
  });

  it("60 parallel wrong guesses for one user get 429 beyond the free ones", async () => {
    // The clock stands still: on a busy machine the 60 requests may take longer than the first
    // 2 s block, and a guess after a block has ended is rightly free. That is not this test.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => login(base, "victim", `wrong-password-${i}`))).finally(() => vi.useRealTimers());
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(55);
    expect(Number(results.find((r) => r.status === 429)!.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});

describe("finding 3: body limit", () => {
  it("answers 413 from Content-Length before reading the body", async () => {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request(`${base}/api/trpc/auth.login`, { method: "POST", headers: { ...json, "content-length": String(100_000_000) } }, resolve);
      req.on("error", reject);
      req.write("{"); // and never the other 99,999,999 bytes
    });
    expect(res.statusCode).toBe(413);
    res.resume();
  });

  it("answers 413 for a chunked body once it passes the limit", async () => {
    const chunk = "x".repeat(64 * 1024);
    const stream = new ReadableStream({
      pull(c) {
        c.enqueue(new TextEncoder().encode(chunk));
      },
    });
    const res = await fetch(`${base}/api/trpc/auth.login`, { method: "POST", headers: json, body: stream, duplex: "half" } as RequestInit);
    expect(res.status).toBe(413);
  });
});

describe("finding 7: a malformed cookie is no session", () => {
  it("answers like a request without a cookie, never 500", async () => {
    const status = await fetch(`${base}/api/trpc/auth.status`, { headers: { cookie: "rb_session=%zz" } });
    expect(status.status).toBe(200);
    const list = await fetch(`${base}/api/trpc/clusters.list`, { headers: { cookie: "rb_session=%zz; other=%E0%A4%A" } });
    expect(list.status).toBe(401);
  });
});

describe("finding 8: cross-site requests and non-JSON bodies", () => {
  it("refuses a cross-site or same-site browser request with 403", async () => {
    for (const site of ["cross-site", "same-site"]) {
      const res = await fetch(`${base}/api/trpc/auth.logout`, { method: "POST", headers: { ...json, "sec-fetch-site": site }, body: "{}" });
      expect(res.status).toBe(403);
      expect(JSON.stringify(await res.json())).toContain("Cross-site request refused");
    }
  });

  it("refuses a foreign Origin, accepts the dashboard's own and none at all", async () => {
    const host = new URL(base).host;
    const foreign = await login(base, "owner", PASSWORD, { origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
    expect((await login(base, "owner", PASSWORD, { origin: `http://${host}` })).status).toBe(200);
    expect((await login(base, "owner", PASSWORD, { "sec-fetch-site": "same-origin", origin: `http://${host}` })).status).toBe(200);
    expect((await login(base, "owner", PASSWORD)).status).toBe(200);
  });

  it("with PUBLIC_URL, only that origin is the dashboard's", async () => {
    const url = await serve({ trustProxy: 0, publicUrl: "https://panel.example.com/" });
    expect((await login(url, "owner", PASSWORD, { origin: "https://panel.example.com" })).status).toBe(200);
    expect((await login(url, "owner", PASSWORD, { origin: `http://${new URL(url).host}` })).status).toBe(403);
  });

  it("refuses multipart, octet-stream and text bodies with 415", async () => {
    for (const type of ["multipart/form-data; boundary=x", "application/octet-stream", "text/plain", ""]) {
      const res = await fetch(`${base}/api/trpc/auth.logout`, { method: "POST", headers: type ? { "content-type": type } : {}, body: "x" });
      expect(res.status, type).toBe(415);
    }
  });
});

describe("finding 4: one address does not lock everyone out", () => {
  it("after 35 failures with different usernames from one address, a colleague's correct password works", async () => {
    const shared = await serve({ trustProxy: 1 });
    const proxy = { "x-forwarded-for": "192.0.2.44" };
    for (let i = 0; i < 35; i++) await login(shared, `someone-${i}`, "wrong-password", proxy);
    expect((await login(shared, "owner", PASSWORD, proxy)).status).toBe(200);
    // The guesser's own usernames, failed before, are held back.
    expect((await login(shared, "someone-1", "wrong-password", proxy)).status).toBe(429);
  });
});

describe("finding 4: proxies", () => {
  it("behind a trusted proxy, a username is throttled whatever address X-Forwarded-For names", async () => {
    // With TRUST_PROXY=1 the right-most X-Forwarded-For entry is the client.
    const proxied = await serve({ trustProxy: 1 });
    const results = [];
    for (let i = 0; i < 6; i++) results.push((await login(proxied, "xff-user", "wrong-password", { "x-forwarded-for": `1.1.1.1, 10.1.0.${i}` })).status);
    expect(results.at(-1)).toBe(429); // per username, whatever the address
  });

  it("marks the cookie Secure from the first X-Forwarded-Proto only behind a trusted proxy", async () => {
    const proxied = await serve({ trustProxy: 1 });
    const behind = await login(proxied, "owner", PASSWORD, { "x-forwarded-proto": "https,http" });
    expect(behind.headers.get("set-cookie")).toMatch(/; Secure/);
    const plain = await login(proxied, "owner", PASSWORD, { "x-forwarded-proto": "http,https" });
    expect(plain.headers.get("set-cookie")).not.toMatch(/Secure/);
    const untrusted = await login(base, "owner", PASSWORD, { "x-forwarded-proto": "https" });
    expect(untrusted.headers.get("set-cookie")).not.toMatch(/Secure/);
  });
});

describe("finding 10: headers on tRPC answers", () => {
  it("sends nosniff, no framing and a referrer policy", async () => {
    const res = await fetch(`${base}/api/trpc/auth.status`);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("referrer-policy")).toBe("strict-origin-when-cross-origin");
  });
});
