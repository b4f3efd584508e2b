/**
 * `npm run demo`: the app with a live simulated fleet behind its demo cluster.
 *
 * Builds once (when .next/BUILD_ID is missing), starts the app (DATA_DIR ./data-demo unless
 * set; ADMIN_USERNAME admin and a generated ADMIN_PASSWORD, kept in ./data-demo/
 * demo-login.json so a restart logs in again, unless both are given), waits for /api/health,
 * takes over "Demo cluster" (every server on 127.0.0.1 with a fresh agent token, inbounds on
 * free local ports), sets a 5 s report interval and a 5 s probe interval, and runs the fleet
 * with its fault control endpoint. Ctrl-C stops the fleet and the app (by PID).
 *
 * Env: PORT (3000), DEMO_CONTROL_PORT (3999), DEMO_REPORT_INTERVAL_S (5), DEMO_CLUSTER ("Demo cluster").
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { startApp } from "./harness/app";
import { loginToApp } from "./harness/trpc";
import { followAssignments, takeOverCluster } from "./fleet/enrol";
import { startFleet, type Fleet } from "@/server/demo/fleet";
import { startControlServer, type ControlServer } from "./fleet/control";

const ROOT = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), "..");

function intEnv(name: string, dflt: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer in ${min}..${max}`);
  return n;
}

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ROOT, stdio: "inherit" });
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(" ")} exited with ${code}`))));
  });
}

function credentials(dataDir: string): { username: string; password: string } {
  if (process.env.ADMIN_USERNAME && process.env.ADMIN_PASSWORD) {
    return { username: process.env.ADMIN_USERNAME, password: process.env.ADMIN_PASSWORD };
  }
  const file = path.join(dataDir, "demo-login.json");
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, "utf8")) as { username: string; password: string };
    if (saved.username && saved.password) return saved;
  }
  const login = { username: "admin", password: randomBytes(9).toString("base64url") };
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, JSON.stringify(login, null, 2), { mode: 0o600 });
  return login;
}

/** How many subscribers the demo's simulated VPN apps stand for. */
const DEMO_USERS = 300;

/**
 * Simulated VPN apps: the demo cluster gets DEMO_USERS subscribers, and each one's app
 * fetches its subscription now and then, so the balancer assigns them, the fleet carries
 * them, and users and traffic move on the diagram.
 */
async function simulateApps(client: Awaited<ReturnType<typeof loginToApp>>, url: string, clusterId: string, users: number): Promise<{ stop(): void }> {
  let subs = await client.query<Array<{ token: string | null }>>("subscribers.list", { clusterId });
  for (let i = subs.length; i < users; i++) await client.mutation("subscribers.create", { clusterId, name: `demo-user-${i + 1}` });
  subs = await client.query<Array<{ token: string | null }>>("subscribers.list", { clusterId });
  const tokens = subs.map((s) => s.token).filter((t): t is string => !!t);
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let next = 0;
  const tick = async () => {
    // A tenth of the apps refresh every 2 s: every app about every 20 s.
    const batch = Math.max(1, Math.ceil(tokens.length / 10));
    for (let i = 0; i < batch && !stopped; i++) {
      const token = tokens[next++ % tokens.length]!;
      await fetch(`${url}/sub/${token}`).then((r) => r.arrayBuffer()).catch(() => {});
    }
    if (!stopped) timer = setTimeout(() => void tick(), 2000);
  };
  void tick();
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}

