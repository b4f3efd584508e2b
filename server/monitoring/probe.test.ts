import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import net from "node:net";
import http from "node:http";
import https from "node:https";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runProbe, describeNetError, MAX_PROBE_BODY_BYTES } from "./probe";
import { probeConfigSchema } from "@/core/monitoring-contract";
import { freePort } from "@/scripts/harness/app";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port));
    const sockets = new Set<net.Socket>();
    server.on("connection", (s) => {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    });
    closers.push(
      () =>
        new Promise<void>((r) => {
          for (const s of sockets) s.destroy();
          server.close(() => r());
        }),
    );
  });
}

type Captured = { method?: string; url?: string; headers?: http.IncomingHttpHeaders; body?: string };

async function httpServer(handler: http.RequestListener, captured?: Captured): Promise<number> {
  const server = http.createServer((req, res) => {
    if (captured) {
      captured.method = req.method;
      captured.url = req.url;
      captured.headers = req.headers;
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        captured.body = body;
        handler(req, res);
      });
    } else handler(req, res);
  });
  return listen(server);
}

const http_ = (o: object = {}) => probeConfigSchema.parse({ protocol: "http", ...o });

describe("runProbe tcp", () => {
  it("succeeds when something listens", async () => {
    const port = await listen(net.createServer((s) => s.end()));
    const r = await runProbe(probeConfigSchema.parse({}), "127.0.0.1", port);
    expect(r.ok).toBe(true);
    expect(r.latencyMs).toBeGreaterThanOrEqual(0);
    expect(r.reason).toBe(`connected to port ${port}`);
  });

  it("uses cfg.port over the inbound's port", async () => {
    const port = await listen(net.createServer((s) => s.end()));
    const closed = await freePort();
    expect((await runProbe(probeConfigSchema.parse({ port }), "127.0.0.1", closed)).ok).toBe(true);
  });

  it("reports connection refused", async () => {
    const port = await freePort();
    const r = await runProbe(probeConfigSchema.parse({}), "127.0.0.1", port);
    expect(r).toMatchObject({ ok: false, reason: "connection refused" });
  });

  it("rejects an invalid port without I/O", async () => {
    const r = await runProbe(probeConfigSchema.parse({}), "127.0.0.1", 0);
    expect(r.ok).toBe(false);
    expect(r.reason).toMatch(/no valid port/);
  });

  it("honours an abort signal", async () => {
    const ac = new AbortController();
    ac.abort();
    expect((await runProbe(probeConfigSchema.parse({}), "127.0.0.1", 1, { signal: ac.signal })).reason).toBe("aborted");
    // Aborted once the request is in (the server never answers): "aborted", not "timed out after 5 s".
    const ac2 = new AbortController();
    const port = await httpServer(() => ac2.abort());
    expect((await runProbe({ ...http_(), timeoutS: 5 }, "127.0.0.1", port, { signal: ac2.signal })).reason).toBe("aborted");
  });
});

