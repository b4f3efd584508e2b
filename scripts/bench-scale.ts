/**
 * npm run bench:scale — the panel at internet scale (issue 23, point 5): the real app
 * (server/main.ts in its own process, scripts/harness/app.ts) on PostgreSQL with 1,000,000
 * subscribers and 1,000 simulated agents in this process; `--quick` is 100,000 subscribers and
 * 200 agents on PGlite. Flags: scripts/bench/scale-args.ts.
 *
 * - Seeded in bulk before the app starts (INSERT … SELECT from generate_series): one cluster,
 *   a server per agent with one Reality inbound, the subscribers.
 * - Agents long-poll GET /api/agent/config?wait=60&delta=1&scheme=2 with If-None-Match as agent/agent.ts
 *   does, and POST /api/agent/report once per report interval (60 s, start times spread over
 *   it) with per-user traffic for their share of the online users. They start at the version
 *   the bench computed from the seeded database with the panel's own build
 *   (buildClusterConfigs): 1,000 downloads of the same full config would only measure the
 *   loopback. Agent 0 fetches its full config for real (fullConfigBytes), keeps every delta it
 *   gets, and after the run rebuilds the config from them and checks that it hashes to the last
 *   version, as a real agent does on each delta.
 * - The run makes `changesPerS` subscriber changes a second through tRPC (half new
 *   subscribers, half seeded ones disabled) for `durationS`, then waits for the stragglers.
 * - Figures: propagation = per change, from the mutation sent until the last agent got a
 *   config with it (its email in a delta), p50/p99 over changes; bytes = config bodies on the
 *   wire (compressed) per agent per change; fold lag = the most an acked report waited for
 *   its traffic to reach the subscribers' totals, by the panel's bound on /metrics
 *   (routeboard_traffic_fold_lag_seconds, sampled every 500 ms); /api/health sampled every
 *   250 ms from a thread of its own (healthProbe); the app's RSS from /proc every second.
 * - BENCH_APP_FLAGS="…" passes node flags to the app (with --trace-gc its output is shown);
 *   BENCH_APP_PROF=<folder> writes its CPU profile there.
 */
import http from "node:http";
import { once } from "node:events";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { sql } from "drizzle-orm";
import { openDatabase, type Db } from "@/db/client";
import { preparePgliteTemplates } from "@/db/pglite-template";
import { rowsOf } from "@/db/rows";
import { clusters, routes } from "@/db/schema";
import { agentConfigDeltaSchema, agentConfigSchema, type AgentConfig } from "@/core/agent-wire";
import { applyUserDelta, versionOfConfig } from "@/core/config-version";
import { buildClusterConfigs } from "@/server/dataplane/config";
import { startApp, type AppProcess } from "./harness/app";
import { startPg, type PgServer } from "./harness/postgres";
import { loginToApp, type LoggedInClient } from "./harness/trpc";
import { aims, onlineShare, parseScaleArgs, percentile, type ScaleOptions } from "./bench/scale-args";

const REPORT_INTERVAL_S = 60;
const WAIT_S = 60;
const UP = 1000;
const DOWN = 5000;
const ADMIN = { username: "bench", password: "bench-scale-password-1" };
const token = (k: number) => `rba_scale_${k}`;

interface Seeded {
  clusterId: string;
  /** Per agent: its server's id and the version of its config right after seeding. */
  servers: Array<{ id: string; version: string }>;
  /** Per agent: the emails (subscriber ids) of its online users. */
  onlineEmails: string[][];
  /** Seeded subscribers to disable, none of them online. */
  toDisable: string[];
  seedS: number;
}