async function main(): Promise<void> {
  const port = intEnv("PORT", 3000, 1, 65535);
  const controlPort = intEnv("DEMO_CONTROL_PORT", 3999, 0, 65535);
  const reportIntervalS = intEnv("DEMO_REPORT_INTERVAL_S", 5, 1, 3600);
  const clusterName = process.env.DEMO_CLUSTER || "Demo cluster";
  const dataDir = path.resolve(ROOT, process.env.DATA_DIR || "data-demo");
  const login = credentials(dataDir);
  const url = `http://localhost:${port}`;

  if (!existsSync(path.join(ROOT, ".next", "BUILD_ID"))) {
    console.log("demo: no production build yet — running `npm run build` once…");
    await run("npm", ["run", "build"]);
  }

  const app = await startApp(
    {
      ADMIN_USERNAME: login.username,
      ADMIN_PASSWORD: login.password,
      // The fleet takes over the demo cluster through tooling.rotateAgentTokens; the app's own
      // live demo is off (its simulated agents would compete), so the cluster is created below.
      ROUTEBOARD_DEVTOOLS: "1",
      ROUTEBOARD_DEMO: "0",
      LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
    },
    { port, dataDir, output: "inherit", readyTimeoutMs: 120_000 },
  );
  let fleet: Fleet | null = null;
  let control: ControlServer | null = null;
  let stopFollower: (() => void) | null = null;
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    const force = setTimeout(() => process.exit(code || 1), 10_000);
    force.unref();
    stopFollower?.();
    await control?.close().catch(() => {});
    await fleet?.stop().catch(() => {});
    await app.stop({ keepData: true });
    process.exit(code);
  };
  process.on("SIGINT", () => void shutdown(0));
  process.on("SIGTERM", () => void shutdown(0));
  app.child.once("exit", (code) => {
    if (!stopping) {
      console.error(`demo: the app exited (code ${code}); stopping the fleet`);
      void shutdown(1);
    }
  });

  try {
    const client = await loginToApp(url, login.username, login.password);
    const clusters = await client.query<Array<{ id: string; name: string }>>("clusters.list");
    let cluster = clusters.find((c) => c.name.toLowerCase() === clusterName.toLowerCase());
    if (!cluster) cluster = await client.mutation<{ id: string; name: string }>("clusters.createDemo", { name: clusterName });
    await client.mutation("monitoring.setReportInterval", { clusterId: cluster.id, seconds: reportIntervalS });
    const probe = await client.query<{ config: Record<string, unknown> }>("monitoring.getProbeConfig", { clusterId: cluster.id });
    await client.mutation("monitoring.setProbeConfig", {
      clusterId: cluster.id,
      config: { ...probe.config, intervalS: reportIntervalS, timeoutS: Math.min(Number(probe.config.timeoutS ?? 3), 3) },
    });
    const enrolled = await takeOverCluster(client, cluster.id);
    fleet = await startFleet(enrolled.plan, { appUrl: url, reportIntervalMs: reportIntervalS * 1000, heartbeats: true });
    control = await startControlServer(fleet, controlPort);
    const follower = followAssignments(client, cluster.id, fleet, 3000, (err) => console.warn(`demo: assignment poll failed: ${(err as Error).message}`));
    const apps = await simulateApps(client, url, cluster.id, DEMO_USERS);
    stopFollower = () => {
      follower.stop();
      apps.stop();
    };

    const first = enrolled.plan.servers[0];
    console.log(`
Routeboard demo is running.
  Dashboard:  ${url}/clusters/${cluster.id}   (health: ${url}/clusters/${cluster.id}/health)
  Log in as:  ${login.username} / ${login.password}
  Fleet:      ${enrolled.plan.servers.length} simulated servers of "${cluster.name}", reporting every ${reportIntervalS} s
  Users:      ${DEMO_USERS} simulated apps fetching their subscriptions
  Faults:     ${control.url}  (GET /state, POST /fault, /clear, /users)
    e.g. curl -X POST ${control.url}/fault -H 'content-type: application/json' \\
           -d '{"serverId":"${first?.serverId ?? "<id>"}","fault":"listenerDown","on":true}'   # ${first?.name ?? ""}
         curl -X POST ${control.url}/clear -d '{}'
Ctrl-C stops the fleet and the app.
`);
  } catch (err) {
    console.error(`demo: ${(err as Error).message}`);
    await shutdown(1);
  }
}

main().catch((err: unknown) => {
  console.error(`demo: ${(err as Error)?.message ?? String(err)}`);
  process.exit(1);
});
