/**
 * The demo cluster seeded on an empty database, so the product shows itself at once:
 * 6 servers in 3 countries, 2–3 inbounds each, 4 routes of which "🇯🇵 Japan" is empty,
 * and 2 inbounds left unassigned (so the warnings panel has something to say).
 */
import { count } from "drizzle-orm";
import type { Db } from "@/db/client";
import { clusters, inbounds, routes, servers, settings, subscribers, serverHealth } from "@/db/schema";
import { generateRealityKeys } from "@/server/domain/reality";
import { newAgentToken, newSubscriptionToken } from "@/server/domain/tokens";

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

/** Seeds the demo once per database (never again after the operator deletes it). */
export async function seedDemoIfEmpty(db: Db): Promise<boolean> {
  return db.transaction(async (tx) => {
    // Claim the seeding: with several instances starting at once, exactly one wins.
    const claimed = await tx.insert(settings).values({ key: "demo_seeded", value: true }).onConflictDoNothing().returning();
    if (claimed.length === 0) return false;
    const [existing] = await tx.select({ n: count() }).from(clusters);
    if ((existing?.n ?? 0) > 0) return false;
    await seedDemoCluster(tx as unknown as Db, "Demo cluster");
    return true;
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
  for (const s of DEMO_SERVERS) {
    const [server] = await db
      .insert(servers)
      .values({ clusterId, name: s.name, address: s.address, role: s.role, agentTokenHash: newAgentToken().hash })
      .returning();
    await db.insert(serverHealth).values({ serverId: server!.id });
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
  await db.insert(subscribers).values(DEMO_SUBSCRIBERS.map((n) => ({ clusterId, name: n, token: newSubscriptionToken() })));
  return clusterId;
}
