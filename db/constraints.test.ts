import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq, sql } from "drizzle-orm";
import { clusters, inbounds, routes, servers } from "./schema";
import { openTestDatabase, testDbKinds, type TestDatabase } from "./testing";

/** Postgres error code of a failed query (drizzle wraps the driver's error in `cause`). */
async function pgErrorCode(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    const e = err as { code?: string; cause?: { code?: string } };
    return e.cause?.code ?? e.code ?? "unknown";
  }
  return "no error";
}

describe.each(testDbKinds())("database invariants on %s", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  let otherClusterId: string;
  let serverId: string;
  let routeA: string;
  let routeB: string;

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    const [c] = await t.db.insert(clusters).values({ name: "Main" }).returning();
    const [c2] = await t.db.insert(clusters).values({ name: "Other" }).returning();
    clusterId = c!.id;
    otherClusterId = c2!.id;
    const [s] = await t.db
      .insert(servers)
      .values({ clusterId, name: "ny-1", address: "203.0.113.5", agentTokenHash: "h1" })
      .returning();
    serverId = s!.id;
    const rs = await t.db
      .insert(routes)
      .values([
        { clusterId, name: "🇺🇸 USA", position: 0 },
        { clusterId, name: "🇩🇪 Germany", position: 1 },
      ])
      .returning();
    routeA = rs[0]!.id;
    routeB = rs[1]!.id;
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it("keeps an inbound in at most one route: a second row for the same inbound is refused", async () => {
    const [ib] = await t.db
      .insert(inbounds)
      .values({ clusterId, serverId, routeId: routeA, name: "🇺🇸 New York", port: 443 })
      .returning();
    // The only way to be "in two routes" would be a second row with the same id.
    expect(await pgErrorCode(t.db.insert(inbounds).values({ id: ib!.id, clusterId, serverId, routeId: routeB, name: "dup", port: 444 }))).toBe("23505");
    // Moving rewrites the one route_id: afterwards it is in B only.
    await t.db.update(inbounds).set({ routeId: routeB }).where(eq(inbounds.id, ib!.id));
    const rows = await t.db.select().from(inbounds).where(eq(inbounds.id, ib!.id));
    expect(rows.map((r) => r.routeId)).toEqual([routeB]);
  });

  it("refuses an inbound whose route is in another cluster", async () => {
    const [foreignRoute] = await t.db.insert(routes).values({ clusterId: otherClusterId, name: "Elsewhere" }).returning();
    expect(await pgErrorCode(t.db.insert(inbounds).values({ clusterId, serverId, routeId: foreignRoute!.id, name: "x", port: 1000 }))).toBe("23503");
  });

  it("refuses two fallbacks in one route", async () => {
    await t.db.insert(inbounds).values({ clusterId, serverId, routeId: routeA, name: "fb1", port: 2001, isFallback: true });
    expect(await pgErrorCode(t.db.insert(inbounds).values({ clusterId, serverId, routeId: routeA, name: "fb2", port: 2002, isFallback: true }))).toBe("23505");
    // A fallback in another route is fine.
    await t.db.insert(inbounds).values({ clusterId, serverId, routeId: routeB, name: "fb3", port: 2003, isFallback: true });
  });

  it("refuses a duplicate port on one server", async () => {
    await t.db.insert(inbounds).values({ clusterId, serverId, name: "p1", port: 8443 });
    expect(await pgErrorCode(t.db.insert(inbounds).values({ clusterId, serverId, name: "p2", port: 8443 }))).toBe("23505");
  });

  it("refuses an out-of-range port", async () => {
    expect(await pgErrorCode(t.db.insert(inbounds).values({ clusterId, serverId, name: "bad", port: 70000 }))).toBe("23514");
  });

  it("refuses two routes named alike in a cluster, ignoring case, but allows it across clusters", async () => {
    expect(await pgErrorCode(t.db.insert(routes).values({ clusterId, name: "🇺🇸 usa" }))).toBe("23505");
    await t.db.insert(routes).values({ clusterId: otherClusterId, name: "🇺🇸 USA" });
  });

  it("unassigns the inbounds of a deleted route instead of deleting them", async () => {
    const [r] = await t.db.insert(routes).values({ clusterId, name: "Temp" }).returning();
    const [ib] = await t.db.insert(inbounds).values({ clusterId, serverId, routeId: r!.id, name: "t", port: 3001 }).returning();
    await t.db.delete(routes).where(eq(routes.id, r!.id));
    const [after] = await t.db.select().from(inbounds).where(eq(inbounds.id, ib!.id));
    expect(after!.routeId).toBeNull();
    expect(after!.clusterId).toBe(clusterId);
  });

  it("runs on the expected engine", async () => {
    const res = await t.db.execute(sql`select current_setting('server_version_num')::int as v`);
    const rows = (res as unknown as { rows: Array<{ v: number }> }).rows;
    expect(rows[0]!.v).toBeGreaterThanOrEqual(150000);
  });
});
