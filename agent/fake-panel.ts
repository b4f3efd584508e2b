/**
 * A stand-in for the panel in the agent's tests: speaks the contract of core/agent-wire.ts
 * (Bearer token, ETag / If-None-Match / ?wait long-poll, ?delta=1 from the versions it
 * served, brotli when the agent accepts it, report acks with (instance, seq) de-duplication,
 * 429 with Retry-After, heartbeats with or without a load). The real panel is covered by the
 * end-to-end test.
 */
import http from "node:http";
import type net from "node:net";
import zlib from "node:zlib";
import { agentReportSchema, heartbeatBodySchema, MAX_HEARTBEAT_BODY_BYTES, type AgentConfig, type AgentReport } from "../core/agent-wire";
import { canonicalJson } from "../core/config-version";
import { formatZodError } from "../core/zod-format";

export interface FakeReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export class FakePanel {
  readonly reports: AgentReport[] = [];
  /** Traffic the panel counted (after de-duplication), per email. */
  readonly counted = new Map<string, { up: number; down: number }>();
  readonly seen = new Set<string>();
  token = "good-token";
  /** Traffic limits in bytes per email: acks then carry the remaining bytes, as the panel's do (issue 25 point 8). */
  readonly limitBytes = new Map<string, number>();
  /** "down": every request gets 503 (the panel is away). */
  down = false;
  /** The Retry-After (s) of those 503s; null sends none (the agent then waits its default). */
  downRetryAfterS: number | null = null;
  /** Reports answered 503 because the panel was down. */
  reportsRefusedWhileDown = 0;
  /** Replies to the next reports, in order, before the normal handling. */
  readonly nextReplies: FakeReply[] = [];
  configRequests = 0;
  /** The query string of every config request, in order. */
  readonly configQueries: string[] = [];
  deltaAnswers = 0;
  /** Sends the next delta with its last added user left out: it no longer hashes to its version. */
  corruptNextDelta = false;
  /** Every config served, by version: where a delta may start. */
  private readonly served = new Map<string, AgentConfig>();
  /** When each heartbeat arrived; `heartbeatStatus` answers them (404 = a panel that predates heartbeats). */
  readonly heartbeats: number[] = [];
  /** Each heartbeat's body as it came (parsed JSON, or the text when it is not JSON), null when it had none; in order. */
  readonly heartbeatBodies: unknown[] = [];
  heartbeatStatus = 204;
  /** A panel that disagrees on the heartbeat contract: a heartbeat with a body gets 400 (one without, `heartbeatStatus`). */
  refuseHeartbeatBodies = false;
  private config: AgentConfig;
  private waiters: Array<() => void> = [];
  private server: http.Server;
  url = "";

  constructor(config: AgentConfig) {
    this.config = config;
    this.server = http.createServer((req, res) => void this.handle(req, res));
  }