const elapsedS = (t0: number) => Math.round((performance.now() - t0) / 100) / 10;
const log = (msg: string) => console.error(`[bench:scale] ${msg}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function seed(db: Db, o: ScaleOptions): Promise<Seeded> {
  const t0 = performance.now();
  const [c] = await db.insert(clusters).values({ name: "Scale", reportIntervalS: REPORT_INTERVAL_S }).returning();
  const clusterId = c!.id;
  const [route] = await db.insert(routes).values({ clusterId, name: "Scale" }).returning();
  // Agent tokens are rba_scale_<k>; the panel keeps their sha256 (server/auth/tokens.ts).
  await db.execute(sql`
    insert into servers (cluster_id, name, address, agent_token_hash)
    select ${clusterId}::uuid, 'scale-' || lpad(k::text, 4, '0'), '127.0.0.1', encode(sha256(convert_to('rba_scale_' || k, 'UTF8')), 'hex')
    from generate_series(0, ${o.agents - 1}) k`);
  await db.execute(sql`
    insert into inbounds (cluster_id, server_id, route_id, name, port, security, sni, reality_private_key, reality_public_key, reality_short_ids)
    select ${clusterId}::uuid, id, ${route!.id}::uuid, 'Reality', 443, 'reality', 'www.example.com',
      'kPg8iCWtnBdrVBdoVkAHh6OqAEDkTq8lLzOyC8vGKnA', 'Jxq2cN1z0iMNDGgkqK4Jvz6bJZbU6mmvYhG0aGbsJ1s', array['a1b2c3d4']
    from servers where cluster_id = ${clusterId}::uuid`);
  await db.execute(sql`
    insert into subscribers (cluster_id, name, token, created_at, plan_id)
    select ${clusterId}::uuid, 'user-' || i, 'tok-' || i, now() - (${o.subscribers} - i) * interval '1 second',
      (select default_plan_id from clusters where id = ${clusterId}::uuid)
    from generate_series(1, ${o.subscribers}) i`);
  await db.execute(sql`analyze`);
  log(`seeded ${o.subscribers} subscribers and ${o.agents} servers in ${elapsedS(t0)} s`);

  const serverRows = rowsOf<{ id: string; name: string }>(await db.execute(sql`select id::text, name from servers where cluster_id = ${clusterId}::uuid order by name`));
  const built = await buildClusterConfigs(db, clusterId);
  const servers = serverRows.map((s) => ({ id: s.id, version: built.byServer.get(s.id)!.version }));
  const half = Math.ceil((o.changesPerS * o.durationS) / 2);
  // The online users are the first by id, the ones to disable the last: never the same.
  const online = rowsOf<{ id: string }>(await db.execute(sql`select id::text from subscribers where cluster_id = ${clusterId}::uuid order by id limit ${o.online}`));
  const last = rowsOf<{ id: string }>(await db.execute(sql`select id::text from subscribers where cluster_id = ${clusterId}::uuid order by id desc limit ${half}`));
  const onlineEmails: string[][] = [];
  for (let k = 0; k < o.agents; k++) {
    const { from, to } = onlineShare(k, o.agents, o.online);
    onlineEmails.push(online.slice(from, to).map((r) => r.id));
  }
  const onlineIds = new Set(online.map((r) => r.id));
  return { clusterId, servers, onlineEmails, toDisable: last.map((r) => r.id).filter((id) => !onlineIds.has(id)), seedS: elapsedS(t0) };
}

// ---------------------------------------------------------------------------------------------
// HTTP: node:http on keep-alive sockets, so the bytes on the wire (compressed) are counted.

interface HealthSamples {
  ms: number[];
  dbMs: number[];
  /** When each request was sent, in µs of the machine's monotonic clock (CLOCK_MONOTONIC, as the app's CPU profile times its samples). */
  startUs: number[];
  errors: number;
}

/**
 * The five slowest health answers, each with the panel's own database-ping figure inside it
 * and when it was sent (atUs: to find it in the app's profile from BENCH_APP_PROF).
 */
function slowestHealth(p: HealthSamples): Array<{ ms: number; pingMs: number; atUs: number }> {
  return p.ms
    .map((ms, i) => ({ ms: Math.round(ms), pingMs: Math.round(p.dbMs[i] ?? NaN), atUs: p.startUs[i] ?? NaN }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 5);
}

/**
 * GET /api/health every 250 ms on a worker thread's own event loop and keep-alive socket. The
 * bench's thread runs a thousand agents that decompress, parse and apply every delta, and
 * stalls for hundreds of milliseconds at a time: a probe timed there measured those stalls
 * beside the panel's answer (details.healthOnBenchThread, benchLoopDelayP99Ms).
 */
function healthProbe(appUrl: string): { stop(): Promise<HealthSamples> } {
  const code = `
    const { parentPort, workerData } = require("node:worker_threads");
    const http = require("node:http");
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const ms = [];
    const dbMs = [];
    const startUs = [];
    let errors = 0;
    let stopping = false;
    parentPort.on("message", () => { stopping = true; });
    const once = () => new Promise((resolve) => {
      const s = performance.now();
      const at = Number(process.hrtime.bigint() / 1000n);
      const req = http.get(workerData.url + "/api/health", { agent, timeout: 10000 }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (body += d));
        res.on("end", () => {
          if (res.statusCode !== 200) errors++;
          else {
            ms.push(performance.now() - s);
            startUs.push(at);
            // The panel's own figure for its database ping (the rest is its event loop and the wire).
            try { dbMs.push(JSON.parse(body).database.latencyMs); } catch { dbMs.push(NaN); }
          }
          resolve();
        });
      });
      req.on("timeout", () => req.destroy(new Error("timeout")));
      req.on("error", () => { errors++; resolve(); });
    });
    (async () => {
      while (!stopping) { await once(); await new Promise((r) => setTimeout(r, 250)); }
      agent.destroy();
      parentPort.postMessage({ ms, dbMs, startUs, errors });
    })();
  `;
  const worker = new Worker(code, { eval: true, workerData: { url: appUrl } });
  const done = once(worker, "message") as Promise<[HealthSamples]>;
  return {
    async stop() {
      worker.postMessage("stop");
      const [result] = await done;
      await worker.terminate();
      return result;
    },
  };
}

const agentPool = new http.Agent({ keepAlive: true, maxSockets: Infinity });
const healthPool = new http.Agent({ keepAlive: true, maxSockets: 1 });
const subPool = new http.Agent({ keepAlive: true, maxSockets: 1 });

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body as sent (compressed when content-encoding says so). */
  wire: Buffer;
}

function call(base: URL, method: "GET" | "POST", pathAndQuery: string, headers: Record<string, string>, body: string | null, timeoutMs: number, pool = agentPool): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: base.hostname, port: base.port, method, path: pathAndQuery, headers: body === null ? headers : { ...headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) }, agent: pool, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, wire: Buffer.concat(chunks) }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${method} ${pathAndQuery}: no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end(body ?? undefined);
  });
}

function decoded(a: Answer): string {
  const enc = a.headers["content-encoding"];
  const raw = enc === "br" ? zlib.brotliDecompressSync(a.wire) : enc === "gzip" ? zlib.gunzipSync(a.wire) : a.wire;
  return raw.toString("utf8");
}

// ---------------------------------------------------------------------------------------------
// Changes and their propagation.

interface Change {
  email: string;
  sentAt: number;
  /** Per agent: when its config first had this change (0 = not yet). */
  reachedAt: Float64Array;
  reached: number;
}

class Propagation {
  readonly changes: Change[] = [];
  private readonly byEmail = new Map<string, Change>();
  /** Emails agents got before the mutation that made them answered (a new subscriber's id). */
  private readonly early = new Map<string, Array<[number, number]>>();

  constructor(private readonly agents: number) {}

  add(email: string, sentAt: number): void {
    const change: Change = { email, sentAt, reachedAt: new Float64Array(this.agents), reached: 0 };
    this.changes.push(change);
    this.byEmail.set(email, change);
    for (const [agent, at] of this.early.get(email) ?? []) this.reach(change, agent, at);
    this.early.delete(email);
  }

  seen(agent: number, emails: Iterable<string>, at: number): void {
    for (const email of emails) {
      const change = this.byEmail.get(email);
      if (change) this.reach(change, agent, at);
      else {
        const list = this.early.get(email) ?? [];
        list.push([agent, at]);
        this.early.set(email, list);
      }
    }
  }

  /** A full config came: it has every change whose mutation was answered before it was asked for. */
  seenAll(agent: number, askedAt: number, at: number, answeredBefore: (c: Change) => boolean): void {
    for (const c of this.changes) if (c.sentAt < askedAt && answeredBefore(c)) this.reach(c, agent, at);
  }

  private reach(c: Change, agent: number, at: number): void {
    if (c.reachedAt[agent] !== 0) return;
    c.reachedAt[agent] = at;
    c.reached++;
  }

  /** A change whose mutation failed: not counted, unless an agent got it (it was committed after all). */
  failed(email: string): void {
    const change = this.byEmail.get(email);
    if (!change || change.reached > 0) return;
    this.changes.splice(this.changes.indexOf(change), 1);
    this.byEmail.delete(email);
  }

  get complete(): boolean {
    return this.changes.every((c) => c.reached === this.agents);
  }

  /** Per change: until the last agent had it (Infinity when one never did). */
  times(): number[] {
    return this.changes.map((c) => (c.reached < this.agents ? Infinity : Math.max(...c.reachedAt) - c.sentAt));
  }
}

// ---------------------------------------------------------------------------------------------

interface AgentStats {
  configBytes: number;
  deltas: number;
  fulls: number;
  notModified: number;
  errors: Map<string, number>;
  reportsAcked: number;
  reportErrors: Map<string, number>;
}

function tally(m: Map<string, number>, what: string) {
  m.set(what, (m.get(what) ?? 0) + 1);
}

async function main() {
  const parsed = parseScaleArgs(process.argv.slice(2));
  if ("error" in parsed) {
    console.error(parsed.error);
    process.exit(2);
  }
  const o = parsed;
  log(`${o.subscribers} subscribers, ${o.agents} agents, ${o.online} online, ${o.changesPerS} changes/s for ${o.durationS} s, on ${o.database}`);
  let pg: PgServer | null = null;
  let app: AppProcess | null = null;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "rb-bench-scale-"));
  try {
    if (o.database === "postgres") {
      pg = await startPg(o.pgPort ?? undefined);
    } else {
      // A migrated PGlite folder: no initdb (about 7 s of CPU) before the seeding.
      cpSync(path.join(await preparePgliteTemplates(), "migrated", "pglite"), path.join(dataDir, "pglite"), { recursive: true });
    }
    const database = await openDatabase({ dataDir, databaseUrl: pg?.url });
    let seeded: Seeded;
    try {
      seeded = await seed(database.db, o);
    } finally {
      await database.close();
    }

    const t0 = performance.now();
    app = await startApp(
      { HOST: "127.0.0.1", ROUTEBOARD_DEMO: "0", ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password, DATABASE_URL: pg?.url ?? "" },
      {
        dataDir,
        port: o.port ?? undefined,
        urlHost: "127.0.0.1",
        readyTimeoutMs: 180_000,
        output: process.env.BENCH_APP_FLAGS?.includes("--trace-gc") ? "inherit" : "stderr",
        // As npm run bench: BENCH_APP_PROF=<folder> writes the app's CPU profile there.
        nodeFlags: [...(process.env.BENCH_APP_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_APP_PROF}`] : []), ...(process.env.BENCH_APP_FLAGS?.split(/\s+/).filter(Boolean) ?? [])],
      },
    );
    log(`app ready in ${elapsedS(t0)} s (pid ${app.child.pid})`);
    const result = await run(app, o, seeded);
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await app?.stop({ keepData: true });
    pg?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    agentPool.destroy();
    healthPool.destroy();
    subPool.destroy();
  }
}

