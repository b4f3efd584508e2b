/**
 * StoredChoices on its own: reads batched into one query, no read for a subscriber known to
 * have no row, choices written behind (only inbounds still in their route), and kept for the
 * next try while the database is away.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { inbounds } from "@/db/schema";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { loadAssignments, storeAssignments, type InboundRoutes } from "./store";
import { StoredChoices } from "./stored-choices";
import { seedTestFleet, type TestFleet } from "./testfleet";

describe.each(testDbKinds())("StoredChoices on %s", (kind) => {
  let t: TestDatabase;
  let fleet: TestFleet;
  let topology: InboundRoutes;
  /** Per route, its inbounds in server order. */
  let inboundsOf: Map<string, string[]>;
  const now = Date.parse("2026-06-01T12:00:00Z");

  beforeEach(async () => {
    t = await openTestDatabase(kind);
    fleet = await seedTestFleet(t.db, { routes: 2, perRoute: 2, subscribers: 3 });
    const rows = await t.db.select({ id: inbounds.id, routeId: inbounds.routeId, serverId: inbounds.serverId }).from(inbounds);
    topology = { inbounds: new Map(rows.map((i) => [i.id, { routeId: i.routeId }])) };
    inboundsOf = new Map(fleet.routeIds.map((r) => [r, fleet.serversOf.get(r)!.map((s) => rows.find((i) => i.serverId === s)!.id)]));
  });
  afterEach(async () => {
    await t?.dispose();
  });

  /** Counts the reads of stored choices (they go through db.select). */
  const countReads = () => {
    const select = t.db.select.bind(t.db);
    const counter = { reads: 0, restore: () => void (t.db.select = select) };
    t.db.select = ((...args: Parameters<typeof select>) => {
      counter.reads++;
      return select(...args);
    }) as typeof t.db.select;
    return counter;
  };

  it("reads the choices asked for within one tick in one query, by each inbound's current route", async () => {
    const [u, v, w] = fleet.subscribers;
    const [r0, r1] = fleet.routeIds;
    await storeAssignments(t.db, new Map([[u!.id, [inboundsOf.get(r0!)![0]!, inboundsOf.get(r1!)![1]!]], [v!.id, [inboundsOf.get(r1!)![0]!]]]), new Date(now));
    const choices = new StoredChoices(t.db, () => now, () => topology);
    const counter = countReads();
    try {
      const [cu, cv, cw] = await Promise.all([choices.of(u!.id), choices.of(v!.id), choices.of(w!.id)]);
      expect(counter.reads).toBe(1);
      expect(cu).toEqual(new Map([[r0, inboundsOf.get(r0!)![0]], [r1, inboundsOf.get(r1!)![1]]]));
      expect(cv).toEqual(new Map([[r1, inboundsOf.get(r1!)![0]]]));
      expect(cw).toEqual(new Map());
      // Cached now: no read.
      expect(choices.known(u!.id)).toBe(cu);
      expect(await choices.of(w!.id)).toBe(cw);
      expect(counter.reads).toBe(1);
    } finally {
      counter.restore();
    }
  });

  it("needs no read for a subscriber without a row once the set of stored subscribers is known", async () => {
    const [u, v] = fleet.subscribers;
    await storeAssignments(t.db, new Map([[u!.id, [inboundsOf.get(fleet.routeIds[0]!)![1]!]]]), new Date(now));
    const choices = new StoredChoices(t.db, () => now, () => topology);
    expect(choices.known(v!.id)).toBeUndefined(); // the set is unknown: read
    await choices.readSetIfUnknown();
    expect(choices.readSetIfUnknown()).toBeUndefined();
    expect(choices.known(v!.id)).toEqual(new Map());
    expect(choices.known(u!.id)).toBeUndefined(); // has a row: read
    // Another instance stored choices for anyone: the set is read again.
    choices.storedElsewhere(undefined);
    expect(choices.known(fleet.subscribers[2]!.id)).toBeUndefined();
  });

  it("writes queued choices behind, one row per subscriber, keeping only inbounds still in their route", async () => {
    const [u] = fleet.subscribers;
    const [r0, r1] = fleet.routeIds;
    const choices = new StoredChoices(t.db, () => now, () => topology);
    const mine = await choices.of(u!.id);
    mine.set(r0!, inboundsOf.get(r0!)![1]!);
    // An inbound chosen for r1 that has since moved to r0: not stored for r1.
    const moved = inboundsOf.get(r1!)![0]!;
    mine.set(r1!, moved);
    topology = { inbounds: new Map([...topology.inbounds, [moved, { routeId: r0! }]]) };
    choices.queueWrite(u!.id, mine);
    // Not yet stored: the queued choices win over the database.
    expect(choices.known(u!.id)).toBe(mine);
    await choices.flush();
    expect((await loadAssignments(t.db, [u!.id])).get(u!.id)).toEqual([inboundsOf.get(r0!)![1]]);
    await choices.stop();
  });

  it("keeps the choices for the next flush while the database is away", async () => {
    const [u] = fleet.subscribers;
    const [r0] = fleet.routeIds;
    const choices = new StoredChoices(t.db, () => now, () => topology);
    const mine = new Map([[r0!, inboundsOf.get(r0!)![0]!]]);
    choices.queueWrite(u!.id, mine);
    const execute = t.db.execute.bind(t.db);
    t.db.execute = (() => Promise.reject(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }))) as unknown as typeof t.db.execute;
    try {
      await choices.flush();
    } finally {
      t.db.execute = execute;
    }
    expect(await loadAssignments(t.db, [u!.id])).toEqual(new Map());
    await choices.flush();
    expect((await loadAssignments(t.db, [u!.id])).get(u!.id)).toEqual([inboundsOf.get(r0!)![0]]);
  });
});
