/**
 * npm run bench — figures, not assertions (these machines are noisy):
 *  1. the balancer core alone: decisions per second;
 *  2. first fetches: every one of 10,000 subscribers fetched once (100 routes decided each),
 *     and how long until all their assignments are stored;
 *  3. GET /sub/<token> of the real app under load (autocannon, 50 connections) with 10,000
 *     subscribers, 100 routes, 500 servers and 2,000 inbounds, in two phases:
 *       steady — the fleet's statuses do not change;
 *       storm  — 10 % of the servers go down and come back during the measurement, through
 *                the app's real path (their probe listener closes, the active probe fails);
 *     side by side in the same run with a bare node:http server that returns a fixed body
 *     of the same size. Decisions per request come from the app's own /metrics.
 *
 * The synthetic fleet does not depend on timing luck: every server answers the active probe
 * (a TCP listener on its own loopback address, 127.x.y.1, at the cluster's probe port), the
 * ten servers seeded as down have no listener and already a failing probe streak, and the
 * agents' report interval is one hour, so no server goes silent during a run.
 * BENCH_LEGACY_FLEET=1 runs the old fleet (no probe listeners, 60 s report interval) to show
 * what its statuses did to the figures. Needs a production build (`npm run build`).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { benchCore } from "@/scripts/bench/core";
import { freePort, startApp, type AppProcess } from "@/scripts/harness/app";
import { openDatabase } from "@/db/client";
import { clusters, inbounds, routes, serverHealth, serverMetrics, servers, subscribers } from "@/db/schema";
import { newAgentToken, newSubscriptionToken } from "@/server/auth/tokens";

const SIZE = { servers: 500, inboundsPerServer: 4, routes: 100, subscribers: 10_000 };
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = 50;
const LEGACY = process.env.BENCH_LEGACY_FLEET === "1";
/** Seeded as down (probe failing, no listener): 10 servers. */
const isDown = (i: number) => i % 50 === 7;
/** Flipped during the storm: 50 servers (10 %), all healthy before it. */
const isStorm = (i: number) => i % 10 === 3;

const addressOf = (i: number) => `127.${1 + (i >> 8)}.${i & 255}.1`;

async function seed(dataDir: string, probePort: number): Promise<string[]> {
  const database = await openDatabase({ dataDir });
  const db = database.db;
  const [c] = await db
    .insert(clusters)
    .values(LEGACY ? { name: "Bench" } : { name: "Bench", reportIntervalS: 3600, probeConfig: { protocol: "tcp", port: probePort } })
    .returning();
  const clusterId = c!.id;
  const routeRows = await db
    .insert(routes)
    .values(Array.from({ length: SIZE.routes }, (_, i) => ({ clusterId, name: `Route ${i}`, position: i })))
    .returning({ id: routes.id });
  // The storm's servers are probed every second, so a closed listener shows within ~1 s.
  const fast = { intervalS: 1, timeoutS: 1, unhealthyThreshold: 1, healthyThreshold: 1 };
  const serverRows = await db
    .insert(servers)
    .values(
      Array.from({ length: SIZE.servers }, (_, i) => ({
        clusterId,
        name: `srv-${i}`,
        address: addressOf(i),
        agentTokenHash: newAgentToken().hash,
        ...(!LEGACY && isStorm(i) ? { probeOverride: fast } : {}),
      })),
    )
    .returning({ id: servers.id });
  const now = new Date();
  await db.insert(serverHealth).values(
    serverRows.map((s, i) =>
      isDown(i)
        ? { serverId: s.id, status: "probe-failing", everSucceeded: true, probeHealthy: false, probeFailStreak: 3 }
        : { serverId: s.id, status: "healthy", everSucceeded: true },
    ),
  );
  await db.insert(serverMetrics).values(
    serverRows.map((s, i) => ({
      serverId: s.id,
      reportedAt: now,
      listenerAlive: true,
      serviceRunning: true,
      usersOnline: (i * 37) % 300,
      rxBps: ((i * 13) % 900) * 1e6,
      txBps: ((i * 7) % 900) * 1e6,
      cpu: 20,
      memory: 30,
      peakBps: (i % 5 === 0 ? 10_000 : 1_000) * 1e6,
    })),
  );
  // 2,000 inbounds: 20 per route, each route's inbounds spread over different servers.
  const ib = [];
  for (let s = 0; s < SIZE.servers; s++) {
    for (let k = 0; k < SIZE.inboundsPerServer; k++) {
      const n = s * SIZE.inboundsPerServer + k;
      ib.push({
        clusterId,
        serverId: serverRows[s]!.id,
        routeId: routeRows[n % SIZE.routes]!.id,
        name: `Inbound ${n}`,
        port: 443 + k,
        security: "reality" as const,
        sni: "www.example.com",
        realityPublicKey: "Z2V0LXJlYWwta2V5cy1pbi1wcm9kdWN0aW9uLXBsZWFzZQ",
        realityShortIds: ["0123456789abcdef"],
      });
    }
  }
  for (let i = 0; i < ib.length; i += 500) await db.insert(inbounds).values(ib.slice(i, i + 500));
  const tokens = Array.from({ length: SIZE.subscribers }, () => newSubscriptionToken());
  for (let i = 0; i < tokens.length; i += 1000) {
    await db.insert(subscribers).values(tokens.slice(i, i + 1000).map((token, j) => ({ clusterId, name: `user-${i + j}`, token })));
  }
  await database.close();
  return tokens;
}

