/**
 * Simulated VPN fleet on 127.0.0.1.
 *
 *   npm run fleet -- --servers 5 [--app http://localhost:3000] [--control-port 3999]
 *                    [--plan plan.json] [--write-plan out.json] [--report-interval-ms 10000]
 *                    [--base-port 21000] [--capacity-mbps 1000] [--users N]
 *
 * Without --plan, a local plan with fresh ids/tokens is generated (the app does not know
 * those servers until enrolment exists; write it with --write-plan to enrol by hand).
 * Control: GET /state, POST /fault {serverId, fault, on, observers?, ms?}, POST /clear,
 * POST /users on the control port. Stops cleanly on SIGINT/SIGTERM.
 */
import { parseArgs } from "node:util";
import { writeFile } from "node:fs/promises";
import { formatZodError } from "@/server/monitoring/contract";
import { generateLocalPlan, loadPlan, type FleetEnroller, type FleetPlan } from "./fleet/plan";
import { startFleet } from "./fleet/fleet";
import { startControlServer } from "./fleet/control";

const USAGE = `usage: npm run fleet -- --servers N [--app http://localhost:3000] [--control-port 3999]
       [--plan plan.json] [--write-plan out.json] [--report-interval-ms 10000]
       [--base-port 21000] [--capacity-mbps 1000] [--users N]`;

/** Placeholder until the lead wires tRPC enrolment; returning null = not available. */
const enrol: FleetEnroller | null = null;

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
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const controlPort = int("control-port", values["control-port"], 3999, 0, 65535);
  const reportIntervalMs = int("report-interval-ms", values["report-interval-ms"], 10_000, 100, 3_600_000);
  const basePort = int("base-port", values["base-port"], 21_000, 0, 65_000);
  const capacityMbps = int("capacity-mbps", values["capacity-mbps"], 1000, 1, 1_000_000);
  const users = int("users", values.users, 0, 0, 10_000_000);
  const appUrl = values.app ?? "";

  let plan: FleetPlan;
  if (values.plan) {
    plan = await loadPlan(values.plan);
  } else {
    const count = int("servers", values.servers, 3, 1, 1000);
    plan = enrol ? await enrol(count, { appUrl, basePort }) : generateLocalPlan(count, basePort);
    if (!enrol) {
      console.warn("fleet: no enrolment yet — generated a local plan; the app will reject reports (401) until these servers exist there.");
    }
  }
  if (values["write-plan"]) await writeFile(values["write-plan"], JSON.stringify(plan, null, 2));

  const fleet = await startFleet(plan, { appUrl, reportIntervalMs, capacityBps: capacityMbps * 1_000_000 });
  if (users > 0) {
    const per = Math.floor(users / fleet.servers.size);
    for (const s of fleet.servers.values()) s.setUsers(per);
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
    await control.close();
    await fleet.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}

main().catch((err: unknown) => {
  const msg = (err as { issues?: unknown })?.issues ? formatZodError(err) : (err as Error)?.message ?? String(err);
  console.error(`fleet: ${msg}`);
  console.error(USAGE);
  process.exit(1);
});
