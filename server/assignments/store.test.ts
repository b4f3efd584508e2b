/**
 * Stored choices, one row per subscriber (subscriber_assignments): round trip, the route
 * implied by each inbound, and the migration of the old per-route rows. How instances use
 * them: server/subscription/stored-choices.test.ts.
 */
import { describe, expect, it } from "vitest";
import { eq, sql } from "drizzle-orm";
import { inbounds, subscriberAssignments } from "@/db/schema";
import { openTestDatabaseBefore, testDbKinds } from "@/db/testing";
import type { Db } from "@/db/client";
import { choicesByRoute, countAssignmentsByInbound, loadAssignments, storeAssignments, type InboundRoutes } from "./store";
import { seedFleetPerTest, seedTestFleet } from "./testfleet";

/** Each inbound's current route, as the fleet snapshot has it. */
const inboundRoutes = async (db: Db): Promise<InboundRoutes> =>
  ({ inbounds: new Map((await db.select({ id: inbounds.id, routeId: inbounds.routeId }).from(inbounds)).map((i) => [i.id, { routeId: i.routeId }])) });

describe.each(testDbKinds())("stored choices on %s", (kind) => {
  const t = seedFleetPerTest(kind, { routes: 3, perRoute: 3, subscribers: 4 });

  const inboundOn = async (serverId: string) => (await t.db.select().from(inbounds).where(eq(inbounds.serverId, serverId)))[0]!.id;

  it("round-trips one row per subscriber and overwrites it whole", async () => {
    const [u, v] = t.fleet.subscribers;
    const a = await Promise.all(t.fleet.routeIds.map((r) => inboundOn(t.fleet.serversOf.get(r)![0]!)));
    const b = await Promise.all(t.fleet.routeIds.map((r) => inboundOn(t.fleet.serversOf.get(r)![1]!)));
    await storeAssignments(t.db, new Map([[u!.id, a], [v!.id, b]]), new Date());
    await storeAssignments(t.db, new Map([[u!.id, [b[0]!, a[1]!]]]), new Date());
    const loaded = await loadAssignments(t.db, [u!.id, v!.id, t.fleet.subscribers[2]!.id]);
    expect(loaded.get(u!.id)).toEqual([b[0], a[1]]);
    expect(loaded.get(v!.id)).toEqual(b);
    expect(loaded.has(t.fleet.subscribers[2]!.id)).toBe(false);
    expect(await loadAssignments(t.db, [])).toEqual(new Map());
    const counts = new Map((await countAssignmentsByInbound(t.db, t.fleet.clusterId)).map((r) => [r.inboundId, r.n]));
    expect(counts.get(b[0]!)).toBe(2);
    expect(counts.get(a[1]!)).toBe(1);
    expect(counts.get(a[0]!)).toBeUndefined();
  });

  it("stores many subscribers at once, an empty set of choices too, and refuses an unknown subscriber whole", async () => {
    const ids = await Promise.all(t.fleet.routeIds.map((r) => inboundOn(t.fleet.serversOf.get(r)![0]!)));
    const [u, v, w] = t.fleet.subscribers;
    await storeAssignments(t.db, new Map([[u!.id, ids], [v!.id, []], [w!.id, [...ids].reverse()]]), new Date());
    const loaded = await loadAssignments(t.db, [u!.id, v!.id, w!.id]);
    expect(loaded.get(u!.id)).toEqual(ids);
    expect(loaded.get(v!.id)).toEqual([]);
    expect(loaded.get(w!.id)).toEqual([...ids].reverse());
    const ghost = "00000000-0000-4000-8000-000000000000";
    await expect(storeAssignments(t.db, new Map([[u!.id, [ids[0]!]], [ghost, ids]]), new Date())).rejects.toThrow();
    expect((await loadAssignments(t.db, [u!.id])).get(u!.id)).toEqual(ids);
  });

  it("reads each id into its inbound's current route; deleted ids are skipped, a route holding two gets neither", async () => {
    const [r0, r1, r2] = t.fleet.routeIds;
    const i0 = await inboundOn(t.fleet.serversOf.get(r0!)![0]!);
    const i1 = await inboundOn(t.fleet.serversOf.get(r1!)![0]!);
    const i1b = await inboundOn(t.fleet.serversOf.get(r1!)![1]!);
    const i2 = await inboundOn(t.fleet.serversOf.get(r2!)![0]!);
    let topology = await inboundRoutes(t.db);
    expect(choicesByRoute(topology, [i0, i1, i2, "00000000-0000-4000-8000-000000000000"])).toEqual(new Map([[r0, i0], [r1, i1], [r2, i2]]));
    // i0 is dragged into r1, where the user already has i1.
    await t.db.update(inbounds).set({ routeId: r1! }).where(eq(inbounds.id, i0));
    topology = await inboundRoutes(t.db);
    expect(choicesByRoute(topology, [i0, i1, i2])).toEqual(new Map([[r2, i2]]));
    expect(choicesByRoute(topology, [i1, i1b])).toEqual(new Map());
    expect(choicesByRoute(topology, [])).toEqual(new Map());
  });
});


describe.each(testDbKinds())("migration 0004_subscriber_assignments_compact on %s", (kind) => {
  it("moves every stored (subscriber, route) choice into one row per subscriber", async () => {
    const m = await openTestDatabaseBefore(kind, "0004_subscriber_assignments_compact");
    try {
      const db = m.db;
      const fleet = await seedTestFleet(db, { routes: 3, perRoute: 2, subscribers: 3 });
      const ibs = await db.select({ id: inbounds.id, routeId: inbounds.routeId }).from(inbounds);
      const [u, v] = fleet.subscribers;
      // u has a choice on every route, v on one; the third has none.
      for (const r of fleet.routeIds) {
        const ib = ibs.find((i) => i.routeId === r)!;
        await db.execute(sql`insert into assignments (subscriber_id, route_id, inbound_id, reason) values (${u!.id}, ${r}, ${ib.id}, 'best')`);
      }
      const vChoice = ibs.filter((i) => i.routeId === fleet.routeIds[1])[1]!;
      await db.execute(sql`insert into assignments (subscriber_id, route_id, inbound_id, reason) values (${v!.id}, ${fleet.routeIds[1]!}, ${vChoice.id}, 'sticky')`);
      await m.migrateRest();
      const rows = await db.select().from(subscriberAssignments);
      expect(rows).toHaveLength(2);
      const topology = await inboundRoutes(db);
      const uRow = rows.find((r) => r.subscriberId === u!.id)!;
      expect(choicesByRoute(topology, uRow.inboundIds)).toEqual(new Map(fleet.routeIds.map((r) => [r, ibs.find((i) => i.routeId === r)!.id])));
      expect(rows.find((r) => r.subscriberId === v!.id)!.inboundIds).toEqual([vChoice.id]);
      const old = await db.execute(sql`select to_regclass('public.assignments') as t`);
      expect((old as unknown as { rows: Array<{ t: unknown }> }).rows[0]!.t).toBeNull();
    } finally {
      await m.dispose();
    }
  });
});
