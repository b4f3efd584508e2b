/**
 * npm run bench:agent — what agent reports cost the panel (issue 10's aim: 2,000 reports/s
 * of 100 users each, /api/health p99 under 100 ms meanwhile). Figures, not assertions.
 *
 *  1. Starts the app (fresh PGlite data folder, or DATABASE_URL if set) and, through its
 *     API, creates one cluster with a 1 s report interval, BENCH_SERVERS servers (their agent
 *     tokens) and BENCH_SUBSCRIBERS subscribers.
 *  2. Idle baseline: /api/health latency with nothing else going on.
 *  3. Flood: every server reports once per second — the rate its token is allowed, so the
 *     limiter answers nothing but 200 — each report with 100 users' traffic and a growing
 *     seq, for BENCH_DURATION_S seconds; /api/health is sampled meanwhile.
 *  4. Checks that the traffic stored equals the traffic acknowledged (nothing acked is lost,
 *     nothing is counted twice).
 *  5. Oversized (issue 21, point 8): from ONE server's token, rounds of 5 concurrent 12 MB
 *     reports (200,000 users each), a round a second (BENCH_OVERSIZED_EVERY_MS), for BENCH_OVERSIZED_S s — with Content-Length, then chunked —
 *     while /api/health is sampled and the app's RSS is polled; prints the health p99, the
 *     answers and the RSS growth.
 *  6. Heartbeats (issue 24's loads): what loads in heartbeats cost the panel at fleet scale —
 *     every 10 s (LOAD_INTERVAL_S) an agent's heartbeat carries its load, which the panel
 *     stores in one transaction per 200 ms flush and the balancer places users on. The cluster
 *     goes to the default 60 s report interval and every server reports once (a load is stored
 *     only where a metrics row exists; the phase also runs alone). Then, for BENCH_HEARTBEAT_S
 *     s, every server sends a heartbeat every 2 s, phases spread evenly, every 5th with a load
 *     drawn per server (0–399 users, 0.1–2 Mbit/s each): 2,000 servers offer 1,000
 *     heartbeats/s, 200 of them with a load. Prints the answers by status, their latency, the
 *     /api/health p50/p99 against the idle baseline, the app's CPU, and — read back through
 *     monitoring.health once it stops changing — how many servers have a load stored since the
 *     phase began and whether it is the last one acked to each (a MISMATCH line if not).
 * Stops the app by its PID and prints one JSON summary.
 * BENCH_PHASES (default "flood,oversized,heartbeats") picks the phases; they run in this order.
 *
 * Sends are paced by a schedule, not by answers, and in-flight requests are capped, so a
 * slow panel shows as fewer reports accepted and longer latencies, never as a hung bench.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import os from "node:os";
import { readFileSync } from "node:fs";
import { startApp } from "./harness/app";
import { loginToApp, type AppClient, type HealthServerRow } from "./harness/trpc";
import { mulberry32, subSeed } from "./simulator/prng";
import { HEARTBEAT_INTERVAL_S, LOAD_INTERVAL_S } from "../core/heartbeat";
import { DEFAULT_REPORT_INTERVAL_S } from "../core/status";

const SERVERS = Number(process.env.BENCH_SERVERS ?? 2000);
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 1000);
const USERS_PER_REPORT = 100;
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 15);
const IDLE_S = 5;
const MAX_IN_FLIGHT = Number(process.env.BENCH_MAX_IN_FLIGHT ?? 512);
const HEALTH_EVERY_MS = 50;
const PHASES = new Set((process.env.BENCH_PHASES ?? "flood,oversized,heartbeats").split(",").map((p) => p.trim()));
const OVERSIZED_S = Number(process.env.BENCH_OVERSIZED_S ?? 10);
/** One round of 5 per this many ms (0: back to back, a flood of 12 MB bodies). */
const OVERSIZED_EVERY_MS = Number(process.env.BENCH_OVERSIZED_EVERY_MS ?? 1000);
const OVERSIZED_CONCURRENT = 5;
const OVERSIZED_USERS = 200_000;
const HEARTBEAT_S = Number(process.env.BENCH_HEARTBEAT_S ?? 20);
/** The seed of the loads the heartbeats phase draws per server. */
const HEARTBEAT_SEED = 24;