describe("runProbe http", () => {
  it("succeeds on 200 and reports the code", async () => {
    const port = await httpServer((_q, res) => res.end("ok"));
    const r = await runProbe(http_(), "127.0.0.1", port);
    expect(r).toMatchObject({ ok: true, code: 200, reason: "status 200" });
  });

  it("fails on a code outside the list", async () => {
    const port = await httpServer((_q, res) => {
      res.statusCode = 503;
      res.end("down");
    });
    const r = await runProbe(http_(), "127.0.0.1", port);
    expect(r).toMatchObject({ ok: false, code: 503, reason: "status 503 not in 200-399" });
    const r2 = await runProbe(http_({ statusCodes: "200,503" }), "127.0.0.1", port);
    expect(r2.ok).toBe(true);
  });

  it("times out with a small timeout", async () => {
    const port = await httpServer(() => {
      /* never answer */
    });
    const r = await runProbe({ ...http_(), timeoutS: 0.2 }, "127.0.0.1", port);
    expect(r).toMatchObject({ ok: false, reason: "timed out after 0.2 s" });
  });

  it("times out while the body trickles", async () => {
    const port = await httpServer((_q, res) => {
      res.write("partial");
    });
    const r = await runProbe({ ...http_({ bodyContains: "never" }), timeoutS: 0.2 }, "127.0.0.1", port);
    expect(r.reason).toBe("timed out after 0.2 s");
  });

  it("timeout wording for whole seconds", async () => {
    const port = await httpServer(() => {});
    const r = await runProbe({ ...http_(), timeoutS: 1 }, "127.0.0.1", port);
    expect(r.reason).toBe("timed out after 1 s");
  });

  it("sends verb, path, host header, request headers and payload", async () => {
    const cap: Captured = {};
    const port = await httpServer((_q, res) => res.end("ok"), cap);
    const r = await runProbe(
      http_({
        method: "POST",
        path: "/health?deep=1",
        hostHeader: "vpn.example.com",
        headers: { "X-Probe": "routeboard", "user-agent": "custom" },
        payload: '{"ping":"pong"}',
      }),
      "127.0.0.1",
      port,
    );
    expect(r.ok).toBe(true);
    expect(cap.method).toBe("POST");
    expect(cap.url).toBe("/health?deep=1");
    expect(cap.headers?.host).toBe("vpn.example.com");
    expect(cap.headers?.["x-probe"]).toBe("routeboard");
    expect(cap.headers?.["user-agent"]).toBe("custom");
    expect(cap.headers?.["content-length"]).toBe(String(Buffer.byteLength('{"ping":"pong"}')));
    expect(cap.body).toBe('{"ping":"pong"}');
  });

  it("HEAD and OPTIONS work", async () => {
    const cap: Captured = {};
    const port = await httpServer((_q, res) => res.end(), cap);
    expect((await runProbe(http_({ method: "HEAD" }), "127.0.0.1", port)).ok).toBe(true);
    expect(cap.method).toBe("HEAD");
    expect((await runProbe(http_({ method: "OPTIONS" }), "127.0.0.1", port)).ok).toBe(true);
    expect(cap.method).toBe("OPTIONS");
  });

  it("matches header values with case-insensitive names", async () => {
    const port = await httpServer((_q, res) => {
      res.setHeader("X-Backend-State", "ready");
      res.setHeader("Content-Type", "text/plain");
      res.end("ok");
    });
    expect((await runProbe(http_({ headerMatch: { "x-backend-STATE": "ready" } }), "127.0.0.1", port)).ok).toBe(true);
    const wrong = await runProbe(http_({ headerMatch: { "X-Backend-State": "draining" } }), "127.0.0.1", port);
    // The reason names the header, never the value the server sent (viewers see reasons).
    expect(wrong).toMatchObject({ ok: false, code: 200, reason: "header X-Backend-State did not match" });
    const missing = await runProbe(http_({ headerMatch: { "X-Missing": "1" } }), "127.0.0.1", port);
    expect(missing.reason).toBe("header X-Missing missing");
  });

  it("matches a body substring", async () => {
    const port = await httpServer((_q, res) => res.end('{"status":"UP","db":"ok"}'));
    expect((await runProbe(http_({ bodyContains: '"status":"UP"' }), "127.0.0.1", port)).ok).toBe(true);
    const r = await runProbe(http_({ bodyContains: "DOWN" }), "127.0.0.1", port);
    expect(r).toMatchObject({ ok: false, code: 200, reason: "body does not contain the expected text" });
    expect(r.reason).not.toMatch(/UP|db|ok/);
  });

  it("finds the body substring across chunks", async () => {
    const port = await httpServer((_q, res) => {
      res.write("hel");
      setTimeout(() => res.end("lo world"), 20);
    });
    expect((await runProbe(http_({ bodyContains: "hello" }), "127.0.0.1", port)).ok).toBe(true);
  });

  it("reads at most 64 KB of the body", async () => {
    const port = await httpServer((_q, res) => {
      res.write("x".repeat(MAX_PROBE_BODY_BYTES));
      res.end("needle");
    });
    const r = await runProbe(http_({ bodyContains: "needle" }), "127.0.0.1", port);
    expect(r.ok).toBe(false);
    expect(r.reason).toBe("body does not contain the expected text in the first 64 KB");
    // a huge body does not hang the probe
    const big = await httpServer((_q, res) => {
      const chunk = "y".repeat(16 * 1024);
      let n = 0;
      const pump = () => {
        while (n++ < 10_000) if (!res.write(chunk)) return void res.once("drain", pump);
        res.end();
      };
      pump();
    });
    expect((await runProbe(http_({ bodyContains: "yyy" }), "127.0.0.1", big)).ok).toBe(true);
  });

  it("connection refused for http", async () => {
    const r = await runProbe(http_(), "127.0.0.1", await freePort());
    expect(r).toMatchObject({ ok: false, reason: "connection refused" });
    expect(r.code).toBeUndefined();
  });

  it("a non-HTTP listener is a failure, not a crash", async () => {
    const port = await listen(net.createServer((s) => s.end("SSH-2.0-OpenSSH\r\n")));
    const r = await runProbe({ ...http_(), timeoutS: 2 }, "127.0.0.1", port);
    expect(r.ok).toBe(false);
  });

  it("reports an invalid status code spec instead of throwing", async () => {
    const r = await runProbe({ ...http_(), statusCodes: "abc" }, "127.0.0.1", 1);
    expect(r.reason).toMatch(/^invalid status codes: /);
  });
});

