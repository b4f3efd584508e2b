/**
 * A fleet of simulated servers from a plan: every server checks every other one. The app's
 * live demo runs one (live.ts); so do `npm run demo`, `fleet`, `soak` and the tests.
 */
import { SimNetwork, startSimServer, type SimServer, type SimServerState } from "./sim-server";

/** The servers a fleet runs, as the app knows them (scripts/fleet/plan.ts validates a plan file). */
export interface FleetPlan {
  servers: Array<{ serverId: string; name: string; token: string; inboundPorts: number[]; healthPort: number; capacityBps?: number }>;
}

export interface FleetOptions {
  /** App base URL, e.g. http://localhost:3000; "" = do not report. */
  appUrl: string;
  reportIntervalMs: number;
  /** Default capacity for servers whose plan entry has none (default 1 Gbit/s). */
  capacityBps?: number;
  host?: string;
  network?: SimNetwork;
  random?: () => number;
  neighbourTimeoutMs?: number;
  /** How long a report may take (the simulated server's default: its interval, at most 5 s). */
  reportTimeoutMs?: number;
  /** Send heartbeats with loads as a current agent does (default false: an agent from before them). */
  heartbeats?: boolean;
}

export interface Fleet {
  readonly servers: ReadonlyMap<string, SimServer>;
  readonly network: SimNetwork;
  readonly plan: FleetPlan;
  get(serverId: string): SimServer | undefined;
  state(): { servers: (SimServerState & { name: string })[] };
  stop(): Promise<void>;
}

export function reportUrlFor(appUrl: string): string {
  if (!appUrl) return "";
  return new URL("/api/agent/report", appUrl).toString();
}

export function heartbeatUrlFor(appUrl: string): string | undefined {
  if (!appUrl) return undefined;
  return new URL("/api/agent/heartbeat", appUrl).toString();
}

export async function startFleet(plan: FleetPlan, opts: FleetOptions): Promise<Fleet> {
  const host = opts.host ?? "127.0.0.1";
  const network = opts.network ?? new SimNetwork();
  const servers = new Map<string, SimServer>();
  const names = new Map(plan.servers.map((s) => [s.serverId, s.name]));
  try {
    for (const s of plan.servers) {
      const sim = await startSimServer({
        serverId: s.serverId,
        token: s.token,
        inboundPorts: s.inboundPorts,
        healthPort: s.healthPort,
        reportUrl: reportUrlFor(opts.appUrl),
        reportIntervalMs: opts.reportIntervalMs,
        heartbeatUrl: opts.heartbeats ? heartbeatUrlFor(opts.appUrl) : undefined,
        neighbours: [],
        capacityBps: s.capacityBps ?? opts.capacityBps ?? 1_000_000_000,
        host,
        network,
        random: opts.random,
        neighbourTimeoutMs: opts.neighbourTimeoutMs,
        reportTimeoutMs: opts.reportTimeoutMs,
        // neighbours are only known once every server is bound: first report after one interval
        reportOnStart: false,
      });
      servers.set(s.serverId, sim);
    }
  } catch (err) {
    await Promise.allSettled([...servers.values()].map((s) => s.stop()));
    throw err;
  }
  const all = [...servers.values()];
  for (const sim of all) {
    sim.setNeighbours(
      all
        .filter((o) => o !== sim)
        .map((o) => ({ serverId: o.serverId, host, port: o.inboundPorts[0] ?? 0 })),
    );
  }
  return {
    servers,
    network,
    plan,
    get: (id) => servers.get(id),
    state: () => ({ servers: all.map((s) => ({ ...s.state(), name: names.get(s.serverId) ?? s.serverId })) }),
    stop: async () => {
      await Promise.allSettled(all.map((s) => s.stop()));
    },
  };
}