/**
 * Whether a send due now is skipped, and why (counted): its server still waits for its
 * previous answer, as a real agent would, or the bench's in-flight cap is reached.
 */
function skipsSend(counts: { skippedStillWaiting: number; skippedInFlightCap: number }, waiting: boolean, inFlight: number): boolean {
  if (waiting) counts.skippedStillWaiting++;
  else if (inFlight >= MAX_IN_FLIGHT) counts.skippedInFlightCap++;
  else return false;
  return true;
}

/** Resident memory of a process in bytes (Linux /proc), or NaN. */
function rssOf(pid: number | undefined): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/**
 * One oversized report: with Content-Length (the agent's way) or chunked. Resolves with the
 * status, or "closed" when the panel closed the connection while the body was being sent.
 */
function sendOversized(url: URL, token: string, body: Buffer, chunked: boolean): Promise<number | "closed"> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    if (!chunked) headers["content-length"] = String(body.length);
    // A fresh connection each: a refused body closes it.
    const req = http.request(url, { method: "POST", headers, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
      res.on("error", () => resolve(res.statusCode ?? "closed"));
    });
    req.on("error", () => resolve("closed"));
    // With backpressure, so the bench's own event loop (and its /api/health timings) is not held up.
    let k = 0;
    const more = () => {
      while (k < body.length) {
        const part = body.subarray(k, k + 256 * 1024);
        k += part.length;
        if (!req.write(part)) {
          req.once("drain", more);
          return;
        }
      }
      req.end();
    };
    more();
  });
}

async function oversizedPhase(base: string, pid: number | undefined, token: string) {
  const users = Array.from({ length: OVERSIZED_USERS }, (_, k) => ({ email: `00000000-0000-4000-8000-${String(k).padStart(12, "0")}`, up: 1, down: 2 }));
  const body = Buffer.from(
    JSON.stringify({ listenerAlive: true, serviceRunning: true, usersOnline: OVERSIZED_USERS, rxBps: 1e6, txBps: 2e6, cpu: 10, memory: 20, neighbours: [], instance: "bench-oversized", seq: 1, users }),
  );
  const url = new URL(`${base}/api/agent/report`);
  const rssBefore = rssOf(pid);
  let rssPeak = rssBefore;
  let done = false;
  const poll = setInterval(() => (rssPeak = Math.max(rssPeak, rssOf(pid))), 20);
  const healthDuring = sampleHealth(base, () => done);
  const answers: Record<string, number> = {};
  const t0 = performance.now();
  let rounds = 0;
  for (let r = 0; performance.now() - t0 < OVERSIZED_S * 1000; r++) {
    rounds++;
    const chunked = r % 2 === 1;
    const roundStart = performance.now();
    const got = await Promise.all(Array.from({ length: OVERSIZED_CONCURRENT }, () => sendOversized(url, token, body, chunked)));
    // "closed": the panel answered 413 and closed the connection while the body was still being sent.
    for (const g of got) answers[`${chunked ? "chunked" : "content-length"} ${g}`] = (answers[`${chunked ? "chunked" : "content-length"} ${g}`] ?? 0) + 1;
    const wait = OVERSIZED_EVERY_MS - (performance.now() - roundStart);
    if (performance.now() - t0 + Math.max(0, wait) >= OVERSIZED_S * 1000) break;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  const seconds = (performance.now() - t0) / 1000;
  // A few more health samples after the last answer (a stall would show there too).
  await new Promise((r) => setTimeout(r, 500));
  done = true;
  clearInterval(poll);
  const health = await healthDuring;
  return {
    reports: rounds * OVERSIZED_CONCURRENT,
    concurrent: OVERSIZED_CONCURRENT,
    bodyMB: Math.round((body.length / 1024 / 1024) * 10) / 10,
    users: OVERSIZED_USERS,
    seconds: Math.round(seconds * 10) / 10,
    answers,
    health,
    rssBeforeMB: Math.round(rssBefore / 1024 / 1024),
    rssGrowthMB: Math.round((rssPeak - rssBefore) / 1024 / 1024),
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 10) / 10;
}

/** Parallel map with a concurrency cap (enrolment through the API). */
async function pool<T, R>(items: T[], n: number, fn: (t: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

function request(url: URL, method: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    if (body !== undefined) req.end(body);
    else req.end();
  });
}

/** Samples GET /api/health one request at a time until `stop` resolves. */
async function sampleHealth(base: string, until: () => boolean): Promise<{ samples: number; p50Ms: number; p99Ms: number; maxMs: number; failures: number }> {
  const healthAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const lat: number[] = [];
  let failures = 0;
  while (!until()) {
    const t0 = performance.now();
    const ok = await new Promise<boolean>((resolve) => {
      const req = http.get(`${base}/api/health`, { agent: healthAgent }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode === 200));
      });
      req.on("error", () => resolve(false));
    });
    const ms = performance.now() - t0;
    if (ok) lat.push(ms);
    else failures++;
    await new Promise((r) => setTimeout(r, Math.max(0, HEALTH_EVERY_MS - ms)));
  }
  healthAgent.destroy();
  lat.sort((a, b) => a - b);
  return { samples: lat.length, p50Ms: percentile(lat, 50), p99Ms: percentile(lat, 99), maxMs: percentile(lat, 100), failures };
}