  async start(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const w of this.waiters) w();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  setConfig(config: AgentConfig) {
    this.config = config;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** With delta=1: only the users changed since `from` when that is all that changed, as the panel does. */
  private configAnswer(from: string | undefined): unknown {
    const base = from === undefined ? undefined : this.served.get(from);
    const rest = ({ version: _v, users: _u, ...r }: AgentConfig) => canonicalJson(r);
    if (!base || rest(base) !== rest(this.config)) return { kind: "full", ...this.config };
    const before = new Map(base.users.map((u) => [u.email, u.id]));
    const after = new Map(this.config.users.map((u) => [u.email, u.id]));
    const usersAdded = this.config.users.filter((u) => before.get(u.email) !== u.id);
    const usersRemoved = base.users.filter((u) => after.get(u.email) !== u.id).map((u) => u.email);
    if (this.corruptNextDelta) {
      this.corruptNextDelta = false;
      usersAdded.pop();
    }
    this.deltaAnswers++;
    return { kind: "delta", from, version: this.config.version, usersAdded, usersRemoved };
  }

  private send(res: http.ServerResponse, reply: FakeReply) {
    res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
    res.end(reply.body === undefined ? "" : JSON.stringify(reply.body));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const url = new URL(req.url ?? "/", "http://x");
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (this.down) {
      if (url.pathname === "/api/agent/report") this.reportsRefusedWhileDown++;
      return this.send(res, { status: 503, body: { error: "down" }, headers: this.downRetryAfterS === null ? undefined : { "retry-after": String(this.downRetryAfterS) } });
    }
    if (req.headers.authorization !== `Bearer ${this.token}`) return this.send(res, { status: 401, body: { error: "bad token" } });
    if (url.pathname === "/api/agent/config" && req.method === "GET") {
      this.configRequests++;
      this.configQueries.push(url.search);
      const wait = Number(url.searchParams.get("wait") ?? 0);
      const etag = () => `"${this.config.version}"`;
      if (req.headers["if-none-match"] === etag() && wait > 0) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, wait * 1000);
          this.waiters.push(() => {
            clearTimeout(t);
            resolve();
          });
          res.once("close", () => clearTimeout(t));
        });
      }
      if (req.headers["if-none-match"] === etag()) return this.send(res, { status: 304, headers: { etag: etag() } });
      this.served.set(this.config.version, this.config);
      const from = /^"(.*)"$/.exec(req.headers["if-none-match"] ?? "")?.[1];
      const body = JSON.stringify(url.searchParams.get("delta") === "1" ? this.configAnswer(from) : this.config);
      const br = /\bbr\b/.test(req.headers["accept-encoding"] ?? "");
      res.writeHead(200, { "content-type": "application/json", etag: etag(), ...(br ? { "content-encoding": "br" } : {}) });
      return res.end(br ? zlib.brotliCompressSync(body) : body);
    }
    if (url.pathname === "/api/agent/heartbeat" && req.method === "POST") {
      this.heartbeats.push(Date.now());
      const raw = Buffer.concat(chunks);
      let body: unknown = null;
      if (raw.length > 0) {
        try {
          body = JSON.parse(raw.toString("utf8"));
        } catch {
          body = raw.toString("utf8");
        }
      }
      this.heartbeatBodies.push(body);
      // As the panel checks a body: its size, its type, then its fields (core/agent-wire.ts).
      if (raw.length > 0 && this.heartbeatStatus === 204) {
        if (raw.length > MAX_HEARTBEAT_BODY_BYTES) return this.send(res, { status: 413, body: { error: "heartbeat body too large" } });
        if (req.headers["content-type"] !== "application/json") return this.send(res, { status: 400, body: { error: "expected application/json" } });
        if (this.refuseHeartbeatBodies) return this.send(res, { status: 400, body: { error: "load: not a field of a heartbeat" } });
        const parsed = heartbeatBodySchema.safeParse(body);
        if (!parsed.success) return this.send(res, { status: 400, body: { error: formatZodError(parsed.error) } });
      }
      res.writeHead(this.heartbeatStatus);
      return res.end();
    }
    if (url.pathname === "/api/agent/report" && req.method === "POST") {
      const parsed = agentReportSchema.safeParse(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      if (!parsed.success) return this.send(res, { status: 400, body: { error: formatZodError(parsed.error) } });
      this.reports.push(parsed.data);
      const reply = this.nextReplies.shift();
      if (reply) return this.send(res, reply);
      const r = parsed.data;
      let duplicate = false;
      if (r.instance && r.seq !== undefined) {
        const key = `${r.instance}/${r.seq}`;
        duplicate = this.seen.has(key);
        if (!duplicate) {
          this.seen.add(key);
          for (const u of r.users ?? []) {
            const e = this.counted.get(u.email) ?? { up: 0, down: 0 };
            e.up += u.up;
            e.down += u.down;
            this.counted.set(u.email, e);
          }
        }
      }
      const users = r.users ?? [];
      const limits =
        this.limitBytes.size > 0
          ? users
              .filter((u) => this.limitBytes.has(u.email))
              .map((u) => {
                const c = this.counted.get(u.email) ?? { up: 0, down: 0 };
                return { email: u.email, remainingBytes: Math.max(0, this.limitBytes.get(u.email)! - c.up - c.down) };
              })
          : undefined;
      return this.send(res, { status: 200, body: { ok: true, status: "healthy", duplicate, ...(limits ? { limits } : {}) } });
    }
    this.send(res, { status: 404, body: { error: "not found" } });
  }
}

export async function waitFor<T>(what: string, fn: () => T | undefined | null | false | Promise<T | undefined | null | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
