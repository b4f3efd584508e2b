/**
 * The active probe runner: one probe of one target. I/O (node:net, node:http, node:https).
 * Never rejects: every failure is an outcome with a human reason. A reason quotes nothing
 * the answer contained but its status code (issue 21, point 6): a header check says which
 * header did not match, never its value; a body check says the text was not found.
 */
import net from "node:net";
import http from "node:http";
import https from "node:https";
import type { ProbeConfig } from "@/core/monitoring-contract";
import { tryParseStatusCodes, matchesStatusCode } from "@/core/status-codes";

export interface ProbeOutcome {
  ok: boolean;
  /** HTTP status code, when a response arrived. */
  code?: number;
  /** Time to TCP connect (tcp) or to the response headers (http/https), ms. */
  latencyMs: number;
  reason: string;
}

export interface RunProbeOptions {
  signal?: AbortSignal;
}

/** The probe reads at most this much of the body when looking for `bodyContains`. */
export const MAX_PROBE_BODY_BYTES = 64 * 1024;
export const PROBE_USER_AGENT = "Routeboard-Probe/1";

/** Fields runProbe reads; a parsed ProbeConfig fits. */
export type ProbeRunConfig = Pick<ProbeConfig, "protocol" | "timeoutS"> &
  Partial<
    Pick<
      ProbeConfig,
      "port" | "method" | "path" | "hostHeader" | "headers" | "payload" | "statusCodes" | "headerMatch" | "bodyContains"
    >
  >;

function clip(s: string, n = 60): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

function fmtSeconds(s: number): string {
  return `${Number.isInteger(s) ? s : Number(s.toFixed(3))} s`;
}

/** Human wording for socket / TLS errors. */
export function describeNetError(err: unknown, host: string, port: number): string {
  const e = err as NodeJS.ErrnoException | undefined;
  switch (e?.code) {
    case "ECONNREFUSED":
      return "connection refused";
    case "ECONNRESET":
      return "connection reset by peer";
    case "EPIPE":
      return "connection closed by peer";
    case "ENOTFOUND":
      return `host ${host} not found`;
    case "EAI_AGAIN":
      return `DNS lookup for ${host} failed (temporary)`;
    case "EHOSTUNREACH":
      return "host unreachable";
    case "ENETUNREACH":
      return "network unreachable";
    case "ETIMEDOUT":
      return "connection timed out";
    case "EADDRNOTAVAIL":
      return `address ${host}:${port} not available`;
    case "HPE_INVALID_CONSTANT":
    case "HPE_INVALID_VERSION":
    case "HPE_INVALID_STATUS":
      return "not an HTTP response";
    default:
      break;
  }
  const msg = e?.message ?? String(err);
  if (e?.code?.startsWith("ERR_SSL") || e?.code === "EPROTO" || /SSL|TLS/i.test(msg)) return `TLS error: ${clip(msg, 120)}`;
  return clip(msg, 160) || "connection failed";
}

function headerValueOf(v: string | string[] | undefined): string | undefined {
  if (v === undefined) return undefined;
  return Array.isArray(v) ? v.join(", ") : v;
}