async function enrol(app: AppClient) {
  const cluster = await app.mutation<{ id: string }>("clusters.create", { name: `Bench ${randomBytes(3).toString("hex")}` });
  await app.mutation("monitoring.setReportInterval", { clusterId: cluster.id, seconds: 1 });
  const servers = await pool(
    Array.from({ length: SERVERS }, (_, i) => i),
    8,
    (i) =>
      app.mutation<{ id: string; agentToken: string }>("servers.create", {
        clusterId: cluster.id,
        name: `bench-${i}`,
        address: "127.0.0.1",
        role: "node",
        coefficient: 1,
        capacityMbps: null,
      }),
  );
  const subs = await pool(
    Array.from({ length: SUBSCRIBERS }, (_, i) => i),
    8,
    (i) => app.mutation<{ id: string }>("subscribers.create", { clusterId: cluster.id, name: `user-${i}`, expiresAt: null, trafficLimitGb: null }),
  );
  return { clusterId: cluster.id, servers, subscriberIds: subs.map((s) => s.id) };
}

async function main() {
  const password = `bench-${randomBytes(16).toString("hex")}`;
  const nodeFlags = process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(" ") : [];
  const server = await startApp(
    { HOST: "127.0.0.1", ROUTEBOARD_DEMO: "0", ROUTEBOARD_DEVTOOLS: "1", ADMIN_USERNAME: "bench", ADMIN_PASSWORD: password },
    { urlHost: "127.0.0.1", nodeFlags, output: "stderr", readyTimeoutMs: 120_000, tempPrefix: "rb-bench-agent-" },
  );
  const base = server.url;
  try {
    const app = await loginToApp(base, "bench", password);
    process.stderr.write(`enrolling ${SERVERS} servers and ${SUBSCRIBERS} subscribers through the API…\n`);
    const t0 = performance.now();
    const fleet = await enrol(app);
    const enrolS = (performance.now() - t0) / 1000;

    process.stderr.write(`idle baseline: /api/health for ${IDLE_S} s…\n`);
    const idleEnd = performance.now() + IDLE_S * 1000;
    const idleCpu0 = cpuSecondsOf(server.child.pid);
    const idle = await sampleHealth(base, () => performance.now() > idleEnd);
    const idleCpuCores = Math.round(((cpuSecondsOf(server.child.pid) - idleCpu0) / IDLE_S) * 100) / 100;

    let flood: Record<string, unknown> | null = null;
    if (PHASES.has("flood")) flood = await floodPhase(app, base, fleet);
    let oversized: Awaited<ReturnType<typeof oversizedPhase>> | null = null;
    if (PHASES.has("oversized")) {
      process.stderr.write(`oversized: ${OVERSIZED_CONCURRENT} concurrent 12 MB reports from one token, round after round, for ${OVERSIZED_S} s…\n`);
      oversized = await oversizedPhase(base, server.child.pid, fleet.servers[0]!.agentToken);
    }
    let heartbeats: Awaited<ReturnType<typeof heartbeatsPhase>> | null = null;
    if (PHASES.has("heartbeats")) heartbeats = await heartbeatsPhase(app, base, server.child.pid, fleet, { cpuCores: idleCpuCores, health: idle });
    const summary = {
      database: process.env.DATABASE_URL ? "postgres" : "pglite",
      servers: SERVERS,
      subscribers: SUBSCRIBERS,
      enrolS: Math.round(enrolS),
      ...(flood ? { ...flood, healthDuringFlood: undefined } : {}),
      health: { idle, ...(flood ? { duringFlood: flood.healthDuringFlood } : {}), ...(heartbeats ? { duringHeartbeats: heartbeats.health } : {}) },
      ...(oversized ? { oversized } : {}),
      ...(heartbeats ? { heartbeats: { ...heartbeats, health: undefined } } : {}),
      cores: os.cpus().length,
    };
    process.stdout.write(`${JSON.stringify(summary)}\n`);
  } finally {
    agent.destroy();
    await server.stop({ graceMs: 10_000 });
  }
}

