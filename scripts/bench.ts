/**
 * npm run bench — figures, not assertions (these machines are noisy):
 *  1. the balancer core alone: decisions per second;
 *  2. GET /sub/<token> of the real app under load (autocannon, 50 connections) with 10,000
 *     subscribers, 100 routes, 500 servers and 2,000 inbounds, side by side in the same run
 *     with a bare node:http server that returns a fixed body of the same size.
 * Needs a production build (`npm run build`); starts and stops everything itself.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { benchCore } from "@/server/balancer/bench";
import { openDatabase } from "@/db/client";
import { clusters, inbounds, routes, serverHealth, serverMetrics, servers, subscribers } from "@/db/schema";
import { newAgentToken, newSubscriptionToken } from "@/server/domain/tokens";

const SIZE = { servers: 500, inboundsPerServer: 4, routes: 100, subscribers: 10_000 };
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = 50;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

async function seed(dataDir: string): Promise<string[]> {
  const database = await openDatabase({ dataDir });
  const db = database.db;
  const [c] = await db.insert(clusters).values({ name: "Bench" }).returning();
  const clusterId = c!.id;
  const routeRows = await db
    .insert(routes)
    .values(Array.from({ length: SIZE.routes }, (_, i) => ({ clusterId, name: `Route ${i}`, position: i })))
    .returning({ id: routes.id });
  const serverRows = await db
    .insert(servers)
    .values(Array.from({ length: SIZE.servers }, (_, i) => ({ clusterId, name: `srv-${i}`, address: `127.1.${i >> 8}.${(i & 255) + 1}`, agentTokenHash: newAgentToken().hash })))
    .returning({ id: servers.id });
  const now = new Date();
  await db.insert(serverHealth).values(serverRows.map((s, i) => ({ serverId: s.id, status: i % 50 === 7 ? "probe-failing" : "healthy", everSucceeded: true })));
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

function waitForHealth(url: string, child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + 120_000;
    const tick = async () => {
      if (child.exitCode !== null) return reject(new Error("app exited during start-up"));
      try {
        if ((await fetch(`${url}/api/health`)).ok) return resolve();
      } catch {
        /* not yet */
      }
      if (Date.now() > deadline) return reject(new Error("app did not start"));
      setTimeout(tick, 250);
    };
    void tick();
  });
}

async function load(url: string, paths: string[]) {
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: DURATION_S,
    requests: paths.map((p) => ({ method: "GET", path: p })),
  });
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    bytesPerRequest: Math.round(result.throughput.total / Math.max(1, result.requests.total)),
  };
}

/** A bare node:http server in its own process answering a fixed body of `size` bytes. */
function startBare(port: number, size: number): ChildProcess {
  const code = `const b=Buffer.alloc(${size},97);require("http").createServer((q,s)=>{s.writeHead(200,{"content-type":"text/plain"});s.end(b)}).listen(${port},"127.0.0.1",()=>console.log("ready"))`;
  return spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "inherit"] });
}

async function main() {
  const core = benchCore();
  process.stderr.write(`core: ${core.decisionsPerSecond.toFixed(0)} decisions/s\n`);

  const dataDir = mkdtempSync(path.join(os.tmpdir(), "rb-bench-"));
  process.stderr.write("seeding 500 servers, 2,000 inbounds, 100 routes, 10,000 subscribers…\n");
  const tokens = await seed(dataDir);
  const port = await freePort();
  const app = spawn(process.execPath, ["--import", "tsx", "server/main.ts"], {
    env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, NODE_ENV: "production", LOG_LEVEL: "warn", ROUTEBOARD_DEMO: "0", ROUTEBOARD_DEVTOOLS: "1", ADMIN_USERNAME: "", ADMIN_PASSWORD: "" },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const bareServer = { child: undefined as ChildProcess | undefined };
  try {
    const url = `http://127.0.0.1:${port}`;
    await waitForHealth(url, app);
    const paths = tokens.map((t) => `/sub/${t}`);
    // Warm-up: every subscriber decided once (first fetches run the balancer on 100 routes).
    process.stderr.write("warming up (first fetch of every subscriber)…\n");
    const warmStart = performance.now();
    for (let i = 0; i < paths.length; i += 50) await Promise.all(paths.slice(i, i + 50).map((p) => fetch(url + p).then((r) => r.arrayBuffer())));
    const firstFetchPerSecond = paths.length / ((performance.now() - warmStart) / 1000);
    // Let the background writer store the 1,000,000 new assignments before measuring.
    for (;;) {
      const m = await (await fetch(`${url}/metrics`)).text();
      const pending = Number(/routeboard_assignment_writes_pending (\d+)/.exec(m)?.[1] ?? 0);
      if (pending === 0) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const storedAfterS = (performance.now() - warmStart) / 1000;
    const sample = await fetch(url + paths[0]);
    const bodySize = (await sample.arrayBuffer()).byteLength;
    process.stderr.write(`body ${bodySize} bytes; loading /sub for ${DURATION_S} s…\n`);
    const routeboard = await load(url, paths);

    const barePort = await freePort();
    bareServer.child = startBare(barePort, bodySize);
    await new Promise((r) => bareServer.child!.stdout!.once("data", r));
    process.stderr.write(`loading the bare node:http server for ${DURATION_S} s…\n`);
    const bare = await load(`http://127.0.0.1:${barePort}`, ["/"]);

    const out = {
      core: { decisionsPerSecond: Math.round(core.decisionsPerSecond), servers: core.servers, routes: core.routes, inboundsPerRoute: core.inboundsPerRoute },
      endpoint: {
        fleet: SIZE,
        bodyBytes: bodySize,
        connections: CONNECTIONS,
        durationS: DURATION_S,
        firstFetchesPerSecond: Math.round(firstFetchPerSecond),
        assignmentsStoredAfterS: Math.round(storedAfterS),
        routeboard,
        bare,
        ratioRequestsPerSecond: Math.round((routeboard.requestsPerSecond / bare.requestsPerSecond) * 1000) / 1000,
      },
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    bareServer.child?.kill("SIGKILL");
    app.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 1000));
    if (app.exitCode === null) app.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  }
}

void main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${(err as Error).message}\n`);
  process.exit(1);
});
