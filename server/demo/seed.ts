/**
 * The demo cluster seeded on an empty database, so the product shows itself at once:
 * 6 servers in 3 countries, 2–3 inbounds each, 4 routes of which "🇯🇵 Japan" is empty,
 * and 2 inbounds left unassigned (so the warnings panel has something to say), with a day
 * of made-up traffic history so the health page's charts are not empty. The seeded one is
 * the live demo (live.ts runs simulated agents behind it); `clusters.createDemo` makes the
 * same cluster without agents, to explore or test with.
 */
import { TRPCError } from "@trpc/server";
import { and, count, eq, inArray } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { DEFAULT_PROBE_CONFIG } from "@/core/monitoring-contract";
import { clusters, inbounds, routes, servers, serverMetricsHistory, settings, subscribers, serverHealth } from "@/db/schema";
import { generateRealityKeys } from "@/server/topology/reality";
import { newAgentToken, newSubscriptionToken } from "@/server/auth/tokens";
import { recordAudit } from "@/server/audit";
import { written, type Actor, type Written } from "@/server/changes";
import { HISTORY_BUCKET_MS } from "@/server/monitoring/metrics-history";
import { namedCluster } from "@/server/topology/clusters";

interface DemoServer {
  name: string;
  address: string;
  role: "master" | "node" | "both";
  inbounds: Array<{ name: string; port: number; route: string | null; sni: string }>;
}

const DEMO_ROUTES = [
  { name: "🇺🇸 USA", flag: "US" },
  { name: "🇩🇪 Germany", flag: "DE" },
  { name: "🇳🇱 Netherlands", flag: "NL" },
  { name: "🇯🇵 Japan", flag: "JP" },
];

const DEMO_SERVERS: DemoServer[] = [
  {
    name: "us-nyc-1",
    address: "127.0.10.1",
    role: "both",
    inbounds: [
      { name: "🇺🇸 New York", port: 443, route: "🇺🇸 USA", sni: "www.microsoft.com" },
      { name: "🇺🇸 New York TLS", port: 8443, route: "🇺🇸 USA", sni: "cdn.example.net" },
    ],
  },
  {
    name: "us-dal-1",
    address: "127.0.10.2",
    role: "node",
    inbounds: [
      { name: "🇺🇸 Dallas", port: 443, route: "🇺🇸 USA", sni: "www.apple.com" },
      { name: "🇺🇸 Dallas alt", port: 2053, route: null, sni: "www.apple.com" },
    ],
  },
  {
    name: "de-fra-1",
    address: "127.0.20.1",
    role: "node",
    inbounds: [
      { name: "🇩🇪 Frankfurt", port: 443, route: "🇩🇪 Germany", sni: "www.samsung.com" },
      { name: "🇩🇪 Frankfurt TLS", port: 8443, route: "🇩🇪 Germany", sni: "cdn.example.net" },
      { name: "🇩🇪 Frankfurt test", port: 9443, route: null, sni: "www.samsung.com" },
    ],
  },
  {
    name: "de-ber-1",
    address: "127.0.20.2",
    role: "node",
    inbounds: [
      { name: "🇩🇪 Berlin", port: 443, route: "🇩🇪 Germany", sni: "www.amazon.com" },
      { name: "🇩🇪 Berlin TLS", port: 8443, route: "🇩🇪 Germany", sni: "cdn.example.net" },
    ],
  },
  {
    name: "nl-ams-1",
    address: "127.0.30.1",
    role: "node",
    inbounds: [
      { name: "🇳🇱 Amsterdam", port: 443, route: "🇳🇱 Netherlands", sni: "www.cloudflare.com" },
      { name: "🇳🇱 Amsterdam TLS", port: 8443, route: "🇳🇱 Netherlands", sni: "cdn.example.net" },
    ],
  },
  {
    name: "nl-rtm-1",
    address: "127.0.30.2",
    role: "node",
    inbounds: [
      { name: "🇳🇱 Rotterdam", port: 443, route: "🇳🇱 Netherlands", sni: "www.cloudflare.com" },
      { name: "🇳🇱 Rotterdam alt", port: 2083, route: "🇳🇱 Netherlands", sni: "www.cloudflare.com" },
    ],
  },
];

const DEMO_SUBSCRIBERS = ["alice", "bob", "carol", "dave", "erin"];

/**
 * Subscribers of the live demo: enough simulated apps that every server carries users
 * (each one gets a line per non-empty route, so about 30 users per server).
 */
export const LIVE_DEMO_SUBSCRIBERS = 60;
/** How often the live demo's simulated agents report and its servers are probed (a real cluster's default is 60 s). */
export const LIVE_DEMO_INTERVAL_S = 5;

/**
 * settings key naming the live demo cluster and the servers the seed made in it:
 * `{ clusterId, serverIds }`; deleting the demo removes it.
 */
export const LIVE_DEMO_KEY = "demo_cluster";