/** Phase 3 and 4: the flood, and the check that what was acked is what is stored. */
async function floodPhase(app: AppClient, base: string, fleet: Awaited<ReturnType<typeof enrol>>) {
  {
    // Each server names 100 subscribers (a window that slides by server), 1 byte up and
    // 2 down per user per report, so stored totals can be checked against the acks.
    const reportUrl = new URL(`${base}/api/agent/report`);
    const instance = `bench-${randomBytes(6).toString("hex")}`;
    const usersJson = fleet.servers.map((_, i) =>
      JSON.stringify(
        Array.from({ length: USERS_PER_REPORT }, (_, k) => ({ email: fleet.subscriberIds[(i * 7 + k) % fleet.subscriberIds.length]!, up: 1, down: 2 })),
      ),
    );
    const seq = new Array<number>(fleet.servers.length).fill(0);
    const counts = { sent: 0, ok: 0, duplicate: 0, limited: 0, busy: 0, otherStatus: 0, errors: 0, skippedInFlightCap: 0, skippedStillWaiting: 0 };
    let inFlight = 0;
    // Like a real agent, a server sends its next report only after the previous one was
    // answered (so seqs arrive in order); a report due meanwhile is skipped and counted.
    const busy = new Array<boolean>(fleet.servers.length).fill(false);
    const sendLat: number[] = [];
    const send = (i: number) => {
      if (skipsSend(counts, busy[i]!, inFlight)) return;
      seq[i]!++;
      const body = reportBody(`,"instance":"${instance}","seq":${seq[i]},"users":${usersJson[i]}`);
      inFlight++;
      busy[i] = true;
      counts.sent++;
      const t = performance.now();
      request(reportUrl, "POST", { authorization: `Bearer ${fleet.servers[i]!.agentToken}`, "content-type": "application/json" }, body).then(
        (r) => {
          inFlight--;
          busy[i] = false;
          sendLat.push(performance.now() - t);
          if (r.status === 200) {
            counts.ok++;
            if (r.body.includes('"duplicate":true')) counts.duplicate++;
          } else if (r.status === 429) counts.limited++;
          else if (r.status === 503) counts.busy++; // admission control: nothing stored, the agent sends it again
          else counts.otherStatus++;
        },
        () => {
          inFlight--;
          busy[i] = false;
          counts.errors++;
        },
      );
    };

    process.stderr.write(`flood: ${SERVERS} agents × 1 report/s × ${USERS_PER_REPORT} users for ${DURATION_S} s…\n`);
    const start = performance.now();
    const end = start + DURATION_S * 1000;
    const healthDuring = sampleHealth(base, () => performance.now() > end);
    // Server i sends at start + i/SERVERS s + k s: a steady, evenly spread 1 report/s each.
    const periodMs = 1000;
    await new Promise<void>((resolve) => {
      let k = 0;
      const tick = () => {
        const now = performance.now();
        if (now >= end) return resolve();
        const slot = Math.floor(((now - start) % periodMs) / periodMs * SERVERS);
        const round = Math.floor((now - start) / periodMs);
        while (k < (round * SERVERS) + slot) {
          send(k % SERVERS);
          k++;
        }
        setTimeout(tick, 5);
      };
      tick();
    });
    const health = await healthDuring;
    // Let the requests in flight finish (their acks count, their time does not).
    const drainDeadline = performance.now() + 60_000;
    while (inFlight > 0 && performance.now() < drainDeadline) await new Promise((r) => setTimeout(r, 50));
    const elapsedS = (performance.now() - start) / 1000;

    // Nothing acked is lost, nothing counted twice: stored up+down = 3 bytes × users × acked reports.
    // Subscribers' totals come from the traffic journal's fold (every 0.5 s): wait for it, and
    // say how long the totals took to catch up with the last ack.
    const counted = counts.ok - counts.duplicate;
    const foldStart = performance.now();
    let storedUp = 0;
    let storedDown = 0;
    for (;;) {
      const list = await app.query<Array<{ trafficUpBytes: number; trafficDownBytes: number }>>("subscribers.list", { clusterId: fleet.clusterId });
      storedUp = list.reduce((n, s) => n + s.trafficUpBytes, 0);
      storedDown = list.reduce((n, s) => n + s.trafficDownBytes, 0);
      if (storedUp >= counted * USERS_PER_REPORT || performance.now() - foldStart > 60_000) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const totalsCatchUpS = Math.round((performance.now() - foldStart) / 100) / 10;
    const metrics = await (await fetch(`${base}/metrics`)).text();
    const metric = (name: string) => Number(new RegExp(`^${name} ([0-9.e+]+)$`, "m").exec(metrics)?.[1] ?? NaN);
    const batches = metric("routeboard_agent_report_batches_total");
    const batched = metric("routeboard_agent_report_batched_total");
    const batchSeconds = metric("routeboard_agent_report_batch_seconds_total");
    sendLat.sort((a, b) => a - b);
    return {
      usersPerReport: USERS_PER_REPORT,
      durationS: DURATION_S,
      offeredReportsPerSecond: Math.round(counts.sent / DURATION_S),
      acceptedReportsPerSecond: Math.round(counts.ok / elapsedS),
      counts,
      groupCommit: { batches, meanReportsPerBatch: Math.round((batched / batches) * 10) / 10, meanBatchMs: Math.round((batchSeconds / batches) * 1000 * 10) / 10 },
      reportLatency: { p50Ms: percentile(sendLat, 50), p99Ms: percentile(sendLat, 99) },
      healthDuringFlood: health,
      traffic: {
        expectedUp: counted * USERS_PER_REPORT,
        storedUp,
        expectedDown: counted * USERS_PER_REPORT * 2,
        storedDown,
        exact: storedUp === counted * USERS_PER_REPORT && storedDown === counted * USERS_PER_REPORT * 2,
        totalsCatchUpS,
      },
    };
  }
}

/** A report with every server healthy and 100 users online; `extra` adds fields (the flood's seq and traffic). */
function reportBody(extra = ""): string {
  return (
    `{"listenerAlive":true,"serviceRunning":true,"usersOnline":${USERS_PER_REPORT},"rxBps":1000000,"txBps":2000000,"cpu":10,"memory":20,` +
    `"neighbours":[]${extra}}`
  );
}

/** CPU time (user + system) a process has used, in seconds (Linux /proc; USER_HZ is 100), or NaN. */
function cpuSecondsOf(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // After "pid (comm) " come the fields from the 3rd on: utime is the 14th, stime the 15th.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}

/** The app's /metrics samples of the families named, by series (`name{labels}`). */
async function metricSamples(base: string, families: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const text = await (await fetch(`${base}/metrics`)).text();
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
    if (m && families.includes(m[1]!)) out.set(`${m[1]}${m[2] ?? ""}`, Number(m[3]));
  }
  return out;
}

/** What monitoring.health says of a server, the part the heartbeats phase reads. */
type HealthServer = Pick<HealthServerRow, "id" | "name" | "report">;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Phase 6's precondition: one report from every server, so each has a metrics row (a load is
 * stored only where one exists) and a fresh report (no server's status flips for a stale one
 * while heartbeats are measured). Throws when a server still has no row: its loads would be
 * counted as lost.
 */
