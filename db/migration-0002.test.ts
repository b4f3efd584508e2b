/** 0002_agent_data_plane carries existing rows over: the one short id, and counted traffic. */
import { afterAll, describe, expect, it } from "vitest";
import { eq, sql } from "drizzle-orm";
import { inbounds, subscribers } from "./schema";
import { openTestDatabaseBefore, testDbKinds, type TestDatabase } from "./testing";

describe.each(testDbKinds())("migration 0002 on existing rows (%s)", (kind) => {
  let t: (TestDatabase & { migrateRest(): Promise<void> }) | undefined;
  afterAll(async () => {
    await t?.dispose();
  });

  it("moves reality_short_id into reality_short_ids and counted traffic into download", async () => {
    // The migrations up to 0001, as an install before the data plane had them.
    t = await openTestDatabaseBefore(kind, "0002");
    await t.db.execute(sql`insert into clusters (id, name) values ('11111111-1111-4111-8111-111111111111', 'old')`);
    await t.db.execute(sql`insert into servers (id, cluster_id, name, address, agent_token_hash)
      values ('22222222-2222-4222-8222-222222222222', '11111111-1111-4111-8111-111111111111', 's', '10.0.0.1', 'h')`);
    await t.db.execute(sql`insert into inbounds (id, cluster_id, server_id, name, port, security, sni, reality_public_key, reality_private_key, reality_short_id)
      values ('33333333-3333-4333-8333-333333333333', '11111111-1111-4111-8111-111111111111', '22222222-2222-4222-8222-222222222222', 'r', 443, 'reality', 'www.example.com', 'pub', 'priv', '0123456789abcdef'),
             ('44444444-4444-4444-8444-444444444444', '11111111-1111-4111-8111-111111111111', '22222222-2222-4222-8222-222222222222', 'n', 80, 'none', null, null, null, null)`);
    await t.db.execute(sql`insert into subscribers (id, cluster_id, name, token, traffic_used_bytes)
      values ('55555555-5555-4555-8555-555555555555', '11111111-1111-4111-8111-111111111111', 'u', 'tok-old-1', 500)`);

    await t.migrateRest();
    const rows = await t.db.select().from(inbounds).orderBy(inbounds.port);
    expect(rows.map((r) => r.realityShortIds)).toEqual([[], ["0123456789abcdef"]]);
    expect(rows[1]).toMatchObject({ realityDest: null, realityServerNames: [], tlsCertificateFile: null, tlsKeyFile: null });
    const [s] = await t.db.select().from(subscribers).where(eq(subscribers.id, "55555555-5555-4555-8555-555555555555"));
    expect(s).toMatchObject({ trafficUsedBytes: 500, trafficUpBytes: 0, trafficDownBytes: 500, lastSeenAt: null });
    // The sum invariant holds from now on.
    await expect(t.db.update(subscribers).set({ trafficUpBytes: 1 }).where(eq(subscribers.id, s!.id))).rejects.toThrow();
    await expect(t.db.update(inbounds).set({ realityShortIds: ["XYZ"] }).where(eq(inbounds.port, 443))).rejects.toThrow();
  });
});