interface LiveDemoRecord {
  clusterId: string;
  /** Only these are simulated: a server an operator adds to the demo is never taken over. */
  serverIds: string[];
}

async function liveDemoRecord(db: DbOrTx): Promise<LiveDemoRecord | null> {
  const [row] = await db.select().from(settings).where(eq(settings.key, LIVE_DEMO_KEY));
  const value = row?.value as { clusterId?: unknown; serverIds?: unknown } | undefined;
  if (typeof value?.clusterId !== "string") return null;
  const serverIds = Array.isArray(value.serverIds) ? value.serverIds.filter((id): id is string => typeof id === "string") : [];
  return { clusterId: value.clusterId, serverIds };
}

/** The live demo cluster's id, or null (never seeded, or deleted). */
export async function liveDemoClusterId(db: DbOrTx): Promise<string | null> {
  return (await liveDemoRecord(db))?.clusterId ?? null;
}

/** The demo's own servers still in it (the seed's), never one an operator added beside them. */
export async function liveDemoServerIds(db: DbOrTx, clusterId: string): Promise<string[]> {
  const record = await liveDemoRecord(db);
  if (record?.clusterId !== clusterId || record.serverIds.length === 0) return [];
  const rows = await db
    .select({ id: servers.id })
    .from(servers)
    .where(and(eq(servers.clusterId, clusterId), inArray(servers.id, record.serverIds)));
  return rows.map((r) => r.id);
}

/** Seeds the demo once per database (never again after the operator deletes it). */
export async function seedDemoIfEmpty(db: Db): Promise<boolean> {
  return db.transaction(async (tx) => {
    // Claim the seeding: with several instances starting at once, exactly one wins.
    const claimed = await tx.insert(settings).values({ key: "demo_seeded", value: true }).onConflictDoNothing().returning();
    if (claimed.length === 0) return false;
    const [existing] = await tx.select({ n: count() }).from(clusters);
    if ((existing?.n ?? 0) > 0) return false;
    const clusterId = await seedDemoCluster(tx as unknown as Db, "Demo cluster");
    // Live: agents report and probes run every few seconds, and enough apps fetch to carry users.
    await tx
      .update(clusters)
      .set({ reportIntervalS: LIVE_DEMO_INTERVAL_S, probeConfig: { ...DEFAULT_PROBE_CONFIG, intervalS: LIVE_DEMO_INTERVAL_S, timeoutS: 3 } })
      .where(eq(clusters.id, clusterId));
    await tx.insert(subscribers).values(
      Array.from({ length: LIVE_DEMO_SUBSCRIBERS - DEMO_SUBSCRIBERS.length }, (_, i) => ({
        clusterId,
        name: `demo-user-${String(i + DEMO_SUBSCRIBERS.length + 1).padStart(2, "0")}`,
        token: newSubscriptionToken(),
      })),
    );
    const serverIds = (await tx.select({ id: servers.id }).from(servers).where(eq(servers.clusterId, clusterId))).map((r) => r.id);
    await tx.insert(settings).values({ key: LIVE_DEMO_KEY, value: { clusterId, serverIds } satisfies LiveDemoRecord });
    return true;
  });
}

/**
 * Made-up history for a demo server: 24 h of 5-minute buckets with a daily rhythm (busiest in
 * the evening), a little noise and a size per server, so the health page's charts show
 * something before the demo's simulated agents have reported for a day. Demo data only:
 * deterministic for a given server index and time.
 */
export function demoHistory(serverId: string, index: number, nowMs: number): Array<typeof serverMetricsHistory.$inferInsert> {
  const newest = Math.floor(nowMs / HISTORY_BUCKET_MS) * HISTORY_BUCKET_MS - HISTORY_BUCKET_MS;
  const size = 20 + ((index * 37) % 50);
  let seed = index * 7919 + 17;
  const noise = () => {
    seed = (seed * 48271) % 2147483647;
    return seed / 2147483647 - 0.5;
  };
  return Array.from({ length: 288 }, (_, i) => {
    const t = newest - (287 - i) * HISTORY_BUCKET_MS;
    const hour = new Date(t).getUTCHours() + new Date(t).getUTCMinutes() / 60;
    const daily = 0.55 + 0.45 * Math.sin(((hour - 14) / 24) * 2 * Math.PI);
    const users = Math.max(0, size * daily * (1 + 0.15 * noise()));
    const rx = users * 1.2e6 * (1 + 0.3 * noise());
    const tx = rx * (0.15 + 0.05 * noise());
    return { serverId, bucketStart: new Date(t), samples: 60, usersOnlineAvg: users, rxBpsAvg: rx, txBpsAvg: tx, trafficBpsAvg: Math.max(rx, tx), trafficBpsMax: Math.max(rx, tx) * 1.4, cpuAvg: 5 + users / 3 };
  });
}

