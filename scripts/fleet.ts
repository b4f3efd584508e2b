/**
 * Simulated VPN fleet on 127.0.0.1.
 *
 *   npm run fleet -- --servers 5 [--app http://localhost:3000] [--username U --password P]
 *                    [--cluster NAME | --cluster-id ID] [--take-over] [--control-port 3999]
 *                    [--plan plan.json] [--write-plan out.json] [--report-interval-ms N]
 *                    [--capacity-mbps 1000] [--users N] [--local]
 *
 * By default the fleet logs in to the app (--username/--password, else $ROUTEBOARD_USERNAME/
 * $ROUTEBOARD_PASSWORD, else $ADMIN_USERNAME/$ADMIN_PASSWORD) and enrols N servers sim-01…
 * with tooling.enrolFleet in the cluster --cluster (default "Fleet", created when missing),
 * or with --take-over moves the existing servers of that cluster onto the fleet
 * (tooling.rotateAgentTokens). The report interval is the cluster's unless
 * --report-interval-ms is given; each sim server's users follow the subscribers the balancer
 * assigned to it (tooling.assignmentCounts, polled every 3 s) unless --users is given.
 * --plan uses a plan file; --local generates a plan the app does not know (reports get 401).
 * Each server also sends the agent's heartbeats (every 2 s, its load every 10 s), so the fast
 * failover path judges it as it judges a real agent; the stopReporting fault silences both.
 * The app must run with ROUTEBOARD_DEVTOOLS=1 (tooling.* exists only then).
 * Control: GET /state, POST /fault {serverId, fault, on, observers?, ms?}, POST /clear,
 * POST /users on the control port. Stops cleanly on SIGINT/SIGTERM.
 */
import { parseArgs } from "node:util";
import { writeFile } from "node:fs/promises";
import { formatZodError } from "@/core/monitoring-contract";
import { generateLocalPlan, loadPlan, type FleetPlan } from "./fleet/plan";
import { loginToApp, type AppClient } from "./harness/trpc";
import { enrolFleet, followAssignments, takeOverCluster, type AssignmentFollower } from "./fleet/enrol";
import { startFleet } from "@/server/demo/fleet";
import { startControlServer } from "./fleet/control";

const USAGE = `usage: npm run fleet -- --servers N [--app http://localhost:3000] [--username U --password P]
       [--cluster NAME | --cluster-id ID] [--take-over] [--control-port 3999]
       [--plan plan.json] [--write-plan out.json] [--report-interval-ms N]
       [--capacity-mbps 1000] [--users N] [--local [--base-port 21000]]`;

function int(name: string, v: string | undefined, dflt: number, min: number, max: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name} must be an integer in ${min}..${max}`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      servers: { type: "string" },
      app: { type: "string", default: "http://localhost:3000" },
      "control-port": { type: "string" },
      plan: { type: "string" },
      "write-plan": { type: "string" },
      "report-interval-ms": { type: "string" },
      "base-port": { type: "string" },
      "capacity-mbps": { type: "string" },
      users: { type: "string" },
      username: { type: "string" },
      password: { type: "string" },
      cluster: { type: "string" },
      "cluster-id": { type: "string" },
      "take-over": { type: "boolean" },
      local: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const controlPort = int("control-port", values["control-port"], 3999, 0, 65535);
  const basePort = int("base-port", values["base-port"], 21_000, 0, 65_000);
  const capacityMbps = int("capacity-mbps", values["capacity-mbps"], 1000, 1, 1_000_000);
  const users = values.users === undefined ? null : int("users", values.users, 0, 0, 10_000_000);
  const appUrl = values.app ?? "";

  let plan: FleetPlan;
  let reportIntervalS: number | null = null;
  let app: AppClient | null = null;
  let clusterId: string | null = null;
  if (values.plan) {
    plan = await loadPlan(values.plan);
  } else if (values.local) {
    plan = generateLocalPlan(int("servers", values.servers, 3, 1, 1000), basePort);
    console.warn("fleet: --local plan: the app does not know these servers and will answer 401 to their reports.");
  } else {
    const username = values.username ?? process.env.ROUTEBOARD_USERNAME ?? process.env.ADMIN_USERNAME;
    const password = values.password ?? process.env.ROUTEBOARD_PASSWORD ?? process.env.ADMIN_PASSWORD;
    if (!username || !password) throw new Error("give --username and --password (an admin of the app), or use --plan / --local");
    app = await loginToApp(appUrl, username, password);
    let enrolled;
    if (values["take-over"]) {
      const id = values["cluster-id"] ?? (await clusterIdByName(app, values.cluster ?? "Demo cluster"));
      enrolled = await takeOverCluster(app, id);
    } else {
      const count = int("servers", values.servers, 3, 1, 200);
      enrolled = await enrolFleet(app, {
        servers: count,
        ...(values["cluster-id"] ? { clusterId: values["cluster-id"] } : { clusterName: values.cluster ?? "Fleet" }),
      });
    }
    plan = enrolled.plan;
    reportIntervalS = enrolled.reportIntervalS;
    clusterId = enrolled.clusterId;
    console.log(`fleet: enrolled ${plan.servers.length} servers in cluster "${enrolled.clusterName}" (${clusterId})`);
  }
  const reportIntervalMs = int(
    "report-interval-ms",
    values["report-interval-ms"],
    reportIntervalS !== null ? reportIntervalS * 1000 : 10_000,
    100,
    3_600_000,
  );
  if (values["write-plan"]) await writeFile(values["write-plan"], JSON.stringify(plan, null, 2));

  const fleet = await startFleet(plan, { appUrl, reportIntervalMs, capacityBps: capacityMbps * 1_000_000, heartbeats: true });
  let follower: AssignmentFollower | null = null;
  if (users !== null) {
    const per = Math.floor(users / Math.max(1, fleet.servers.size));
    for (const s of fleet.servers.values()) s.setUsers(per);
  } else if (app && clusterId) {
    follower = followAssignments(app, clusterId, fleet, 3000, (err) => console.warn(`fleet: assignment poll failed: ${(err as Error).message}`));
  }
  const control = await startControlServer(fleet, controlPort);

  for (const s of fleet.state().servers) {
    console.log(`  ${s.name}  ${s.serverId}  inbound ${s.inboundPorts.join(",")}  health ${s.healthPort}`);
  }
  console.log(`fleet: ${fleet.servers.size} servers reporting to ${appUrl || "(nowhere)"} every ${reportIntervalMs} ms`);
  console.log(`fleet: control on ${control.url} (GET /state, POST /fault, /clear, /users)`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`fleet: ${signal}, stopping…`);
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    follower?.stop();
    await control.close();
    await fleet.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}

async function clusterIdByName(app: AppClient, name: string): Promise<string> {
  const list = await app.query<Array<{ id: string; name: string }>>("clusters.list");
  const found = list.find((c) => c.name.toLowerCase() === name.toLowerCase());
  if (!found) throw new Error(`no cluster named "${name}" (clusters: ${list.map((c) => c.name).join(", ") || "none"})`);
  return found.id;
}

main().catch((err: unknown) => {
  const msg = (err as { issues?: unknown })?.issues ? formatZodError(err) : (err as Error)?.message ?? String(err);
  console.error(`fleet: ${msg}`);
  console.error(USAGE);
  process.exit(1);
});
