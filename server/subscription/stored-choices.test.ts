/**
 * Stored choices as the subscription service uses them: two instances on one database answer
 * a user alike, and the set of subscribers with a stored row spares reads without missing one
 * (server/assignments/stored-choices.ts).
 */
import { describe, expect, it } from "vitest";
import { testDbKinds } from "@/db/testing";
import { deliverRemoteChange, publishChange } from "@/server/bus";
import { storeAssignments } from "@/server/assignments/store";
import { seedFleetPerTest, setStatus } from "@/server/assignments/testfleet";
import { SubscriptionService } from "./service";
import { loadTopologySnapshot } from "./snapshot";

const routesOf = (body: string) =>
  new Map((JSON.parse(body) as { routes: Array<{ routeId: string; inboundId: string }> }).routes.map((r) => [r.routeId, r.inboundId]));

describe.each(testDbKinds())("stored choices across instances on %s", (kind) => {
  const t = seedFleetPerTest(kind, { routes: 3, perRoute: 3, subscribers: 4 });

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
      for (const s of t.fleet.subscribers) {
        const fromA = routesOf((await a.answer(s.token, "json")).body);
        await a.flushAssignments();
        hearA([s.id]);
        const fromB = routesOf((await b.answer(s.token, "json")).body);
        expect(fromB).toEqual(fromA);
        expect(fromA.size).toBe(3);
      }
      // The server of the first user's first route goes down; instance A re-decides and
      // stores; B hears of it (as from another process) and answers the same.
      const u = t.fleet.subscribers[0]!;
      const before = routesOf((await a.answer(u.token, "json")).body);
      const route = t.fleet.routeIds[0]!;
      const topology = await loadTopologySnapshot(t.db);
      const down = topology.inbounds.get(before.get(route)!)!.serverId;
      await setStatus(t.db, [down], "probe-failing");
      publishChange("health", t.fleet.clusterId);
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
    const [u, v, w] = t.fleet.subscribers;
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
        t.fleet.routeIds.map((r) => [...topology.inbounds.values()].find((i) => i.routeId === r && i.id !== choices.get(r))!.id);
      const forW = other(routesOf((await b.answer(u!.token, "json")).body));
      const forV = other(first);
      await b.flushAssignments();
      await storeAssignments(t.db, new Map([[w!.id, forW], [v!.id, forV]]), new Date(now));
      deliverRemoteChange({ kind: "assignments", clusterId: null, origin: "instance-a", at: Date.now() });
      t.db.select = counting as typeof t.db.select;
      // The balancer keeps a stored choice while it is as good as the best (one user each).
      const fromW = routesOf((await b.answer(w!.token, "json")).body);
      expect(reads).toBe(1);
      expect(t.fleet.routeIds.map((r) => fromW.get(r))).toEqual(forW);
      const fromV = routesOf((await b.answer(v!.token, "json")).body);
      expect(reads).toBe(2);
      expect(t.fleet.routeIds.map((r) => fromV.get(r))).toEqual(forV);
    } finally {
      t.db.select = select;
      await b.stop();
    }
  });

  it("a subscriber named while the set of stored subscribers is being read counts as stored", async () => {
    const now = Date.parse("2026-06-01T12:00:00Z");
    const [u, , , x] = t.fleet.subscribers;
    const b = new SubscriptionService(t.db, () => now);
    b.start();
    try {
      const fromU = routesOf((await b.answer(u!.token, "json")).body);
      deliverRemoteChange({ kind: "assignments", clusterId: null, origin: "instance-a", at: Date.now() });
      // The next reload reads the set again; x is named while that read is under way, and
      // its row lands after the read saw the table.
      publishChange("metrics", t.fleet.clusterId);
      const reloading = b.refresh();
      deliverRemoteChange({ kind: "assignments", clusterId: null, subscriberIds: [x!.id], origin: "instance-a", at: Date.now() });
      await reloading;
      const topology = await loadTopologySnapshot(t.db);
      const forX = t.fleet.routeIds.map((r) => [...topology.inbounds.values()].find((i) => i.routeId === r && i.id !== fromU.get(r))!.id);
      await storeAssignments(t.db, new Map([[x!.id, forX]]), new Date(now));
      const fromX = routesOf((await b.answer(x!.token, "json")).body);
      expect(t.fleet.routeIds.map((r) => fromX.get(r))).toEqual(forX);
    } finally {
      await b.stop();
    }
  });
});
