/**
 * Stored choices, one row per subscriber (subscriber_assignments): round trip, the route
 * implied by each inbound, the migration of the old per-route rows, and two service
 * instances on one database answering a user alike.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { eq, sql } from "drizzle-orm";
import { inbounds, subscriberAssignments } from "@/db/schema";
import { openTestDatabase, openTestDatabaseBefore, testDbKinds, type TestDatabase } from "@/db/testing";
import { deliverRemoteChange, publishChange } from "@/server/bus";
import { SubscriptionService } from "@/server/subscription/service";
import { loadTopologySnapshot } from "@/server/subscription/snapshot";
import { choicesByRoute, countAssignmentsByInbound, loadAssignments, storeAssignments } from "./store";
import { seedTestFleet, setStatus, type TestFleet } from "./testfleet";

const routesOf = (body: string) =>
  new Map((JSON.parse(body) as { routes: Array<{ routeId: string; inboundId: string }> }).routes.map((r) => [r.routeId, r.inboundId]));

describe.each(testDbKinds())("stored choices on %s", (kind) => {
  let t: TestDatabase;
  let fleet: TestFleet;
  beforeEach(async () => {
    t = await openTestDatabase(kind);
    fleet = await seedTestFleet(t.db, { routes: 3, perRoute: 3, subscribers: 4 });
  });
  afterEach(async () => {
    await t?.dispose();
  });

  const inboundOn = async (serverId: string) => (await t.db.select().from(inbounds).where(eq(inbounds.serverId, serverId)))[0]!.id;

  it("round-trips one row per subscriber and overwrites it whole", async () => {
    const [u, v] = fleet.subscribers;
    const a = await Promise.all(fleet.routeIds.map((r) => inboundOn(fleet.serversOf.get(r)![0]!)));
    const b = await Promise.all(fleet.routeIds.map((r) => inboundOn(fleet.serversOf.get(r)![1]!)));
    await storeAssignments(t.db, new Map([[u!.id, a], [v!.id, b]]), new Date());
    await storeAssignments(t.db, new Map([[u!.id, [b[0]!, a[1]!]]]), new Date());
    const loaded = await loadAssignments(t.db, [u!.id, v!.id, fleet.subscribers[2]!.id]);
    expect(loaded.get(u!.id)).toEqual([b[0], a[1]]);
    expect(loaded.get(v!.id)).toEqual(b);
    expect(loaded.has(fleet.subscribers[2]!.id)).toBe(false);
    expect(await loadAssignments(t.db, [])).toEqual(new Map());
    const counts = new Map((await countAssignmentsByInbound(t.db, fleet.clusterId)).map((r) => [r.inboundId, r.n]));
    expect(counts.get(b[0]!)).toBe(2);
    expect(counts.get(a[1]!)).toBe(1);
    expect(counts.get(a[0]!)).toBeUndefined();
  });

  it("stores many subscribers at once, an empty set of choices too, and refuses an unknown subscriber whole", async () => {
    const ids = await Promise.all(fleet.routeIds.map((r) => inboundOn(fleet.serversOf.get(r)![0]!)));
    const [u, v, w] = fleet.subscribers;
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
    const [r0, r1, r2] = fleet.routeIds;
    const i0 = await inboundOn(fleet.serversOf.get(r0!)![0]!);
    const i1 = await inboundOn(fleet.serversOf.get(r1!)![0]!);
    const i1b = await inboundOn(fleet.serversOf.get(r1!)![1]!);
    const i2 = await inboundOn(fleet.serversOf.get(r2!)![0]!);
    let topology = await loadTopologySnapshot(t.db);
    expect(choicesByRoute(topology, [i0, i1, i2, "00000000-0000-4000-8000-000000000000"])).toEqual(new Map([[r0, i0], [r1, i1], [r2, i2]]));
    // i0 is dragged into r1, where the user already has i1.
    await t.db.update(inbounds).set({ routeId: r1! }).where(eq(inbounds.id, i0));
    topology = await loadTopologySnapshot(t.db);
    expect(choicesByRoute(topology, [i0, i1, i2])).toEqual(new Map([[r2, i2]]));
    expect(choicesByRoute(topology, [i1, i1b])).toEqual(new Map());
    expect(choicesByRoute(topology, [])).toEqual(new Map());
  });

  it("two instances on one database answer a user alike, also after a server goes down", async () => {
    const now = Date.parse("2026-06-01T12:00:00Z");
    const a = new SubscriptionService(t.db, () => now);
    const b = new SubscriptionService(t.db, () => now);
    a.start();
    b.start();
    try {
      // Both run in this process, so B does not hear A's events by itself: each is handed to it
      // as a notification from another process would be.
      const hearA = (subscriberIds?: string[]) => deliverRemoteChange({ kind: "assignments", clusterId: null, ...(subscriberIds ? { subscriberIds } : {}), origin: "instance-a", at: Date.now() });
      for (const s of fleet.subscribers) {
        const fromA = routesOf((await a.answer(s.token, "json")).body);
        await a.flushAssignments();
        hearA([s.id]);
        const fromB = routesOf((await b.answer(s.token, "json")).body);
        expect(fromB).toEqual(fromA);
        expect(fromA.size).toBe(3);
      }
      // The server of the first user's first route goes down; instance A re-decides and
      // stores; B hears of it (as from another process) and answers the same.
      const u = fleet.subscribers[0]!;
      const before = routesOf((await a.answer(u.token, "json")).body);
      const route = fleet.routeIds[0]!;
      const topology = await loadTopologySnapshot(t.db);
      const down = topology.inbounds.get(before.get(route)!)!.serverId;
      await setStatus(t.db, [down], "probe-failing");
      publishChange("health", fleet.clusterId);
      const afterA = routesOf((await a.answer(u.token, "json")).body);
      expect(afterA.get(route)).not.toBe(before.get(route));
      await a.flushAssignments();
      hearA([u.id]);
      expect(routesOf((await b.answer(u.token, "json")).body)).toEqual(afterA);
      // A third instance started now reads the same from the database.
      const c = new SubscriptionService(t.db, () => now);
      c.start();
      expect(routesOf((await c.answer(u.token, "json")).body)).toEqual(afterA);
      await c.stop();
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it("reads no stored choices for a subscriber who has none, and reads them once another instance says anyone's changed", async () => {
    const now = Date.parse("2026-06-01T12:00:00Z");
    const [u, v, w] = fleet.subscribers;
    const b = new SubscriptionService(t.db, () => now);
    b.start();
    // Reads of stored choices, as the service makes them.
    let reads = 0;
    const select = t.db.select.bind(t.db);
    const counting = (...args: Parameters<typeof select>) => {
      reads++;
      return select(...args);
    };
    try {
      expect((await b.answer(u!.token, "json")).status).toBe(200);
      t.db.select = counting as typeof t.db.select;
      const first = routesOf((await b.answer(v!.token, "json")).body);
      expect(reads).toBe(0);
      t.db.select = select;
      // Another instance stores other choices for w and v (another inbound of each route)
      // and, storing many, names no one.
      const topology = await loadTopologySnapshot(t.db);
      const other = (choices: Map<string, string>) =>
        fleet.routeIds.map((r) => [...topology.inbounds.values()].find((i) => i.routeId === r && i.id !== choices.get(r))!.id);
      const forW = other(routesOf((await b.answer(u!.token, "json")).body));
      const forV = other(first);
      await b.flushAssignments();
      await storeAssignments(t.db, new Map([[w!.id, forW], [v!.id, forV]]), new Date(now));
      deliverRemoteChange({ kind: "assignments", clusterId: null, origin: "instance-a", at: Date.now() });
      t.db.select = counting as typeof t.db.select;
      // The balancer keeps a stored choice while it is as good as the best (one user each).
      const fromW = routesOf((await b.answer(w!.token, "json")).body);
      expect(reads).toBe(1);
      expect(fleet.routeIds.map((r) => fromW.get(r))).toEqual(forW);
      const fromV = routesOf((await b.answer(v!.token, "json")).body);
      expect(reads).toBe(2);
      expect(fleet.routeIds.map((r) => fromV.get(r))).toEqual(forV);
    } finally {
      t.db.select = select;
      await b.stop();
    }
  });

  it("a subscriber named while the set of stored subscribers is being read counts as stored", async () => {
    const now = Date.parse("2026-06-01T12:00:00Z");
    const [u, , , x] = fleet.subscribers;
    const b = new SubscriptionService(t.db, () => now);
    b.start();
    try {
      const fromU = routesOf((await b.answer(u!.token, "json")).body);
      deliverRemoteChange({ kind: "assignments", clusterId: null, origin: "instance-a", at: Date.now() });
      // The next reload reads the set again; x is named while that read is under way, and
      // its row lands after the read saw the table.
      publishChange("metrics", fleet.clusterId);
      const reloading = b.refresh();
      deliverRemoteChange({ kind: "assignments", clusterId: null, subscriberIds: [x!.id], origin: "instance-a", at: Date.now() });
      await reloading;
      const topology = await loadTopologySnapshot(t.db);
      const forX = fleet.routeIds.map((r) => [...topology.inbounds.values()].find((i) => i.routeId === r && i.id !== fromU.get(r))!.id);
      await storeAssignments(t.db, new Map([[x!.id, forX]]), new Date(now));
      const fromX = routesOf((await b.answer(x!.token, "json")).body);
      expect(fleet.routeIds.map((r) => fromX.get(r))).toEqual(forX);
    } finally {
      await b.stop();
    }
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
      const topology = await loadTopologySnapshot(db);
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
