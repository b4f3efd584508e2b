/**
 * The live demo: simulated agents behind the demo cluster, inside the app's own process, so
 * `npm start` opens a cluster whose statuses are green and whose users and traffic move.
 *
 * Only the cluster that seedDemoIfEmpty recorded (LIVE_DEMO_KEY) is ever touched, and only
 * while ROUTEBOARD_DEMO is on. At start its servers move to 127.0.0.1 with fresh agent tokens
 * (kept in memory only; the database has their hashes, as for any server) and its inbounds to
 * free local ports. Each simulated server listens on those ports (the prober checks them like
 * any server's) and POSTs its reports to this app's own /api/agent/report over loopback with
 * its bearer token, and its heartbeats to /api/agent/heartbeat, exactly as a real agent does;
 * simulated apps fetch the demo subscribers' /sub links, so the balancer assigns them, and each
 * server's reports carry the traffic of the subscribers assigned to it, so their usage and
 * "last seen" move. Nothing here adds an endpoint or a way in.
 *
 * It stops when the demo cluster is deleted (a "topology" change for it, from any instance),
 * and a simulated server stops when its server is deleted.
 */
import { eq, inArray } from "drizzle-orm";
import type { Db } from "@/db/client";
import { clusters, servers, subscribers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { onChange, publishChange } from "@/server/bus";
import { assignedSubscribersByServer, localiseServers } from "@/server/topology/tooling";
import { startFleet, type Fleet } from "./fleet";
import { liveDemoClusterId, liveDemoServerIds } from "./seed";

export interface LiveDemoLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface LiveDemo {
  readonly clusterId: string;
  readonly fleet: Fleet;
  stop(): Promise<void>;
}

/** How often the simulated servers learn how many users the balancer gave them. */
const USERS_POLL_MS = 3000;
/** Every simulated app fetches its subscription about this often. */
const APP_REFRESH_MS = 20_000;

/** The app's own address on loopback, from what it listens on (HOST 0.0.0.0 or :: = every address). */
export function loopbackUrl(host: string, port: number): string {
  if (host === "0.0.0.0" || host === "" || host === "localhost") return `http://127.0.0.1:${port}`;
  if (host === "::") return `http://[::1]:${port}`;
  return host.includes(":") ? `http://[${host}]:${port}` : `http://${host}:${port}`;
}

/**
 * Starts the simulated agents of the live demo cluster, or does nothing (null) when there is
 * none. `appUrl` is this app on loopback; `reportIntervalS` is the cluster's own.
 */
export async function startLiveDemo(opts: { db: Db; appUrl: string; log: LiveDemoLog }): Promise<LiveDemo | null> {
  const { db, appUrl, log } = opts;
  const clusterId = await liveDemoClusterId(db);
  if (!clusterId) return null;
  const taken = await db.transaction(async (tx) => {
    const [cluster] = await tx.select().from(clusters).where(eq(clusters.id, clusterId));
    if (!cluster) return null;
    // The seed's servers only: a server an operator added to the demo keeps its address and token.
    const ids = await liveDemoServerIds(tx, clusterId);
    const plan = await localiseServers(tx, ids);
    await recordAudit(tx, null, {
      clusterId,
      action: "demo.start",
      entityType: "cluster",
      entityId: clusterId,
      summary: `Started the demo's simulated agents: ${plan.length} servers of ${cluster.name} on 127.0.0.1 (new agent tokens, local ports)`,
    });
    return { plan, reportIntervalS: cluster.reportIntervalS };
  });
  if (!taken || taken.plan.length === 0) return null;
  // Addresses, ports and tokens changed: monitoring, the subscription snapshot and agents' configs reload.
  publishChange("topology", clusterId);
  const fleet = await startFleet({ servers: taken.plan }, { appUrl, reportIntervalMs: taken.reportIntervalS * 1000, heartbeats: true });

  let stopped = false;
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const later = (ms: number, fn: () => Promise<void>) => {
    if (stopped) return;
    const t = setTimeout(() => {
      timers.delete(t);
      void fn().catch((err: unknown) => log.warn({ err }, "live demo: a simulated step failed"));
    }, ms);
    timers.add(t);
  };

  // Each server's users are the subscribers the balancer gave it, and its reports carry their traffic.
  const followUsers = async () => {
    const assigned = await assignedSubscribersByServer(db, clusterId);
    for (const [id, sim] of fleet.servers) sim.setUserIds(assigned.get(id) ?? []);
    later(USERS_POLL_MS, followUsers);
  };

  // Simulated VPN apps: a tenth of the demo's subscribers fetch their link every tenth of APP_REFRESH_MS.
  let nextApp = 0;
  const fetchLinks = async () => {
    const tokens = (await db.select({ token: subscribers.token }).from(subscribers).where(eq(subscribers.clusterId, clusterId))).map((s) => s.token);
    const batch = Math.ceil(tokens.length / 10);
    for (let i = 0; i < batch && !stopped; i++) {
      const token = tokens[nextApp++ % tokens.length]!;
      await fetch(`${appUrl}/sub/${token}`, { signal: AbortSignal.timeout(10_000) })
        .then((r) => r.arrayBuffer())
        .catch(() => undefined);
    }
    later(APP_REFRESH_MS / 10, fetchLinks);
  };

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    unsubscribe();
    for (const t of timers) clearTimeout(t);
    timers.clear();
    await fleet.stop();
  };

  // Deleted servers lose their simulated agent; a deleted demo stops it all.
  let checking = Promise.resolve();
  const unsubscribe = onChange((e) => {
    if (e.kind !== "topology" || e.clusterId !== clusterId || stopped) return;
    checking = checking.then(async () => {
      const [cluster] = await db.select({ id: clusters.id }).from(clusters).where(eq(clusters.id, clusterId));
      if (!cluster) {
        log.info({ clusterId }, "live demo: the demo cluster was deleted; stopping its simulated agents");
        await stop();
        return;
      }
      const ids = [...fleet.servers.keys()];
      const kept = new Set((await db.select({ id: servers.id }).from(servers).where(inArray(servers.id, ids))).map((s) => s.id));
      for (const [id, sim] of fleet.servers) if (!kept.has(id)) await sim.stop();
    }).catch((err: unknown) => log.warn({ err }, "live demo: checking the demo cluster failed"));
  });

  later(0, followUsers);
  later(0, fetchLinks);
  log.info({ clusterId, servers: taken.plan.length, reportIntervalS: taken.reportIntervalS }, "live demo: simulated agents started");
  return {
    clusterId,
    fleet,
    stop: async () => {
      await stop();
      await checking;
    },
  };
}