async function reportOnce(app: AppClient, base: string, fleet: Awaited<ReturnType<typeof enrol>>) {
  const reportUrl = new URL(`${base}/api/agent/report`);
  const answers: Record<string, number> = {};
  const t0 = performance.now();
  const startWall = Date.now();
  await pool(fleet.servers, 64, async (s) => {
    // A 429 (a flood just before used up the token's burst) or a 503 (admission control):
    // sent again a second later, as an agent would, at most 5 times.
    for (let attempt = 1; attempt <= 5; attempt++) {
      let status: string;
      try {
        status = String((await request(reportUrl, "POST", { authorization: `Bearer ${s.agentToken}`, "content-type": "application/json" }, reportBody())).status);
      } catch {
        status = "error";
      }
      answers[status] = (answers[status] ?? 0) + 1;
      if (status !== "429" && status !== "503" && status !== "error") return;
      await sleep(1000 * attempt);
    }
  });
  // Stored once answered, but read back to be sure: every server's row, from this report.
  let fresh = 0;
  const deadline = performance.now() + 60_000;
  for (;;) {
    const h = await app.query<{ servers: HealthServer[] }>("monitoring.health", { clusterId: fleet.clusterId });
    fresh = h.servers.filter((s) => s.report && s.report.at.getTime() >= startWall).length;
    if (fresh === fleet.servers.length || performance.now() > deadline) break;
    await sleep(250);
  }
  if (fresh !== fleet.servers.length) {
    throw new Error(`heartbeats: only ${fresh} of ${fleet.servers.length} servers have a report stored after one each (answers ${JSON.stringify(answers)})`);
  }
  return { answers, seconds: Math.round((performance.now() - t0) / 100) / 10 };
}

