/** 0009_subscriber_names_unique_list_indexes renames existing duplicate names before making names unique. */
import { afterAll, describe, expect, it } from "vitest";
import { asc, eq, sql } from "drizzle-orm";
import { auditLog, subscribers } from "./schema";
import { openTestDatabaseBefore, testDbKinds, type TestDatabase } from "./testing";

const C1 = "11111111-1111-4111-8111-111111111111";
const C2 = "22222222-2222-4222-8222-222222222222";

describe.each(testDbKinds())("migration 0009 on a database with duplicate subscriber names (%s)", (kind) => {
  let t: (TestDatabase & { migrateRest(): Promise<void> }) | undefined;
  afterAll(async () => {
    await t?.dispose();
  });

  it("keeps the oldest name, gives later ones the first free suffix, audits each rename, then refuses duplicates", async () => {
    t = await openTestDatabaseBefore(kind, "0009");
    await t.db.execute(sql`insert into clusters (id, name) values (${C1}, 'one'), (${C2}, 'two')`);
    const add = (cluster: string, name: string, token: string, created: string) =>
      t!.db.execute(sql`insert into subscribers (cluster_id, name, token, created_at) values (${cluster}, ${name}, ${token}, ${created}::timestamptz)`);
    await add(C1, "alice", "t1", "2026-01-01T00:00:00Z");
    await add(C1, "Alice", "t2", "2026-01-02T00:00:00Z");
    await add(C1, "ALICE", "t3", "2026-01-03T00:00:00Z");
    // Already taken: the second duplicate skips to the next free suffix.
    await add(C1, "alice (3)", "t4", "2025-12-01T00:00:00Z");
    await add(C1, "bob", "t5", "2026-01-01T00:00:00Z");
    // The same name in another cluster is not a duplicate.
    await add(C2, "alice", "t6", "2026-01-05T00:00:00Z");

    await t.migrateRest();
    const rows = await t.db.select({ token: subscribers.token, name: subscribers.name }).from(subscribers).orderBy(asc(subscribers.token));
    expect(rows).toEqual([
      { token: "t1", name: "alice" },
      { token: "t2", name: "Alice (2)" },
      { token: "t3", name: "ALICE (4)" },
      { token: "t4", name: "alice (3)" },
      { token: "t5", name: "bob" },
      { token: "t6", name: "alice" },
    ]);
    const audit = await t.db.select().from(auditLog).where(eq(auditLog.action, "subscriber.update")).orderBy(asc(auditLog.id));
    expect(audit.map((a) => [a.clusterId, a.operatorName, a.summary, a.before, a.after])).toEqual([
      [C1, "system", "Renamed subscriber Alice to Alice (2): names are now unique per cluster", { name: "Alice" }, { name: "Alice (2)" }],
      [C1, "system", "Renamed subscriber ALICE to ALICE (4): names are now unique per cluster", { name: "ALICE" }, { name: "ALICE (4)" }],
    ]);
    await expect(t.db.execute(sql`insert into subscribers (cluster_id, name, token) values (${C1}, 'BOB', 't7')`)).rejects.toThrow();
    const idx = await t.db.execute(sql`select indexname from pg_indexes where tablename = 'subscribers' and indexname like 'subscribers_%' order by indexname`);
    expect((idx as unknown as { rows: Array<{ indexname: string }> }).rows.map((r) => r.indexname)).toEqual([
      "subscribers_cluster",
      "subscribers_list_created",
      "subscribers_list_expiry",
      "subscribers_list_last_seen",
      "subscribers_list_usage",
      "subscribers_name_ci",
      "subscribers_next_reset",
      "subscribers_pkey",
      // 0021_plans, also run by migrateRest.
      "subscribers_plan",
      "subscribers_token",
      "subscribers_trojan_password",
      "subscribers_vless_uuid",
    ]);
  });
});