/** The fleet's probe listeners: one per server on its own loopback address. */
class ProbeListeners {
  private readonly open = new Map<number, net.Server>();
  constructor(private readonly port: number) {}
  async start(i: number): Promise<void> {
    const s = net.createServer((sock) => sock.destroy());
    await new Promise<void>((resolve, reject) => s.once("error", reject).listen(this.port, addressOf(i), () => resolve()));
    this.open.set(i, s);
  }
  async stop(i: number): Promise<void> {
    const s = this.open.get(i);
    this.open.delete(i);
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  }
  async stopAll(): Promise<void> {
    await Promise.all([...this.open.keys()].map((i) => this.stop(i)));
  }
}

/** The app's counters that say what the load cost it. */
async function scrape(url: string) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const sum = (name: string, filter?: RegExp) => {
    let total = 0;
    for (const line of text.split("\n")) {
      if (!line.startsWith(name)) continue;
      if (line[name.length] !== " " && line[name.length] !== "{") continue;
      if (filter && !filter.test(line)) continue;
      total += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
    return total;
  };
  return {
    decisions: sum("routeboard_balancer_decisions_total"),
    requests: sum("routeboard_subscription_requests_total", /outcome="ok"/),
    statusChanges: sum("routeboard_server_status_changes_total"),
    reloads: sum("routeboard_snapshot_reloads_total"),
    snapshotAgeS: sum("routeboard_snapshot_age_seconds"),
    panicRoutes: sum("routeboard_routes_in_panic"),
    pendingWrites: sum("routeboard_assignment_writes_pending"),
  };
}

async function load(url: string, paths: string[], during?: () => Promise<void>) {
  const run = autocannon({
    url,
    connections: CONNECTIONS,
    duration: DURATION_S,
    requests: paths.map((p) => ({ method: "GET", path: p })),
  });
  const [result] = await Promise.all([run, during?.()]);
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    bytesPerRequest: Math.round(result.throughput.total / Math.max(1, result.requests.total)),
  };
}

/**
 * Each path fetched exactly once, 50 at a time (autocannon hands every request the next path).
 * Ends at the last response: autocannon's own promise settles on its next one-second tick,
 * which would round the phase up to whole seconds.
 */
async function firstFetches(url: string, paths: string[]) {
  let next = 0;
  let lastResponseAt = performance.now();
  const instance = autocannon({
    url,
    connections: CONNECTIONS,
    amount: paths.length,
    // The typings miss timeout and setupRequest (autocannon's README documents both).
    ...({ timeout: 60 } as object),
    requests: [{ method: "GET", setupRequest: (req: { path?: string }) => ({ ...req, path: paths[next++ % paths.length] }) } as { method: string }],
  });
  instance.on("response", () => {
    lastResponseAt = performance.now();
  });
  const result = await instance;
  return { p50Ms: result.latency.p50, p99Ms: result.latency.p99, non2xx: result.non2xx, errors: result.errors, lastResponseAt };
}

