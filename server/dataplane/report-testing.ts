/**
 * Test support (imported only by tests): the real POST /api/agent/report route
 * (agentReportRoute) on an in-process node:http server on 127.0.0.1, taking reports with a
 * test's database, its own ReportBatcher and TokenBuckets, and a clock the test sets. Reports go
 * over real HTTP through every check of the route (token, size, admission, rate limit, body,
 * group commit): there is no other way in.
 *
 * The batcher runs its fold job on its timers as in the app: a test that needs the journal
 * folded at a point calls `fold()` (the batcher's own job, which joins a fold under way), never a
 * fold of its own beside it. `close()` before disposing of the database: it stops the timers and
 * folds what is left.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Database } from "@/db/client";
import type { AgentReportAck } from "@/core/agent-wire";
import { agentReportRoute } from "./report-http";
import { ReportBatcher } from "./report-batcher";
import { TokenBuckets } from "./rate-limit";

export interface ReportAnswer {
  httpStatus: number;
  body: AgentReportAck | { error: string };
}

export class TestReportIntake {
  /** The clock of the route and its batcher (ms since the epoch); `send` may move it. */
  nowMs: number;
  readonly batcher: ReportBatcher;
  readonly buckets = new TokenBuckets();

  private constructor(
    database: Database,
    nowMs: number,
    private readonly server: http.Server,
  ) {
    this.nowMs = nowMs;
    const db = () => Promise.resolve(database.db);
    const now = () => this.nowMs;
    this.batcher = new ReportBatcher(db, now);
    this.batcher.start(database.kind);
    const route = agentReportRoute({ db, batcher: this.batcher, buckets: this.buckets, now });
    server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      if (url.pathname !== "/api/agent/report") {
        res.writeHead(404).end();
        return;
      }
      Promise.resolve(route(req, res, url)).catch(() => {
        if (!res.headersSent) res.writeHead(500).end("Internal error");
      });
    });
  }

  /** Starts the route on 127.0.0.1 (a free port) for `database`, its clock at `nowMs`. */
  static async start(database: Database, nowMs = Date.now()): Promise<TestReportIntake> {
    const server = http.createServer();
    const intake = new TestReportIntake(database, nowMs, server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return intake;
  }

  /** http://127.0.0.1:<port>, where agents under test send their reports. */
  get base(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private get url(): string {
    return `${this.base}/api/agent/report`;
  }

  /**
   * POSTs `body` with this Authorization header (none when undefined) and returns the answer.
   * `nowMs` sets the clock first (it stays there); sends that overlap share the clock.
   */
  async send(authorization: string | undefined, body: string, nowMs?: number): Promise<ReportAnswer> {
    if (nowMs !== undefined) this.nowMs = nowMs;
    const res = await fetch(this.url, {
      method: "POST",
      headers: { "content-type": "application/json", ...(authorization === undefined ? {} : { authorization }) },
      body,
    });
    return { httpStatus: res.status, body: (await res.json()) as ReportAnswer["body"] };
  }

  /** Folds everything journalled so far through the batcher's fold job. */
  fold(): Promise<void> {
    return this.batcher.folds.fold();
  }

  /** Stops the server, writes what is queued and folds the rest (ReportBatcher.stop). */
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.batcher.stop();
  }
}
