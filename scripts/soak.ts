/**
 * npm run soak -- --minutes N
 *
 * Two app instances on one PostgreSQL (started here, on a loopback port), a simulated fleet
 * behind the demo cluster whose agents report and send heartbeats as current agents do,
 * subscription load with autocannon on both instances, random fleet faults (one server at a
 * time, so no route ever panics; "machine down" is its listeners and its agent at once) and one
 * database restart halfway. Prints one JSON object: 5xx answers, answers naming a server
 * already known down, p50/p99 latency, servers marked down while no fault was on them
 * (healthyMarkedDown), and for each machine down the time until the app's status said so.
 * "Known down" = the app's own health status said so more than 1 s (the propagation budget)
 * before the request was sent.
 * Needs a production build (`npm run build`). Everything started here is stopped by PID.
 *
 * npm run soak -- --phase heartbeats: the fast failover path (issue 24) under lost and late
 * heartbeats, busy machines, probe timeouts and the panel's own outages, in process on a
 * simulated clock (scripts/soak-heartbeats.ts); prints healthyMarkedDown and failover times.
 */
import autocannon from "autocannon";
import { startApp, type AppProcess } from "./harness/app";
import { startPg, type PgServer } from "./harness/postgres";
import { loginToApp, type AppClient, type HealthServerRow } from "./harness/trpc";
import { takeOverCluster } from "./fleet/enrol";
import { startFleet, type Fleet } from "@/server/demo/fleet";
import type { SimFault } from "@/server/demo/sim-server";
import { heartbeatSoakMain } from "./soak-heartbeats";

function minutesArg(): number {
  const i = process.argv.indexOf("--minutes");
  const raw = i >= 0 ? process.argv[i + 1] : "1";
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0 || n > 240) {
    process.stderr.write("soak: --minutes must be a number of minutes between 0 and 240, e.g. --minutes 5\n");
    process.exit(2);
  }
  return n;
}