/** Runs a load phase and reads the app's counters around it. */
async function phase(url: string, paths: string[], during?: () => Promise<void>) {
  const before = await scrape(url);
  const ages: number[] = [];
  const sampler = setInterval(() => void scrape(url).then((m) => ages.push(m.snapshotAgeS)).catch(() => {}), 1000);
  const r = await load(url, paths, during);
  clearInterval(sampler);
  const after = await scrape(url);
  const served = Math.max(1, after.requests - before.requests);
  return {
    ...r,
    decisionsPerRequest: Math.round(((after.decisions - before.decisions) / served) * 1000) / 1000,
    statusChanges: after.statusChanges - before.statusChanges,
    statusChangesBeforePhase: before.statusChanges,
    panicRoutesAtStart: before.panicRoutes,
    snapshotReloads: after.reloads - before.reloads,
    snapshotAgeS: { min: Math.min(...ages), max: Math.max(...ages) },
    panicRoutesAtEnd: after.panicRoutes,
  };
}

/** A bare node:http server in its own process answering a fixed body of `size` bytes. */
function startBare(port: number, size: number): ChildProcess {
  const code = `const b=Buffer.alloc(${size},97);require("http").createServer((q,s)=>{s.writeHead(200,{"content-type":"text/plain"});s.end(b)}).listen(${port},"127.0.0.1",()=>console.log("ready"))`;
  return spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "inherit"] });
}

/**
 * CPU seconds the process has used (user + system, Linux /proc), or NaN elsewhere. On a
 * machine shared with other work this moves far less than rates do.
 */
function cpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return Number.NaN;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const core = benchCore();
  process.stderr.write(`core: ${core.decisionsPerSecond.toFixed(0)} decisions/s\n`);

  const dataDir = mkdtempSync(path.join(os.tmpdir(), "rb-bench-"));
  const probePort = await freePort();
  const listeners = new ProbeListeners(probePort);
  process.stderr.write(`seeding 500 servers, 2,000 inbounds, 100 routes, 10,000 subscribers${LEGACY ? " (legacy fleet: no probe listeners)" : ""}…\n`);
  const tokens = await seed(dataDir, probePort);
  if (!LEGACY) for (let i = 0; i < SIZE.servers; i++) if (!isDown(i)) await listeners.start(i);
  const port = await freePort();
  const bareServer = { child: undefined as ChildProcess | undefined };
  let app: AppProcess | undefined;
  try {
    app = await startApp(
      { ROUTEBOARD_DEMO: "0", ROUTEBOARD_DEVTOOLS: "0" },
      { port, dataDir, urlHost: "127.0.0.1", output: "stderr", readyTimeoutMs: 120_000, nodeFlags: process.env.BENCH_APP_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_APP_PROF}`] : [] },
    );
    const url = app.url;
    const paths = tokens.map((t) => `/sub/${t}`);
    // The app's own background work (probes: the storm's servers every second, the others every
    // 30 s) goes on under every phase; its CPU per second, measured idle, tells it apart. Measured
    // after the start-up's own work has settled (first probes of every server, compilation).
    await sleep(5000);
    const idleFrom = cpuSeconds(app.child.pid);
    const idleT0 = performance.now();
    await sleep(3000);
    const backgroundCpuMsPerS = Math.round(((cpuSeconds(app.child.pid) - idleFrom) / ((performance.now() - idleT0) / 1000)) * 1000);
    // First fetch of every subscriber (each decides 100 routes).
    process.stderr.write("first fetch of every subscriber…\n");
    const warmStart = performance.now();
    const cpuStart = cpuSeconds(app.child.pid);
    const first = await firstFetches(url, paths);
    const firstFetchS = (first.lastResponseAt - warmStart) / 1000;
    const cpuFetched = cpuSeconds(app.child.pid);
    // Until the background writer has stored every new assignment.
    while ((await scrape(url)).pendingWrites > 0) await sleep(100);
    const storedAfterS = (performance.now() - warmStart) / 1000;
    const cpuStored = cpuSeconds(app.child.pid);
    const sample = await fetch(url + paths[0]);
    const bodySize = (await sample.arrayBuffer()).byteLength;

    process.stderr.write(`body ${bodySize} bytes; steady: loading /sub for ${DURATION_S} s…\n`);
    const steady = await phase(url, paths);

    const storm = LEGACY
      ? undefined
      : await (async () => {
          process.stderr.write(`storm: loading /sub for ${DURATION_S} s while 50 servers go down and come back…\n`);
          const flipping = Array.from({ length: SIZE.servers }, (_, i) => i).filter(isStorm);
          // Down one after another over the first half, each back 3 s later.
          const stepMs = (DURATION_S * 500) / flipping.length;
          const drive = async () => {
            await sleep(500);
            const backs: Promise<void>[] = [];
            for (const i of flipping) {
              await listeners.stop(i);
              backs.push(sleep(3000).then(() => listeners.start(i)));
              await sleep(stepMs);
            }
            await Promise.all(backs);
          };
          return phase(url, paths, drive);
        })();

    const barePort = await freePort();
    bareServer.child = startBare(barePort, bodySize);
    await new Promise((r) => bareServer.child!.stdout!.once("data", r));
    process.stderr.write(`bare node:http server: loading for ${DURATION_S} s…\n`);
    const bare = await load(`http://127.0.0.1:${barePort}`, ["/"]);
    const ratio = (x: { requestsPerSecond: number }) => Math.round((x.requestsPerSecond / bare.requestsPerSecond) * 1000) / 1000;

    const out = {
      core: { decisionsPerSecond: Math.round(core.decisionsPerSecond), servers: core.servers, routes: core.routes, inboundsPerRoute: core.inboundsPerRoute },
      firstFetch: {
        subscribers: SIZE.subscribers,
        routes: SIZE.routes,
        firstFetchesPerSecond: Math.round(SIZE.subscribers / firstFetchS),
        p50Ms: first.p50Ms,
        p99Ms: first.p99Ms,
        non2xx: first.non2xx,
        errors: first.errors,
        allAssignmentsStoredAfterS: Math.round(storedAfterS * 10) / 10,
        storedAfterLastFetchS: Math.round((storedAfterS - firstFetchS) * 10) / 10,
        /** The app's CPU time per first fetch: until the last answer, and until all is stored. */
        appCpuMsPerFetch: Math.round(((cpuFetched - cpuStart) / SIZE.subscribers) * 1e5) / 100,
        appCpuMsPerFetchStored: Math.round(((cpuStored - cpuStart) / SIZE.subscribers) * 1e5) / 100,
        /** The app's CPU per second while idle before the first fetches (included above, per second of the phase). */
        appBackgroundCpuMsPerS: backgroundCpuMsPerS,
      },
      endpoint: {
        fleet: { ...SIZE, legacy: LEGACY },
        bodyBytes: bodySize,
        connections: CONNECTIONS,
        durationS: DURATION_S,
        steady: { ...steady, ratio: ratio(steady) },
        ...(storm ? { storm: { ...storm, ratio: ratio(storm) } } : {}),
        bare,
      },
    };
    const row = (name: string, x: { requestsPerSecond: number; p50Ms: number; p99Ms: number }, extra = "") =>
      `${name.padEnd(8)} ${String(x.requestsPerSecond).padStart(7)} req/s  p50 ${String(x.p50Ms).padStart(3)} ms  p99 ${String(x.p99Ms).padStart(4)} ms  ${extra}\n`;
    process.stderr.write(
      `\n${row("steady", steady, `ratio ${ratio(steady)}  decisions/request ${steady.decisionsPerRequest}  status changes ${steady.statusChanges}`)}` +
        (storm ? row("storm", storm, `ratio ${ratio(storm)}  decisions/request ${storm.decisionsPerRequest}  status changes ${storm.statusChanges}`) : "") +
        row("bare", bare) +
        `first fetches ${out.firstFetch.firstFetchesPerSecond}/s (p99 ${out.firstFetch.p99Ms} ms); all assignments stored ${out.firstFetch.allAssignmentsStoredAfterS} s after the first, ${out.firstFetch.storedAfterLastFetchS} s after the last; app CPU ${out.firstFetch.appCpuMsPerFetch} ms per first fetch (${out.firstFetch.appCpuMsPerFetchStored} ms with storing; idle it uses ${backgroundCpuMsPerS} ms/s)\n\n`,
    );
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    bareServer.child?.kill("SIGKILL");
    await app?.stop({ keepData: true });
    await listeners.stopAll();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

void main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
