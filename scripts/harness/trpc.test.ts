import http from "node:http";
import type net from "node:net";
import superjson from "superjson";
import { afterEach, describe, expect, it } from "vitest";
import { cookieHeader, decodeResponse, loginToApp, mutationBody, queryUrl, TrpcCallError } from "./trpc";

describe("queryUrl and mutationBody", () => {
  it("puts a query's input, superjson-encoded, in ?input=", () => {
    expect(queryUrl("auth.me")).toBe("/api/trpc/auth.me");
    const url = queryUrl("topology.get", { clusterId: "c1" });
    expect(url.startsWith("/api/trpc/topology.get?input=")).toBe(true);
    expect(JSON.parse(decodeURIComponent(url.split("?input=")[1]!))).toEqual({ json: { clusterId: "c1" } });
  });
  it("sends no input as null, and a Date with its superjson meta", () => {
    expect(JSON.parse(mutationBody())).toEqual({ json: null });
    const body = JSON.parse(mutationBody({ at: new Date("2026-01-05T12:00:00.000Z") })) as { json: unknown; meta: unknown };
    expect(body.json).toEqual({ at: "2026-01-05T12:00:00.000Z" });
    expect(superjson.deserialize(body as Parameters<typeof superjson.deserialize>[0])).toEqual({ at: new Date("2026-01-05T12:00:00.000Z") });
  });
});

describe("decodeResponse", () => {
  it("returns the result, with superjson types restored", () => {
    const data = superjson.serialize({ id: "x", at: new Date(0) });
    expect(decodeResponse(200, JSON.stringify({ result: { data } }), "p")).toEqual({ id: "x", at: new Date(0) });
    expect(decodeResponse(200, JSON.stringify({ result: {} }), "p")).toBeUndefined();
  });
  it("throws the app's message, HTTP status, tRPC code and the procedure", () => {
    const body = JSON.stringify({ error: { json: { message: "Please log in", data: { code: "UNAUTHORIZED" } } } });
    let err: unknown;
    try {
      decodeResponse(401, body, "auth.me");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TrpcCallError);
    expect(err).toMatchObject({ message: "auth.me: Please log in", status: 401, code: "UNAUTHORIZED", path: "auth.me" });
  });
  it("throws on a non-2xx answer that is not JSON, naming the status", () => {
    expect(() => decodeResponse(502, "<html>Bad gateway</html>", "clusters.list")).toThrow("clusters.list: HTTP 502");
  });
});

describe("cookieHeader", () => {
  it("sends back name=value of each Set-Cookie, without attributes", () => {
    expect(cookieHeader(["rb_session=abc; Path=/; HttpOnly; SameSite=Lax", "other=1; Max-Age=10"])).toBe("rb_session=abc; other=1");
    expect(cookieHeader([])).toBe("");
    expect(cookieHeader(["garbage"])).toBe("");
  });
});

describe("loginToApp", () => {
  let server: http.Server | undefined;
  afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

  /** Just enough of the app: JSON-only POSTs, a session cookie from auth.login, a query behind it. */
  async function fakeApp(): Promise<string> {
    server = http.createServer((req, res) => {
      let text = "";
      req.on("data", (c: Buffer) => (text += c.toString()));
      req.on("end", () => {
        const send = (status: number, body: unknown, headers: Record<string, string> = {}) =>
          res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
        const url = new URL(req.url!, "http://x");
        if (req.method === "POST" && req.headers["content-type"] !== "application/json") return send(415, { error: { json: { message: "JSON only" } } });
        if (url.pathname === "/api/trpc/auth.login") {
          const { json } = JSON.parse(text) as { json: { username: string; password: string } };
          if (json.password !== "right") return send(401, { error: { json: { message: "Wrong username or password", data: { code: "UNAUTHORIZED" } } } });
          return send(200, { result: { data: { json: { ok: true } } } }, { "set-cookie": "rb_session=s3cret; Path=/; HttpOnly" });
        }
        if (req.headers.cookie !== "rb_session=s3cret") return send(401, { error: { json: { message: "Please log in", data: { code: "UNAUTHORIZED" } } } });
        if (url.pathname === "/api/trpc/echo.get") {
          const input = JSON.parse(url.searchParams.get("input")!) as Parameters<typeof superjson.deserialize>[0];
          return send(200, { result: { data: superjson.serialize({ got: superjson.deserialize(input), when: new Date(5) }) } });
        }
        if (url.pathname === "/api/trpc/echo.set") return send(200, { result: { data: { json: JSON.parse(text) as unknown } } });
        return send(404, { error: { json: { message: "No procedure", data: { code: "NOT_FOUND" } } } });
      });
    });
    const port = await new Promise<number>((r) => server!.listen(0, "127.0.0.1", () => r((server!.address() as net.AddressInfo).port)));
    return `http://127.0.0.1:${port}/`;
  }

  it("logs in, then calls queries and mutations with the session cookie", async () => {
    const url = await fakeApp();
    const app = await loginToApp(url, "admin", "right");
    expect(app.appUrl).toBe(url.slice(0, -1));
    expect(app.cookie).toBe("rb_session=s3cret");
    expect(await app.query("echo.get", { n: 1 })).toEqual({ got: { n: 1 }, when: new Date(5) });
    expect(await app.mutation("echo.set", { a: "b" })).toEqual({ json: { a: "b" } });
    await expect(app.mutation("nope.x")).rejects.toMatchObject({ status: 404, code: "NOT_FOUND", path: "nope.x" });
  });

  it("fails with the app's message on a wrong password, and says so when nothing listens", async () => {
    const url = await fakeApp();
    await expect(loginToApp(url, "admin", "wrong")).rejects.toThrow("auth.login: Wrong username or password");
    await expect(loginToApp("http://127.0.0.1:1", "a", "b")).rejects.toThrow(/cannot reach the app at http:\/\/127.0.0.1:1/);
  });
});