export function runProbe(
  cfg: ProbeRunConfig,
  host: string,
  defaultPort: number,
  opts: RunProbeOptions = {},
): Promise<ProbeOutcome> {
  const port = cfg.port ?? defaultPort;
  const started = performance.now();
  const elapsed = () => Math.max(0, Math.round((performance.now() - started) * 10) / 10);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    return Promise.resolve({ ok: false, latencyMs: 0, reason: `no valid port to probe (${String(port)})` });
  }
  if (opts.signal?.aborted) return Promise.resolve({ ok: false, latencyMs: 0, reason: "aborted" });
  const timeoutMs = Math.max(1, (Number.isFinite(cfg.timeoutS) ? cfg.timeoutS : 30) * 1000);

  return new Promise<ProbeOutcome>((resolve) => {
    let settled = false;
    let cleanup: () => void = () => {};
    const finish = (o: ProbeOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      try {
        cleanup();
      } catch {
        /* ignore */
      }
      resolve(o);
    };
    const timer = setTimeout(
      () => finish({ ok: false, latencyMs: elapsed(), reason: `timed out after ${fmtSeconds(timeoutMs / 1000)}` }),
      timeoutMs,
    );
    const onAbort = () => finish({ ok: false, latencyMs: elapsed(), reason: "aborted" });
    opts.signal?.addEventListener("abort", onAbort, { once: true });

    if (cfg.protocol === "tcp") {
      const sock = net.connect({ host, port });
      cleanup = () => sock.destroy();
      sock.once("connect", () => finish({ ok: true, latencyMs: elapsed(), reason: `connected to port ${port}` }));
      sock.once("error", (err) => finish({ ok: false, latencyMs: elapsed(), reason: describeNetError(err, host, port) }));
      return;
    }

    const codes = tryParseStatusCodes(cfg.statusCodes ?? "200-399");
    if (!codes.ok) {
      finish({ ok: false, latencyMs: 0, reason: `invalid status codes: ${codes.error}` });
      return;
    }
    const method = cfg.method ?? "GET";
    const headers: Record<string, string> = { "User-Agent": PROBE_USER_AGENT, Accept: "*/*" };
    for (const [k, v] of Object.entries(cfg.headers ?? {})) {
      // the caller's headers replace ours case-insensitively
      for (const own of Object.keys(headers)) if (own.toLowerCase() === k.toLowerCase()) delete headers[own];
      headers[k] = v;
    }
    if (cfg.hostHeader) headers.Host = cfg.hostHeader;
    const payload = cfg.payload !== undefined ? Buffer.from(cfg.payload, "utf8") : undefined;
    if (payload) headers["Content-Length"] = String(payload.length);

    const isHttps = cfg.protocol === "https";
    const sniHost = (cfg.hostHeader ?? host).replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
    const reqOpts: https.RequestOptions = {
      host,
      port,
      method,
      path: cfg.path ?? "/",
      headers,
      agent: false,
    };
    if (isHttps) {
      reqOpts.rejectUnauthorized = false; // VPN servers commonly use self-signed certificates
      if (!net.isIP(sniHost)) reqOpts.servername = sniHost;
    }
    let req: http.ClientRequest;
    try {
      req = (isHttps ? https : http).request(reqOpts);
    } catch (err) {
      finish({ ok: false, latencyMs: elapsed(), reason: describeNetError(err, host, port) });
      return;
    }
    let res: http.IncomingMessage | undefined;
    cleanup = () => {
      res?.destroy();
      req.destroy();
    };
    req.once("error", (err) => finish({ ok: false, latencyMs: elapsed(), reason: describeNetError(err, host, port) }));
    req.once("response", (r) => {
      res = r;
      const latencyMs = elapsed();
      const code = r.statusCode ?? 0;
      const fail = (reason: string) => finish({ ok: false, code, latencyMs, reason });
      r.once("error", (err) => fail(describeNetError(err, host, port)));
      if (!matchesStatusCode(codes.ranges, code)) {
        fail(`status ${code} not in ${cfg.statusCodes ?? "200-399"}`);
        return;
      }
      for (const [name, expected] of Object.entries(cfg.headerMatch ?? {})) {
        const actual = headerValueOf(r.headers[name.toLowerCase()]);
        if (actual === undefined) {
          fail(`header ${name} missing`);
          return;
        }
        if (actual.trim() !== expected.trim()) {
          // Never the value: reasons are shown to viewers, and a probe may point at any page.
          fail(`header ${name} did not match`);
          return;
        }
      }
      const needle = cfg.bodyContains;
      const success = () => finish({ ok: true, code, latencyMs, reason: `status ${code}` });
      if (!needle) {
        success();
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      const check = (final: boolean) => {
        const body = Buffer.concat(chunks, size).toString("utf8");
        if (body.includes(needle)) {
          success();
          return true;
        }
        if (final) {
          const capped = size >= MAX_PROBE_BODY_BYTES ? ` in the first ${MAX_PROBE_BODY_BYTES / 1024} KB` : "";
          fail(`body does not contain the expected text${capped}`);
          return true;
        }
        return false;
      };
      r.on("data", (chunk: Buffer) => {
        if (settled) return;
        const room = MAX_PROBE_BODY_BYTES - size;
        const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
        chunks.push(part);
        size += part.length;
        check(size >= MAX_PROBE_BODY_BYTES);
      });
      r.once("end", () => check(true));
      r.once("aborted", () => check(true));
      r.once("close", () => check(true));
    });
    if (payload) req.end(payload);
    else req.end();
  });
}