let tls: { key: string; cert: string } | null = null;
let tlsDir = "";
beforeAll(() => {
  try {
    tlsDir = mkdtempSync(join(tmpdir(), "rb-probe-tls-"));
    execFileSync(
      "openssl",
      ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(tlsDir, "k.pem"), "-out", join(tlsDir, "c.pem"),
        "-days", "1", "-subj", "/CN=localhost"],
      { stdio: "ignore" },
    );
    tls = { key: readFileSync(join(tlsDir, "k.pem"), "utf8"), cert: readFileSync(join(tlsDir, "c.pem"), "utf8") };
  } catch {
    tls = null;
  }
});
afterAll(() => {
  if (tlsDir) rmSync(tlsDir, { recursive: true, force: true });
});

describe("runProbe https", () => {
  it("accepts a self-signed certificate and sends SNI from the host header", async (ctx) => {
    if (!tls) return ctx.skip();
    let sni: string | undefined;
    const server = https.createServer(tls, (req, res) => {
      sni = (req.socket as import("node:tls").TLSSocket).servername || undefined;
      res.end("secure ok");
    });
    const port = await listen(server);
    const r = await runProbe(
      probeConfigSchema.parse({ protocol: "https", hostHeader: "vpn.example.com", bodyContains: "secure" }),
      "127.0.0.1",
      port,
    );
    expect(r).toMatchObject({ ok: true, code: 200 });
    expect(sni).toBe("vpn.example.com");
  });

  it("https against a plain HTTP port fails with a TLS-ish reason", async () => {
    const port = await httpServer((_q, res) => res.end("plain"));
    const r = await runProbe({ ...probeConfigSchema.parse({ protocol: "https" }), timeoutS: 2 }, "127.0.0.1", port);
    expect(r.ok).toBe(false);
  });
});

describe("describeNetError", () => {
  it("words common errors", () => {
    const e = (code: string) => Object.assign(new Error(code), { code });
    expect(describeNetError(e("ECONNRESET"), "h", 1)).toBe("connection reset by peer");
    expect(describeNetError(e("ENOTFOUND"), "nope.invalid", 1)).toBe("host nope.invalid not found");
    expect(describeNetError(e("EHOSTUNREACH"), "h", 1)).toBe("host unreachable");
    expect(describeNetError(e("ERR_SSL_WRONG_VERSION_NUMBER"), "h", 1)).toMatch(/^TLS error/);
  });
});