/**
 * Phase 6: heartbeats at their interval from every server, every LOAD_INTERVAL_S one with a
 * load, and the check that each server's last load acknowledged is the one stored.
 */
async function heartbeatsPhase(app: AppClient, base: string, pid: number | undefined, fleet: Awaited<ReturnType<typeof enrol>>, idle: { cpuCores: number; health: Awaited<ReturnType<typeof sampleHealth>> }) {
  const n = fleet.servers.length;
  // The default interval: with the flood's 1 s, a server that stops reporting is "No data"
  // 3 s later, and that wave of status changes would be measured as the heartbeats' cost.
  await app.mutation("monitoring.setReportInterval", { clusterId: fleet.clusterId, seconds: DEFAULT_REPORT_INTERVAL_S });
  process.stderr.write(`heartbeats: one report from each of ${n} servers first (a load is stored only for a server with a metrics row)…\n`);
  const firstReports = await reportOnce(app, base, fleet);

  // Per server, drawn once (deterministic): its users (0–399, a different count each load),
  // the traffic per user (0.1–2 Mbit/s) and tx/rx (1–1.1: a VPN server forwards what it gets).
  const baseUsers: number[] = [];
  const perUserBps: number[] = [];
  const txPerRx: number[] = [];
  for (let i = 0; i < n; i++) {
    const rng = mulberry32(subSeed(HEARTBEAT_SEED, i));
    baseUsers.push(Math.floor(rng() * 300));
    perUserBps.push(100_000 + rng() * 1_900_000);
    txPerRx.push(1 + rng() * 0.1);
  }
  const loadOf = (i: number, k: number) => {
    const usersOnline = (baseUsers[i]! + 37 * k) % 400;
    const rxBps = Math.round(usersOnline * perUserBps[i]!);
    return { usersOnline, rxBps, txBps: Math.round(rxBps * txPerRx[i]!) };
  };

  const url = new URL(`${base}/api/agent/heartbeat`);
  const counts = { sent: 0, answered204: 0, answered429: 0, answeredOther: 0, errors: 0, skippedStillWaiting: 0, skippedInFlightCap: 0 };
  const loads = { due: 0, sent: 0, answered204: 0 };
  const otherStatuses: Record<string, number> = {};
  const latPlain: number[] = [];
  const latLoad: number[] = [];
  const loadNo = new Array<number>(n).fill(0);
  /** Per server, the usersOnline of the last load answered 204 (null: none). */
  const lastAccepted = new Array<number | null>(n).fill(null);
  /** Per server, whether the last load it sent was refused (then an earlier one is the stored one). */
  const lastLoadRefused = new Array<boolean>(n).fill(false);
  // Like the agent, a server sends its next heartbeat only once the previous one was answered.
  const busy = new Array<boolean>(n).fill(false);
  let inFlight = 0;
  const send = (i: number, withLoad: boolean) => {
    const load = withLoad ? loadOf(i, loadNo[i]!++) : null;
    if (load) loads.due++;
    if (skipsSend(counts, busy[i]!, inFlight)) return;
    inFlight++;
    busy[i] = true;
    counts.sent++;
    if (load) loads.sent++;
    const headers: Record<string, string> = { authorization: `Bearer ${fleet.servers[i]!.agentToken}` };
    if (load) headers["content-type"] = "application/json";
    const t = performance.now();
    request(url, "POST", headers, load ? JSON.stringify({ load }) : undefined).then(
      (r) => {
        inFlight--;
        busy[i] = false;
        (load ? latLoad : latPlain).push(performance.now() - t);
        if (r.status === 204) counts.answered204++;
        else if (r.status === 429) counts.answered429++;
        else {
          counts.answeredOther++;
          otherStatuses[r.status] = (otherStatuses[r.status] ?? 0) + 1;
        }
        if (load) {
          lastLoadRefused[i] = r.status !== 204;
          if (r.status === 204) {
            loads.answered204++;
            lastAccepted[i] = load.usersOnline;
          }
        }
      },
      () => {
        inFlight--;
        busy[i] = false;
        counts.errors++;
        if (load) lastLoadRefused[i] = true;
      },
    );
  };

  const families = ["routeboard_agent_heartbeats_total", "routeboard_snapshot_reloads_total", "routeboard_server_status_changes_total"];
  const metricsBefore = await metricSamples(base, families);
  const everyMs = HEARTBEAT_INTERVAL_S * 1000;
  const loadEvery = LOAD_INTERVAL_S / HEARTBEAT_INTERVAL_S;
  process.stderr.write(
    `heartbeats: ${n} agents × 1 heartbeat per ${HEARTBEAT_INTERVAL_S} s, every ${loadEvery}th with a load, for ${HEARTBEAT_S} s ` +
      `(${Math.round(n / HEARTBEAT_INTERVAL_S)}/s, ${Math.round(n / LOAD_INTERVAL_S)} loads/s)…\n`,
  );
  const startWall = Date.now();
  const cpu0 = cpuSecondsOf(pid);
  const start = performance.now();
  const end = start + HEARTBEAT_S * 1000;
  const healthDuring = sampleHealth(base, () => performance.now() > end);
  // The k-th heartbeat is server k mod n's, due at start + (round + i/n) × the interval: each
  // server's phase spread evenly. Server i's load goes with its rounds where (round + i) is a
  // multiple of 5, so every round a fifth of the servers, spread evenly, send one.
  await new Promise<void>((resolve) => {
    let k = 0;
    const tick = () => {
      const now = performance.now();
      if (now >= end) return resolve();
      const due = Math.floor(((now - start) / everyMs) * n);
      while (k <= due) {
        const i = k % n;
        const round = Math.floor(k / n);
        send(i, (round + i) % loadEvery === 0);
        k++;
      }
      setTimeout(tick, 5);
    };
    tick();
  });
  const cpu1 = cpuSecondsOf(pid);
  const health = await healthDuring;
  const drainDeadline = performance.now() + 60_000;
  while (inFlight > 0 && performance.now() < drainDeadline) await sleep(50);
  const metricsAfter = await metricSamples(base, families);
  const panelCounters: Record<string, number> = {};
  for (const [k, v] of metricsAfter) if (v - (metricsBefore.get(k) ?? 0) !== 0) panelCounters[k] = v - (metricsBefore.get(k) ?? 0);

  // The loads stored: polled until every server's last acked load is there, or nothing has
  // changed for 2 s (a flush every 200 ms), at most 30 s.
  const expected = lastAccepted.filter((u) => u !== null).length;
  const pollStart = performance.now();
  let stored = 0;
  let matched = 0;
  let mismatches: string[] = [];
  let lastChange = performance.now();
  let prevKey = "";
  for (;;) {
    const h = await app.query<{ servers: HealthServer[] }>("monitoring.health", { clusterId: fleet.clusterId });
    const byId = new Map(h.servers.map((s) => [s.id, s]));
    stored = 0;
    matched = 0;
    mismatches = [];
    let atSum = 0;
    fleet.servers.forEach((srv, i) => {
      const l = byId.get(srv.id)?.report?.load;
      const fresh = l && l.at.getTime() >= startWall ? l : null;
      if (fresh) {
        stored++;
        atSum += fresh.at.getTime();
      }
      const want = lastAccepted[i];
      if (want === null || want === undefined) return;
      if (fresh && fresh.usersOnline === want) matched++;
      else mismatches.push(`bench-${i}: last load acked had ${want} users, stored ${fresh ? `${fresh.usersOnline} (at ${fresh.at.toISOString()})` : "none since the phase's start"}`);
    });
    if (matched === expected) break;
    const key = `${stored}/${matched}/${atSum}`;
    if (key !== prevKey) {
      prevKey = key;
      lastChange = performance.now();
    }
    if (performance.now() - lastChange > 2000 || performance.now() - pollStart > 30_000) break;
    await sleep(250);
  }
  const storedWithinS = Math.round((performance.now() - pollStart) / 100) / 10;
  latPlain.sort((a, b) => a - b);
  latLoad.sort((a, b) => a - b);
  const all = [...latPlain, ...latLoad].sort((a, b) => a - b);
  const cpuCores = Math.round(((cpu1 - cpu0) / ((end - start) / 1000)) * 100) / 100;
  const out = {
    durationS: HEARTBEAT_S,
    firstReports,
    offeredPerSecond: Math.round(counts.sent / HEARTBEAT_S),
    counts: { ...counts, otherStatuses },
    loads: { ...loads, sentPerSecond: Math.round(loads.sent / HEARTBEAT_S), lastRefused: lastLoadRefused.filter(Boolean).length },
    latency: {
      p50Ms: percentile(all, 50),
      p99Ms: percentile(all, 99),
      withLoad: { p50Ms: percentile(latLoad, 50), p99Ms: percentile(latLoad, 99) },
      withoutLoad: { p50Ms: percentile(latPlain, 50), p99Ms: percentile(latPlain, 99) },
    },
    health,
    appCpuCores: { idle: idle.cpuCores, during: cpuCores },
    panelCounters,
    stored: { serversWithLoadSinceStart: stored, expected, lastLoadMatches: matched, mismatches: mismatches.length, storedWithinS },
  };
  const w = (line: string) => process.stderr.write(`  ${line}\n`);
  w(`heartbeats offered ${counts.sent} (${out.offeredPerSecond}/s); answered 204: ${counts.answered204}, 429: ${counts.answered429}, other: ${counts.answeredOther}${counts.answeredOther ? ` ${JSON.stringify(otherStatuses)}` : ""}; errors ${counts.errors}; not sent: ${counts.skippedStillWaiting} still waiting, ${counts.skippedInFlightCap} at the in-flight cap`);
  w(`loads due ${loads.due}, sent ${loads.sent} (${out.loads.sentPerSecond}/s), answered 204: ${loads.answered204}; servers whose last load was refused: ${out.loads.lastRefused}`);
  w(`heartbeat answers: p50 ${out.latency.p50Ms} ms, p99 ${out.latency.p99Ms} ms (with a load p50 ${out.latency.withLoad.p50Ms} / p99 ${out.latency.withLoad.p99Ms} ms; without p50 ${out.latency.withoutLoad.p50Ms} / p99 ${out.latency.withoutLoad.p99Ms} ms)`);
  w(`/api/health: p50 ${health.p50Ms} ms, p99 ${health.p99Ms} ms, max ${health.maxMs} ms, ${health.failures} failed during; idle p50 ${idle.health.p50Ms} ms, p99 ${idle.health.p99Ms} ms`);
  w(`app CPU: ${cpuCores} cores during, ${idle.cpuCores} idle`);
  w(`panel counters during: ${JSON.stringify(panelCounters)}`);
  w(`servers with a load stored since the phase's start: ${stored} of ${n} (read ${storedWithinS} s after the last answer)`);
  w(`last load acked = load stored (usersOnline): ${matched} of ${expected} servers that had one acked`);
  if (mismatches.length > 0) {
    w(`MISMATCH: ${mismatches.length} servers' stored load is not the last one acked to them, e.g.:`);
    for (const m of mismatches.slice(0, 5)) w(`  ${m}`);
  }
  return out;
}

void main().catch((err: unknown) => {
  process.stderr.write(`bench:agent failed: ${(err as Error).message}\n`);
  process.exit(1);
});