async function run(app: AppProcess, o: ScaleOptions, seeded: Seeded) {
  const base = new URL(app.url);
  const admin: LoggedInClient = await loginToApp(app.url, ADMIN.username, ADMIN.password);
  const stats: AgentStats = { configBytes: 0, deltas: 0, fulls: 0, notModified: 0, errors: new Map(), reportsAcked: 0, reportErrors: new Map() };
  const propagation = new Propagation(o.agents);
  const answeredAt = new Map<Change, number>();
  let stopping = false;

  // Agent 0 starts from nothing: its full config, then every delta, checked after the run.
  const tFull = performance.now();
  const fullAnswer = await call(base, "GET", "/api/agent/config?delta=1&scheme=2", { authorization: `Bearer ${token(0)}`, "accept-encoding": "br, gzip" }, null, 300_000);
  if (fullAnswer.status !== 200) throw new Error(`agent 0's first config: HTTP ${fullAnswer.status} ${fullAnswer.wire.toString().slice(0, 300)}`);
  const fullConfigMs = Math.round(performance.now() - tFull);
  const fullConfigBytes = fullAnswer.wire.length;
  const { kind: _kind, ...fullBody } = JSON.parse(decoded(fullAnswer)) as Record<string, unknown>;
  let checkerConfig: AgentConfig | null = agentConfigSchema.parse(fullBody);
  if (checkerConfig.version !== seeded.servers[0]!.version) throw new Error(`agent 0's config has version ${checkerConfig.version}, the seeded database builds ${seeded.servers[0]!.version}`);
  log(`full config: ${fullConfigBytes} bytes (${fullAnswer.headers["content-encoding"] ?? "identity"}) in ${fullConfigMs} ms, ${checkerConfig.users.length} users`);
  const checkerDeltas: string[] = [];

  const versions = seeded.servers.map((s) => s.version);
  const polled = new Set<number>();

  async function pollLoop(k: number) {
    const auth = `Bearer ${token(k)}`;
    while (!stopping) {
      const askedAt = performance.now();
      polled.add(k);
      let a: Answer;
      try {
        a = await call(base, "GET", `/api/agent/config?wait=${WAIT_S}&delta=1&scheme=2`, { authorization: auth, "accept-encoding": "br, gzip", "if-none-match": `"${versions[k]}"` }, null, (WAIT_S + 15) * 1000);
      } catch (err) {
        if (stopping) return;
        tally(stats.errors, (err as Error).message.replace(/\d+/g, "N"));
        await sleep(1000);
        continue;
      }
      const at = performance.now();
      if (a.status === 304) {
        stats.notModified++;
        continue;
      }
      if (a.status !== 200) {
        tally(stats.errors, `HTTP ${a.status}`);
        await sleep(Number(a.headers["retry-after"] ?? 1) * 1000);
        continue;
      }
      if (stopping) return;
      stats.configBytes += a.wire.length;
      const text = decoded(a);
      if (text.startsWith(`{"kind":"delta"`)) {
        const delta = agentConfigDeltaSchema.parse(JSON.parse(text));
        if (delta.from !== versions[k]) throw new Error(`agent ${k}: a delta from ${delta.from}, this agent runs ${versions[k]}`);
        stats.deltas++;
        versions[k] = delta.version;
        propagation.seen(k, [...delta.usersAdded.map((u) => u.email), ...delta.usersRemoved], at);
        if (k === 0) checkerDeltas.push(text);
      } else {
        // A full config: its version is the ETag (parsing a million users per agent would
        // measure this process, not the panel).
        stats.fulls++;
        versions[k] = String(a.headers.etag).replaceAll('"', "");
        propagation.seenAll(k, askedAt, at, (c) => (answeredAt.get(c) ?? Infinity) < askedAt);
        if (k === 0) checkerConfig = null; // the chain of deltas is broken: nothing to check
      }
    }
  }

  // Reports: one per interval per agent, start times spread over the first interval.
  const seqs = new Array<number>(o.agents).fill(0);
  const acked: Array<{ agent: number; seq: number; at: number }> = [];
  const reportBodies = seeded.onlineEmails.map((emails) => JSON.stringify(emails.map((email) => ({ email, up: UP, down: DOWN }))));
  async function reportLoop(k: number, startAt: number) {
    const instance = `scale-agent-${k}`;
    let next = startAt;
    while (!stopping) {
      // In steps, so that the run's end is not held up by a report due a minute later.
      while (!stopping && performance.now() < next) await sleep(Math.min(500, next - performance.now()));
      if (stopping) return;
      next += REPORT_INTERVAL_S * 1000;
      const seq = seqs[k]! + 1;
      const body =
        `{"listenerAlive":true,"serviceRunning":true,"usersOnline":${seeded.onlineEmails[k]!.length},"rxBps":1000000,"txBps":1000000,"cpu":20,"memory":30,` +
        `"neighbours":[],"instance":${JSON.stringify(instance)},"seq":${seq},"configVersion":${JSON.stringify(versions[k])},"users":${reportBodies[k]}}`;
      try {
        const a = await call(base, "POST", "/api/agent/report", { authorization: `Bearer ${token(k)}` }, body, 30_000);
        if (a.status === 200) {
          seqs[k] = seq;
          stats.reportsAcked++;
          acked.push({ agent: k, seq, at: performance.now() });
        } else tally(stats.reportErrors, `HTTP ${a.status}: ${a.wire.toString().slice(0, 120)}`);
      } catch (err) {
        if (!stopping) tally(stats.reportErrors, (err as Error).message.replace(/\d+/g, "N"));
      }
    }
  }

  // Fold lag: the panel's own bound (routeboard_traffic_fold_lag_seconds on /metrics), sampled
  // every 500 ms once reports flow.
  const foldLags: number[] = [];
  let metricsErrors = 0;
  async function foldLagLoop() {
    while (!stopping) {
      await sleep(500);
      if (acked.length === 0) continue;
      try {
        const a = await call(base, "GET", "/metrics", {}, null, 10_000, healthPool);
        const lag = Number(/^routeboard_traffic_fold_lag_seconds (\S+)$/m.exec(a.wire.toString())?.[1]);
        if (Number.isFinite(lag) && lag >= 0) foldLags.push(lag);
      } catch {
        metricsErrors++;
      }
    }
  }

  // /api/health every 250 ms, the app's RSS every second. The figure is the probe thread's
  // (healthProbe); the same probe on this thread is kept beside it, with this thread's own
  // event-loop delay, to show what a probe among the agents measures.
  const probe = healthProbe(app.url);
  const benchLoopDelay = monitorEventLoopDelay({ resolution: 10 });
  benchLoopDelay.enable();
  const healthMs: number[] = [];
  let healthErrors = 0;
  async function healthLoop() {
    while (!stopping) {
      const s = performance.now();
      try {
        const a = await call(base, "GET", "/api/health", {}, null, 10_000, healthPool);
        if (a.status === 200) healthMs.push(performance.now() - s);
        else healthErrors++;
      } catch {
        healthErrors++;
      }
      await sleep(250);
    }
  }
  // /sub during the changes, as subscribers' apps fetch: one every 100 ms, subscribers drawn
  // across the whole table (the seed's tokens are tok-<i>).
  const subMs: number[] = [];
  const subStatuses = new Map<string, number>();
  async function subLoop() {
    for (let i = 0; !stopping; i++) {
      const s = performance.now();
      try {
        const a = await call(base, "GET", `/sub/tok-${1 + ((i * 7919 + 13) % o.subscribers)}`, { "user-agent": "v2rayNG/1.9" }, null, 60_000, subPool);
        // A subscriber disabled by the run is answered too (404): counted, not hidden.
        tally(subStatuses, String(a.status));
        subMs.push(performance.now() - s);
      } catch (err) {
        tally(subStatuses, (err as Error).message.replace(/\d+/g, "N"));
      }
      await sleep(100);
    }
  }
  let rssMaxKb = 0;
  const rssKb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${app.child.pid}/status`, "utf8"))?.[1] ?? 0);
  const rssTimer = setInterval(() => (rssMaxKb = Math.max(rssMaxKb, rssKb())), 1000);

  const loops: Array<Promise<void>> = [];
  for (let k = 0; k < o.agents; k++) loops.push(pollLoop(k));
  while (polled.size < o.agents) await sleep(100);
  await sleep(2000); // every long-poll is parked
  const tRun = performance.now();
  for (let k = 0; k < o.agents; k++) loops.push(reportLoop(k, tRun + (k / o.agents) * REPORT_INTERVAL_S * 1000));
  loops.push(foldLagLoop(), healthLoop(), subLoop());
  log("agents waiting; changes begin");

  // The changes: one every 1/changesPerS s, half new subscribers, half seeded ones disabled.
  const total = o.changesPerS * o.durationS;
  const mutationMs: number[] = [];
  const mutationErrors = new Map<string, number>();
  const inFlight: Array<Promise<void>> = [];
  let disabled = 0;
  for (let n = 0; n < total; n++) {
    const due = tRun + (n * 1000) / o.changesPerS;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    inFlight.push(
      (async () => {
        const sentAt = performance.now();
        try {
          if (n % 2 === 0) {
            const created = await admin.mutation<{ id: string }>("subscribers.create", { clusterId: seeded.clusterId, name: `scale-new-${n}`, expiresAt: null, trafficLimitGb: null });
            propagation.add(created.id, sentAt);
            answeredAt.set(propagation.changes.at(-1)!, performance.now());
          } else {
            const id = seeded.toDisable[disabled++]!;
            propagation.add(id, sentAt);
            const change = propagation.changes.at(-1)!;
            try {
              await admin.mutation("subscribers.setEnabled", { subscriberId: id, enabled: false });
            } catch (err) {
              propagation.failed(id);
              throw err;
            }
            answeredAt.set(change, performance.now());
          }
          mutationMs.push(performance.now() - sentAt);
        } catch (err) {
          tally(mutationErrors, (err as Error).message.slice(0, 200));
        }
      })(),
    );
  }
  await Promise.all(inFlight);
  const changesS = (performance.now() - tRun) / 1000;
  log(`${total} changes sent in ${changesS.toFixed(1)} s; waiting for every agent to have them`);
  const settleBy = performance.now() + 30_000;
  while (!propagation.complete && performance.now() < settleBy) await sleep(200);
  // The rest of the report interval, so that every agent reported at least once.
  const runS = (performance.now() - tRun) / 1000;
  const lastReportAt = tRun + REPORT_INTERVAL_S * 1000 + 1000;
  while (performance.now() < lastReportAt) await sleep(200);
  await sleep(2000); // the last report's fold
  stopping = true;
  const probed = await probe.stop();
  benchLoopDelay.disable();
  clearInterval(rssTimer);
  rssMaxKb = Math.max(rssMaxKb, rssKb());
  const reportS = (performance.now() - tRun) / 1000;
  agentPool.destroy(); // ends the parked long-polls
  await Promise.allSettled(loops);

  // Agent 0's check: its full config with every delta applied hashes to the last version.
  let deltaCheck: string;
  if (!checkerConfig) deltaCheck = "agent 0 got a full config during the run: nothing to check";
  else {
    let config: AgentConfig = checkerConfig;
    for (const text of checkerDeltas) {
      const applied = applyUserDelta(config, agentConfigDeltaSchema.parse(JSON.parse(text)));
      if ("error" in applied) throw new Error(`agent 0: a delta does not apply: ${applied.error}`);
      config = applied.config;
    }
    const actual = versionOfConfig(config);
    if (actual !== versions[0]) throw new Error(`agent 0: the config rebuilt from ${checkerDeltas.length} deltas hashes to ${actual}, not ${versions[0]}`);
    deltaCheck = `${checkerDeltas.length} deltas applied to the full config hash to the last version (${config.users.length} users)`;
  }

  const round = (x: number, d = 0) => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : null);
  const reads = { sub: { during: "the changes", requests: subMs.length, p50Ms: round(percentile(subMs, 50)), p99Ms: round(percentile(subMs, 99)), statuses: Object.fromEntries(subStatuses) }, ...(await measureReads(admin, seeded, o)) };

  const times = propagation.times();
  const figures = {
    propagation: { p50Ms: percentile(times, 50), p99Ms: percentile(times, 99) },
    bytesPerAgentPerChange: stats.configBytes / o.agents / Math.max(1, propagation.changes.length),
    foldLagS: foldLags.length > 0 ? Math.max(...foldLags) : NaN,
    healthP99Ms: percentile(probed.ms, 99),
    panelRssMb: rssMaxKb / 1024,
  };
  return {
    subscribers: o.subscribers,
    agents: o.agents,
    changes: propagation.changes.length,
    propagation: { p50Ms: round(figures.propagation.p50Ms), p99Ms: round(figures.propagation.p99Ms) },
    bytesPerAgentPerChange: round(figures.bytesPerAgentPerChange),
    fullConfigBytes,
    reportsPerSecond: round(stats.reportsAcked / reportS, 1),
    foldLagS: round(figures.foldLagS, 2),
    healthP99Ms: round(figures.healthP99Ms, 1),
    panelRssMb: round(figures.panelRssMb),
    aims: aims(figures),
    reads,
    details: {
      database: o.database,
      online: o.online,
      seedS: seeded.seedS,
      fullConfigMs,
      changesPerS: round(propagation.changes.length / changesS, 1),
      changesUnreached: times.filter((t) => !Number.isFinite(t)).length,
      mutationP50Ms: round(percentile(mutationMs, 50)),
      mutationP99Ms: round(percentile(mutationMs, 99)),
      mutationErrors: Object.fromEntries(mutationErrors),
      configAnswers: { deltas: stats.deltas, full: stats.fulls, notModified: stats.notModified, errors: Object.fromEntries(stats.errors) },
      deltaCheck,
      reportsAcked: stats.reportsAcked,
      reportErrors: Object.fromEntries(stats.reportErrors),
      foldLagSamples: foldLags.length,
      foldLagP50S: round(percentile(foldLags, 50), 2),
      metricsErrors,
      healthSamples: probed.ms.length,
      healthErrors: probed.errors,
      healthP50Ms: round(percentile(probed.ms, 50), 1),
      healthDatabasePingP99Ms: round(percentile(probed.dbMs.filter(Number.isFinite), 99), 1),
      healthSlowest: slowestHealth(probed),
      healthOnBenchThread: { p50Ms: round(percentile(healthMs, 50), 1), p99Ms: round(percentile(healthMs, 99), 1), errors: healthErrors },
      benchLoopDelayP99Ms: round(benchLoopDelay.percentile(99) / 1e6, 1),
      runS: round(runS, 1),
      loadAverage: os.loadavg().map((x) => round(x, 2)),
      cores: os.cpus().length,
    },
  };
}

/**
 * Point 4's reads at this size, once the changes are done (agents stopped, the app at rest):
 * the subscribers list as the dashboard asks for it (first page, a search, sorted by usage,
 * a filter, a late page) and the diagram (topology.get, with its per-inbound user counts).
 * Each in turn, READ_RUNS times; p50 and p99 in ms. (`/sub` is measured during the changes,
 * subLoop.) Figures, not aims: the issue sets none for them.
 */
const READ_RUNS = 40;
async function measureReads(admin: LoggedInClient, seeded: Seeded, o: ScaleOptions) {
  // List queries are rate-limited per session (4 a second after a burst): paced below that.
  const LIST_GAP_MS = 300;
  const timed = async (what: (i: number) => Promise<unknown>, gapMs = 0) => {
    const ms: number[] = [];
    for (let i = 0; i < READ_RUNS; i++) {
      const s = performance.now();
      await what(i);
      ms.push(performance.now() - s);
      if (gapMs > 0) await sleep(gapMs - (performance.now() - s));
    }
    return { p50Ms: Math.round(percentile(ms, 50)), p99Ms: Math.round(percentile(ms, 99)) };
  };
  const page = (input: Record<string, unknown>) => () => admin.query("subscribers.page", { clusterId: seeded.clusterId, ...input });
  // Subscribers by row number, spread over the table (the seed's tokens are tok-<i>).
  const spread = (i: number) => 1 + Math.floor(((i * 7919) % READ_RUNS) * (o.subscribers / READ_RUNS)) + (i % 97);
  log("reads: the subscribers list and the diagram");
  return {
    runs: READ_RUNS,
    listFirstPage: await timed(page({}), LIST_GAP_MS),
    listSearch: await timed((i) => page({ search: `user-${spread(i)}` })(), LIST_GAP_MS),
    listSortedByUsage: await timed(page({ sort: "usage", dir: "desc" }), LIST_GAP_MS),
    listDisabled: await timed(page({ status: "disabled" }), LIST_GAP_MS),
    listLatePage: await timed(page({ page: Math.floor(o.subscribers / 50 / 2) }), LIST_GAP_MS),
    diagram: await timed(() => admin.query("topology.get", { clusterId: seeded.clusterId })),
  };
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