export async function seedDemoCluster(db: Db, name: string): Promise<string> {
  const [cluster] = await db.insert(clusters).values({ name }).returning();
  const clusterId = cluster!.id;
  const routeRows = await db
    .insert(routes)
    .values(DEMO_ROUTES.map((r, position) => ({ clusterId, name: r.name, flag: r.flag, position })))
    .returning();
  const routeId = new Map(routeRows.map((r) => [r.name, r.id]));
  const history: Array<typeof serverMetricsHistory.$inferInsert> = [];
  for (const [index, s] of DEMO_SERVERS.entries()) {
    const [server] = await db
      .insert(servers)
      .values({ clusterId, name: s.name, address: s.address, role: s.role, agentTokenHash: newAgentToken().hash })
      .returning();
    await db.insert(serverHealth).values({ serverId: server!.id });
    history.push(...demoHistory(server!.id, index, Date.now()));
    for (const ib of s.inbounds) {
      const keys = generateRealityKeys();
      await db.insert(inbounds).values({
        clusterId,
        serverId: server!.id,
        routeId: ib.route ? routeId.get(ib.route)! : null,
        name: ib.name,
        port: ib.port,
        security: ib.name.endsWith("TLS") ? "tls" : "reality",
        sni: ib.sni,
        realityPublicKey: keys.publicKey,
        realityPrivateKey: keys.privateKey,
        realityShortIds: [keys.shortId],
        ...(ib.name.endsWith("TLS") ? { tlsCertificateFile: `/etc/ssl/routeboard/${ib.sni}.crt`, tlsKeyFile: `/etc/ssl/routeboard/${ib.sni}.key` } : {}),
      });
    }
  }
  await db.insert(serverMetricsHistory).values(history);
  await db.insert(subscribers).values(DEMO_SUBSCRIBERS.map((n) => ({ clusterId, name: n, token: newSubscriptionToken() })));
  return clusterId;
}

/** A ready-made demo cluster (6 servers, 4 routes, 2 unassigned inbounds) to explore or test with. */
export function createDemoCluster(db: Db, actor: Actor, input: { name: string }): Promise<Written<{ id: string; name: string }>> {
  return namedCluster(input.name, async () => {
    const id = await db.transaction(async (tx) => {
      const clusterId = await seedDemoCluster(tx as never, input.name);
      await recordAudit(tx, actor, {
        clusterId,
        action: "cluster.create",
        entityType: "cluster",
        entityId: clusterId,
        summary: `Created demo cluster ${input.name}`,
      });
      return clusterId;
    });
    return written({ id, name: input.name }, { kind: "topology", clusterId: id }, { kind: "subscribers", clusterId: id });
  });
}

/**
 * Deletes the live demo cluster with everything in it (servers, inbounds, routes, subscribers,
 * their history); its simulated agents stop on the change (live.ts). Any other cluster is
 * refused: this is not a way to delete real clusters.
 */
/** Forgets the live demo when its cluster is deleted (in that deletion's transaction), so it is never started again. */
export async function forgetLiveDemoOf(tx: DbOrTx, clusterId: string): Promise<void> {
  if ((await liveDemoClusterId(tx)) === clusterId) await tx.delete(settings).where(eq(settings.key, LIVE_DEMO_KEY));
}

export async function deleteDemoCluster(db: Db, actor: Actor, input: { clusterId: string }): Promise<Written<{ id: string; name: string }>> {
  const deleted = await db.transaction(async (tx) => {
    const [cluster] = await tx.select().from(clusters).where(eq(clusters.id, input.clusterId)).for("update");
    if (!cluster) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
    if ((await liveDemoClusterId(tx)) !== cluster.id) {
      throw new TRPCError({ code: "BAD_REQUEST", message: `${cluster.name} is not the demo cluster: only the demo can be deleted this way` });
    }
    // An operator's own server added to the demo would go with it, agent token and all.
    const demoServers = new Set(await liveDemoServerIds(tx, cluster.id));
    const own = (await tx.select({ id: servers.id, name: servers.name }).from(servers).where(eq(servers.clusterId, cluster.id))).filter((s) => !demoServers.has(s.id));
    if (own.length > 0) {
      throw new TRPCError({
        code: "BAD_REQUEST",
        message: `The demo holds servers that are not the demo's: ${own.map((s) => s.name).join(", ")}. Delete them first; Delete demo removes only what the demo made`,
      });
    }
    await tx.delete(clusters).where(eq(clusters.id, cluster.id));
    await tx.delete(settings).where(eq(settings.key, LIVE_DEMO_KEY));
    // Installation-wide: the cluster's own entries go with it.
    await recordAudit(tx, actor, {
      clusterId: null,
      action: "demo.delete",
      entityType: "cluster",
      entityId: cluster.id,
      summary: `Deleted the demo cluster ${cluster.name} and stopped its simulated agents`,
    });
    return { id: cluster.id, name: cluster.name };
  });
  return written(deleted, { kind: "topology", clusterId: deleted.id }, { kind: "subscribers", clusterId: deleted.id });
}