const log = (m: string) => process.stderr.write(`soak: ${m}\n`);
const percentile = (xs: number[], q: number) => [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PROPAGATION_MS = 1000;
/** One fault a round, on one server: each entry is switched on together. */
const FAULTS: Array<{ name: string; faults: SimFault[] }> = [
  { name: "firewalled", faults: ["firewalled"] },
  { name: "serviceDown", faults: ["serviceDown"] },
  { name: "listenerDown", faults: ["listenerDown"] },
  { name: "stopReporting", faults: ["stopReporting"] },
  // A machine that dies: its ports close and its agent falls silent at once (the fast path's case).
  { name: "machineDown", faults: ["listenerDown", "stopReporting"] },
];

type HealthRow = Pick<HealthServerRow, "id" | "name" | "status">;

async function main() {
  const minutes = minutesArg();
  const durationMs = minutes * 60_000;
  let pg: PgServer | undefined;
  const apps: AppProcess[] = [];
  let fleet: Fleet | undefined;
  const stopAll = async () => {
    await fleet?.stop().catch(() => {});
    for (const a of apps) await a.stop().catch(() => {});
    pg?.stop();
  };
  process.on("SIGINT", () => void stopAll().then(() => process.exit(130)));
  try {
    pg = await startPg();
    const env = {
      DATABASE_URL: pg.url,
      ADMIN_USERNAME: "soak",
      ADMIN_PASSWORD: "soak-password",
      SESSION_SECRET: "soak-shared-session-secret-32-chars-long",
      // The soak's own fleet takes over a demo cluster: not the app's live demo, whose simulated agents would compete.
      ROUTEBOARD_DEMO: "0",
      ROUTEBOARD_DEVTOOLS: "1",
      ROUTEBOARD_LEADER_RETRY_MS: "1000",
      ROUTEBOARD_SWEEP_MS: "500",
    };
    apps.push(await startApp(env));
    apps.push(await startApp(env));
    const [a, b] = apps as [AppProcess, AppProcess];
    log(`instances on ${a.url} and ${b.url}, PostgreSQL on ${pg.url}`);
    const client: AppClient = await loginToApp(a.url, "soak", "soak-password");
    const clusterId = (await client.mutation<{ id: string }>("clusters.createDemo", { name: "Demo cluster" })).id;
    await client.mutation("monitoring.setReportInterval", { clusterId, seconds: 2 });
    await client.mutation("monitoring.setProbeConfig", { clusterId, config: { intervalS: 1, timeoutS: 1, unhealthyThreshold: 2, healthyThreshold: 1 } });
    const enrolled = await takeOverCluster(client, clusterId);
    fleet = await startFleet(enrolled.plan, { appUrl: a.url, reportIntervalMs: 2000, heartbeats: true });
    const tokens: string[] = [];
    for (let i = 0; i < 200; i++) {
      const s = await client.mutation<{ token: string | null }>("subscribers.create", { clusterId, name: `soak-${i}` });
      if (s.token) tokens.push(s.token);
    }
    // Wait for every server to be healthy before measuring.
    const health = async (): Promise<HealthRow[]> => {
      const h = await client.query<{ servers: HealthRow[] }>("monitoring.health", { clusterId });
      return h.servers;
    };
    for (let i = 0; i < 60; i++) {
      if ((await health()).every((s) => s.status === "healthy")) break;
      await sleep(1000);
    }
    log(`fleet healthy; ${tokens.length} subscribers; running for ${minutes} min`);

    // Known-down tracking from the app's own statuses.
    const downSince = new Map<string, number>();
    const nameToId = new Map(enrolled.plan.servers.map((s) => [s.name, s.serverId]));
    // A server is faulted from its fault's start until the app sees it healthy after the fault
    // is cleared; a server marked down outside that is a healthy server marked down.
    const faulted = new Map<string, { name: string; at: number; cleared: boolean; seenDownAt: number | null }>();
    const healthyMarkedDown: string[] = [];
    const failoverMs: number[] = [];
    let stop = false;
    const watcher = (async () => {
      while (!stop) {
        try {
          const now = Date.now();
          for (const s of await health()) {
            const f = faulted.get(s.id);
            if (s.status !== "healthy") {
              if (!downSince.has(s.id)) {
                downSince.set(s.id, now);
                if (!f) healthyMarkedDown.push(`${new Date(now).toISOString()} ${s.name} ${s.status} with no fault on it`);
              }
              if (f && f.seenDownAt === null) {
                f.seenDownAt = now;
                if (f.name === "machineDown") failoverMs.push(now - f.at);
              }
            } else {
              downSince.delete(s.id);
              if (f?.cleared) faulted.delete(s.id);
            }
          }
        } catch {
          // database restarting: keep the last known statuses
        }
        await sleep(200);
      }
    })();

    let checked = 0;
    let namingKnownDown = 0;
    let checker5xx = 0;
    let checker4xx = 0;
    const examples: string[] = [];
    const checker = (async () => {
      while (!stop) {
        const token = tokens[Math.floor(Math.random() * tokens.length)]!;
        const app = Math.random() < 0.5 ? a : b;
        const sentAt = Date.now();
        const known = new Map([...downSince].filter(([, since]) => sentAt - since > PROPAGATION_MS));
        try {
          const res = await fetch(`${app.url}/sub/${token}?format=json`);
          if (res.status >= 500) checker5xx++;
          else if (res.status >= 400) {
            checker4xx++;
            if (examples.length < 5) examples.push(`${new Date(sentAt).toISOString()} HTTP ${res.status} for a live subscriber on ${app.url}: ${(await res.text()).trim()}`);
          } else if (res.ok) {
            const body = (await res.json()) as { routes: Array<{ server: string; route: string }> };
            checked++;
            for (const r of body.routes) {
              const id = nameToId.get(r.server);
              if (id && known.has(id)) {
                namingKnownDown++;
                if (examples.length < 5) examples.push(`${new Date(sentAt).toISOString()} ${r.route} → ${r.server}`);
              }
            }
          }
        } catch {
          checker5xx++;
        }
        await sleep(20);
      }
    })();

    const faultsInjected: string[] = [];
    const chaos = (async () => {
      const servers = enrolled.plan.servers;
      const restartAt = Date.now() + durationMs / 2;
      let restarted = false;
      while (!stop) {
        const s = servers[Math.floor(Math.random() * servers.length)]!;
        const fault = FAULTS[Math.floor(Math.random() * FAULTS.length)]!;
        const entry = { name: fault.name, at: Date.now(), cleared: false, seenDownAt: null };
        faulted.set(s.serverId, entry);
        for (const f of fault.faults) await fleet!.get(s.serverId)?.setFault(f, true);
        faultsInjected.push(`${fault.name}@${s.name}`);
        await sleep(12_000);
        await fleet!.get(s.serverId)?.clearFaults();
        entry.cleared = true;
        // Let it come back before the next fault, so routes never lose every server.
        for (let i = 0; i < 20 && !stop; i++) {
          if (!downSince.has(s.serverId)) break;
          await sleep(500);
        }
        if (!restarted && Date.now() > restartAt) {
          restarted = true;
          log("restarting PostgreSQL");
          await pg!.restart(3000);
          log("PostgreSQL is back");
        }
        await sleep(3000);
      }
    })();

    const paths = tokens.map((t) => ({ method: "GET", path: `/sub/${t}` }));
    const loadStarted = Date.now();
    const oddAnswers: string[] = [];
    const load = (app: AppProcess) => {
      const run = autocannon({ url: app.url, connections: 10, duration: Math.round(durationMs / 1000), requests: paths });
      // Keep a note of the first few answers that were not 2xx: when, where, which status.
      run.on("response", (_client, status) => {
        if ((status < 200 || status >= 300) && oddAnswers.length < 10) oddAnswers.push(`+${((Date.now() - loadStarted) / 1000).toFixed(1)} s ${app.url} HTTP ${status}`);
      });
      return run;
    };
    const [ra, rb] = await Promise.all([load(a), load(b)]);
    stop = true;
    await Promise.all([watcher, checker, chaos]);
    const result = {
      minutes,
      instances: 2,
      requests: ra.requests.total + rb.requests.total,
      answers5xx: ra["5xx"] + rb["5xx"] + checker5xx,
      answers4xx: ra["4xx"] + rb["4xx"] + checker4xx,
      errors: ra.errors + rb.errors,
      checkedAnswers: checked,
      answersNamingKnownDownServer: namingKnownDown,
      examples,
      non2xxAnswers: oddAnswers,
      latencyMs: { p50: Math.max(ra.latency.p50, rb.latency.p50), p99: Math.max(ra.latency.p99, rb.latency.p99) },
      requestsPerSecond: Math.round(ra.requests.average + rb.requests.average),
      faultsInjected: faultsInjected.length,
      databaseRestarts: 1,
      healthyMarkedDown: healthyMarkedDown.length,
      healthyMarkedDownExamples: healthyMarkedDown.slice(0, 5),
      machineDowns: faultsInjected.filter((f) => f.startsWith("machineDown@")).length,
      machineDownToStatusMs: failoverMs.length === 0 ? null : { p50: percentile(failoverMs, 0.5), max: Math.max(...failoverMs), n: failoverMs.length },
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await stopAll();
  }
}

const phaseAt = process.argv.indexOf("--phase");
const phase = phaseAt >= 0 ? process.argv[phaseAt + 1] : "fleet";
if (phase === "heartbeats") {
  heartbeatSoakMain();
} else if (phase !== "fleet") {
  process.stderr.write(`soak: --phase must be fleet (the default) or heartbeats, not ${phase}\n`);
  process.exit(2);
} else {
  void main().catch((err: unknown) => {
    process.stderr.write(`soak failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
