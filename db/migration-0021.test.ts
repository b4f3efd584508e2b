/** 0021_plans puts every existing cluster on an "All routes" default plan and every existing subscriber on it. */
import { afterAll, describe, expect, it } from "vitest";
import { asc, eq, sql } from "drizzle-orm";
import { clusters, plans, subscribers } from "./schema";
import { openTestDatabaseBefore, testDbKinds, type TestDatabase } from "./testing";

const C1 = "11111111-1111-4111-8111-111111111111";
const C2 = "22222222-2222-4222-8222-222222222222";

describe.each(testDbKinds())("migration 0021 on a database with clusters and subscribers (%s)", (kind) => {
  let t: (TestDatabase & { migrateRest(): Promise<void> }) | undefined;
  afterAll(async () => {
    await t?.dispose();
  });

  it("gives each cluster an all-routes default plan, puts every subscriber on it, and keeps doing so for new rows", async () => {
    t = await openTestDatabaseBefore(kind, "0021");
    await t.db.execute(sql`insert into clusters (id, name) values (${C1}, 'one'), (${C2}, 'two')`);
    await t.db.execute(sql`insert into subscribers (cluster_id, name, token) values (${C1}, 'a', 'tok-a-0001'), (${C1}, 'b', 'tok-b-0001'), (${C2}, 'c', 'tok-c-0001')`);
    await t.migrateRest();

    const planRows = await t.db.select().from(plans).orderBy(asc(plans.clusterId));
    expect(planRows.map((p) => [p.clusterId, p.name, p.allRoutes])).toEqual([
      [C1, "All routes", true],
      [C2, "All routes", true],
    ]);
    const cs = await t.db.select().from(clusters).orderBy(asc(clusters.id));
    expect(cs.map((c) => c.defaultPlanId)).toEqual(planRows.map((p) => p.id));
    const subs = await t.db.select().from(subscribers).orderBy(asc(subscribers.name));
    expect(subs.map((s) => s.planId)).toEqual([planRows[0]!.id, planRows[0]!.id, planRows[1]!.id]);

    // A cluster created later gets its own default plan; a subscriber inserted without one is on it.
    const [c3] = await t.db.insert(clusters).values({ name: "three" }).returning();
    const [c3Now] = await t.db.select().from(clusters).where(eq(clusters.id, c3!.id));
    expect(c3Now!.defaultPlanId).not.toBeNull();
    const [s] = await t.db.insert(subscribers).values({ clusterId: c3!.id, name: "d", token: "tok-d-0001" }).returning();
    expect(s!.planId).toBe(c3Now!.defaultPlanId);

    // The database refuses a plan of another cluster, deleting a plan in use, and a null plan.
    await expect(t.db.execute(sql`update subscribers set plan_id = ${planRows[1]!.id} where token = 'tok-a-0001'`)).rejects.toThrow();
    await expect(t.db.execute(sql`update subscribers set plan_id = null where token = 'tok-a-0001'`)).rejects.toThrow();
    await expect(t.db.delete(plans).where(eq(plans.id, planRows[0]!.id))).rejects.toThrow();
    await expect(t.db.execute(sql`update clusters set default_plan_id = ${planRows[1]!.id} where id = ${C1}`)).rejects.toThrow();
    // Deleting a cluster takes its plans and subscribers with it.
    await t.db.delete(clusters).where(eq(clusters.id, C2));
    expect((await t.db.select().from(plans)).map((p) => p.clusterId).sort()).toEqual([C1, c3!.id].sort());
  });
});
