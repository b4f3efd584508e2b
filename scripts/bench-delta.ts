/**
 * npm run bench:delta — what one subscriber added costs an agent, full config against config
 * delta (issue 23), at 10,000 and 100,000 subscribers on PGlite (BENCH_DELTA_SIZES changes
 * the sizes, DATABASE_URL runs it on PostgreSQL). Per size: the bytes of the full config and
 * of the one-user delta, plain, gzip and brotli (as GET /api/agent/config sends them); the
 * panel's build and delta times; the agent's time to rebuild the config from the delta and
 * check its version. Figures, not assertions.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { openDatabase } from "@/db/client";
import { clusters, inbounds, servers, subscribers } from "@/db/schema";
import { agentConfigDeltaSchema, agentConfigSchema } from "@/core/agent-wire";
import { applyUserDelta, versionOfConfig } from "@/core/config-version";
import { configBody } from "@/server/dataplane/config";
import { ConfigHub } from "@/server/dataplane/config-hub";
import { encodeBody } from "@/server/dataplane/config-http";

const SIZES = (process.env.BENCH_DELTA_SIZES ?? "10000,100000").split(",").map(Number);

async function sizes(body: string) {
  return { plain: Buffer.byteLength(body), gzip: (await encodeBody(body, "gzip")).length, br: (await encodeBody(body, "br")).length };
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rb-bench-delta-"));
  const database = await openDatabase({ dataDir: dir, databaseUrl: process.env.DATABASE_URL });
  const db = database.db;
  const results = [];
  try {
    for (const n of SIZES) {
      const [c] = await db.insert(clusters).values({ name: `Bench ${n}`, reportIntervalS: 60 }).returning();
      const clusterId = c!.id;
      const [srv] = await db.insert(servers).values({ clusterId, name: "srv-1", address: "10.0.0.1", agentTokenHash: `bench-${n}` }).returning();
      await db.insert(inbounds).values({
        clusterId,
        serverId: srv!.id,
        name: "Reality",
        port: 443,
        security: "reality",
        sni: "www.example.com",
        realityPrivateKey: "kPg8iCWtnBdrVBdoVkAHh6OqAEDkTq8lLzOyC8vGKnA",
        realityPublicKey: "Jxq2cN1z0iMNDGgkqK4Jvz6bJZbU6mmvYhG0aGbsJ1s",
        realityShortIds: ["a1b2c3d4"],
      });
      // On the cluster's default plan ("All routes"), named once rather than looked up per row by the trigger.
      await db.execute(
        sql`insert into subscribers (cluster_id, name, token, plan_id) select ${clusterId}::uuid, 'user-' || i, 'tok-${sql.raw(String(n))}-' || i, (select default_plan_id from clusters where id = ${clusterId}::uuid) from generate_series(1, ${n}) i`,
      );
      const hub = new ConfigHub(() => Promise.resolve(db));
      try {
        const first = await hub.get(clusterId);
        const v1 = agentConfigSchema.parse(JSON.parse(configBody(first, first.byServer.get(srv!.id)!)));
        await db.insert(subscribers).values({ clusterId, name: "the new one", token: `tok-${n}-new` });
        hub.invalidate(clusterId);
        let t0 = performance.now();
        const cluster = await hub.get(clusterId);
        const buildMs = performance.now() - t0;
        const built = cluster.byServer.get(srv!.id)!;
        t0 = performance.now();
        const delta = await hub.deltaBody(cluster, srv!.id, built, v1.version);
        const deltaMs = performance.now() - t0;
        if (!delta) throw new Error(`no delta at ${n} subscribers`);
        t0 = performance.now();
        const rebuilt = applyUserDelta(v1, agentConfigDeltaSchema.parse(JSON.parse(delta)));
        if (!("config" in rebuilt) || versionOfConfig(rebuilt.config) !== built.version) throw new Error("the rebuilt config does not hash to the version");
        const agentApplyMs = performance.now() - t0;
        const full = await sizes(configBody(cluster, built, built.version, "full"));
        const d = await sizes(delta);
        results.push({ subscribers: n, fullBytes: full, deltaBytes: d, fullOverDeltaBr: Math.round(full.br / d.br), panelBuildMs: Math.round(buildMs), panelDeltaMs: Math.round(deltaMs * 10) / 10, agentRebuildAndHashMs: Math.round(agentApplyMs) });
      } finally {
        hub.close();
      }
    }
    console.log(JSON.stringify(results, null, 2));
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
