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
 *     answers and the RSS growth. Stops the app by its PID and prints one JSON summary.
 * BENCH_PHASES (default "flood,oversized") picks the phases.
 *
 * Sends are paced by a schedule, not by answers, and in-flight requests are capped, so a
 * slow panel shows as fewer reports accepted and longer latencies, never as a hung bench.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import os from "node:os";
import { readFileSync } from "node:fs";
import { startApp } from "./harness/app";
import { loginToApp, type AppClient } from "./harness/trpc";

const SERVERS = Number(process.env.BENCH_SERVERS ?? 2000);
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 1000);
const USERS_PER_REPORT = 100;
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 15);
const IDLE_S = 5;
const MAX_IN_FLIGHT = Number(process.env.BENCH_MAX_IN_FLIGHT ?? 512);
const HEALTH_EVERY_MS = 50;
const PHASES = new Set((process.env.BENCH_PHASES ?? "flood,oversized").split(",").map((p) => p.trim()));
const OVERSIZED_S = Number(process.env.BENCH_OVERSIZED_S ?? 10);
/** One round of 5 per this many ms (0: back to back, a flood of 12 MB bodies). */
const OVERSIZED_EVERY_MS = Number(process.env.BENCH_OVERSIZED_EVERY_MS ?? 1000);
const OVERSIZED_CONCURRENT = 5;
const OVERSIZED_USERS = 200_000;

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
    const idle = await sampleHealth(base, () => performance.now() > idleEnd);

    let flood: Record<string, unknown> | null = null;
    if (PHASES.has("flood")) flood = await floodPhase(app, base, fleet);
    let oversized: Awaited<ReturnType<typeof oversizedPhase>> | null = null;
    if (PHASES.has("oversized")) {
      process.stderr.write(`oversized: ${OVERSIZED_CONCURRENT} concurrent 12 MB reports from one token, round after round, for ${OVERSIZED_S} s…\n`);
      oversized = await oversizedPhase(base, server.child.pid, fleet.servers[0]!.agentToken);
    }
    const summary = {
      database: process.env.DATABASE_URL ? "postgres" : "pglite",
      servers: SERVERS,
      subscribers: SUBSCRIBERS,
      enrolS: Math.round(enrolS),
      ...(flood ? { ...flood, healthDuringFlood: undefined } : {}),
      health: { idle, ...(flood ? { duringFlood: flood.healthDuringFlood } : {}) },
      ...(oversized ? { oversized } : {}),
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
      if (busy[i]) {
        counts.skippedStillWaiting++;
        return;
      }
      if (inFlight >= MAX_IN_FLIGHT) {
        counts.skippedInFlightCap++;
        return;
      }
      seq[i]!++;
      const body =
        `{"listenerAlive":true,"serviceRunning":true,"usersOnline":${USERS_PER_REPORT},"rxBps":1000000,"txBps":2000000,"cpu":10,"memory":20,` +
        `"neighbours":[],"instance":"${instance}","seq":${seq[i]},"users":${usersJson[i]}}`;
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

void main().catch((err: unknown) => {
  process.stderr.write(`bench:agent failed: ${(err as Error).message}\n`);
  process.exit(1);
});
