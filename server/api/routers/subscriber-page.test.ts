/** The subscriber page's procedures (issue 25 point 6, issue 27 point 3): one subscriber, usage history, devices. */
import { describe, expect, it } from "vitest";
import { and, asc, eq } from "drizzle-orm";
import { auditLog, clusters, servers, subscriberDevices, subscriberTraffic, subscribers } from "@/db/schema";
import { testDbKinds, type TestDatabase } from "@/db/testing";
import { failure, seededSuite, type Caller } from "@/server/api/testing";
import { type ChangeEvent } from "@/server/bus";

describe.each(testDbKinds())("subscriber page procedures on %s", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  let admin: Caller;
  let viewer: Caller;
  const events: ChangeEvent[] = [];
  seededSuite(kind, (s) => ({ t, clusterId, admin, viewer } = s), events);

  const twoSubscribers = async () => {
    const rows = await t.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId)).orderBy(asc(subscribers.name)).limit(2);
    return rows as [(typeof rows)[number], (typeof rows)[number]];
  };

  it("reads one subscriber as the list shows it; tokens only for those who may change things", async () => {
    const [alice] = await twoSubscribers();
    expect(await admin.subscribers.get({ subscriberId: alice.id })).toMatchObject({ id: alice.id, clusterId, name: alice.name, token: alice.token, deviceLimit: null, status: "active" });
    expect((await viewer.subscribers.get({ subscriberId: alice.id })).token).toBeNull();
    expect(await failure(admin.subscribers.get({ subscriberId: "00000000-0000-4000-8000-000000000000" }))).toMatchObject({ code: "NOT_FOUND" });
  });

  it("sets a device limit on create and update, keeps it when an update leaves it out, and names the field when it is bad", async () => {
    const s = await admin.subscribers.create({ clusterId, name: "Dev Dora", deviceLimit: 3 });
    const limitOf = async () => (await t.db.select().from(subscribers).where(eq(subscribers.id, s.id)))[0]!.deviceLimit;
    expect(await limitOf()).toBe(3);
    await admin.subscribers.update({ subscriberId: s.id, name: "Dev Dora", expiresAt: null, trafficLimitGb: null });
    expect(await limitOf()).toBe(3);
    await admin.subscribers.update({ subscriberId: s.id, name: "Dev Dora", deviceLimit: null });
    expect(await limitOf()).toBeNull();
    for (const bad of [0, 33, 1.5]) {
      const f = await failure(admin.subscribers.update({ subscriberId: s.id, name: "Dev Dora", deviceLimit: bad }));
      expect(f.code).toBe("BAD_REQUEST");
      expect(Object.keys(f.fieldErrors)).toEqual(["deviceLimit"]);
    }
    expect(await limitOf()).toBeNull();
  });

  it("lists devices first seen first; removal is one subscriber's own device, audited, and refused to viewers", async () => {
    const [alice, bob] = await twoSubscribers();
    await t.db.update(subscribers).set({ deviceLimit: 1 }).where(eq(subscribers.id, alice.id));
    const [phone, laptop] = await t.db
      .insert(subscriberDevices)
      .values([
        { subscriberId: alice.id, hwid: "phone", model: "Pixel 8", os: "Android", osVersion: "14", firstSeenAt: new Date("2026-11-01T00:00:00Z"), lastSeenAt: new Date("2026-11-02T00:00:00Z") },
        { subscriberId: alice.id, hwid: "laptop", userAgent: "v2rayTun/4", firstSeenAt: new Date("2026-11-03T00:00:00Z"), lastSeenAt: new Date("2026-11-03T00:00:00Z") },
      ])
      .returning();
    const [bobs] = await t.db.insert(subscriberDevices).values({ subscriberId: bob.id, hwid: "phone" }).returning();
    const listed = await viewer.subscribers.devices({ subscriberId: alice.id });
    expect(listed.deviceLimit).toBe(1);
    expect(listed.devices.map((d) => [d.hwid, d.label, d.overLimit])).toEqual([
      ["phone", "Pixel 8 · Android 14", false],
      ["laptop", "v2rayTun/4", true],
    ]);

    // Bob's device through Alice's id: no such device, nothing removed, nothing announced.
    events.length = 0;
    expect(await failure(admin.subscribers.removeDevice({ subscriberId: alice.id, deviceId: bobs!.id }))).toMatchObject({ code: "NOT_FOUND", message: "This device is no longer listed" });
    expect(await failure(viewer.subscribers.removeDevice({ subscriberId: alice.id, deviceId: phone!.id }))).toMatchObject({ code: "FORBIDDEN" });
    expect(await t.db.select().from(subscriberDevices)).toHaveLength(3);
    expect(events).toEqual([]);

    await admin.subscribers.removeDevice({ subscriberId: alice.id, deviceId: laptop!.id });
    expect((await admin.subscribers.devices({ subscriberId: alice.id })).devices.map((d) => d.hwid)).toEqual(["phone"]);
    expect(events.some((e) => e.kind === "subscribers")).toBe(true);
    const [entry] = await t.db.select().from(auditLog).where(and(eq(auditLog.entityId, alice.id), eq(auditLog.action, "subscriber.device.remove")));
    expect(entry).toMatchObject({ summary: `Removed device v2rayTun/4 of ${alice.name}` });
    expect(await failure(admin.subscribers.removeDevice({ subscriberId: alice.id, deviceId: laptop!.id }))).toMatchObject({ code: "NOT_FOUND" });
  });

  it("rotating the link forgets the devices: whoever the old link leaked to keeps no place under the limit", async () => {
    const s = await admin.subscribers.create({ clusterId, name: "Rot Rita", deviceLimit: 1 });
    await t.db.insert(subscriberDevices).values({ subscriberId: s.id, hwid: "leaked-phone" });
    await admin.subscribers.rotateToken({ subscriberId: s.id });
    expect((await admin.subscribers.devices({ subscriberId: s.id })).devices).toEqual([]);
  });

  it("the cluster's rule for fetches without a device id: admins set it, audited; viewers cannot", async () => {
    expect((await viewer.clusters.get({ clusterId })).devicelessFetches).toBe("allow");
    expect(await failure(viewer.clusters.setDevicelessFetches({ clusterId, devicelessFetches: "refuse" }))).toMatchObject({ code: "FORBIDDEN" });
    expect(await failure(admin.clusters.setDevicelessFetches({ clusterId, devicelessFetches: "maybe" as "allow" }))).toMatchObject({
      code: "BAD_REQUEST",
      fieldErrors: { devicelessFetches: "Fetches without a device id must be allow or refuse" },
    });
    await admin.clusters.setDevicelessFetches({ clusterId, devicelessFetches: "refuse" });
    expect((await t.db.select().from(clusters).where(eq(clusters.id, clusterId)))[0]!.devicelessFetches).toBe("refuse");
    expect((await t.db.select().from(auditLog).where(eq(auditLog.action, "cluster.devicelessFetches"))).length).toBe(1);
    await admin.clusters.setDevicelessFetches({ clusterId, devicelessFetches: "allow" });
  });

  it("usage history: bytes per day and per server within the range asked, today included", async () => {
    const [alice] = await twoSubscribers();
    const [a, b] = await t.db.select().from(servers).where(eq(servers.clusterId, clusterId)).orderBy(asc(servers.name)).limit(2);
    const day = (ago: number) => new Date(Date.now() - ago * 86_400_000).toISOString().slice(0, 10);
    await t.db.insert(subscriberTraffic).values([
      { subscriberId: alice.id, serverId: a!.id, day: day(0), upBytes: 10, downBytes: 100 },
      { subscriberId: alice.id, serverId: b!.id, day: day(0), upBytes: 20, downBytes: 200 },
      { subscriberId: alice.id, serverId: a!.id, day: day(6), upBytes: 1, downBytes: 2 },
      { subscriberId: alice.id, serverId: a!.id, day: day(7), upBytes: 5, downBytes: 5 },
      { subscriberId: alice.id, serverId: a!.id, day: day(40), upBytes: 7, downBytes: 7 },
    ]);
    const week = await viewer.subscribers.usageHistory({ subscriberId: alice.id, days: 7 });
    expect(week.from).toBe(day(6));
    expect(week.to).toBe(day(0));
    expect(week.rows.map((r) => [r.day, r.server, r.upBytes + r.downBytes])).toEqual([
      [day(6), a!.name, 3],
      [day(0), a!.name, 110],
      [day(0), b!.name, 220],
    ]);
    expect((await viewer.subscribers.usageHistory({ subscriberId: alice.id, days: 30 })).rows).toHaveLength(4);
    expect((await viewer.subscribers.usageHistory({ subscriberId: alice.id, days: 90 })).rows).toHaveLength(5);
    expect(await failure(viewer.subscribers.usageHistory({ subscriberId: alice.id, days: 8 as 7 }))).toMatchObject({ code: "BAD_REQUEST", fieldErrors: { days: "Range must be 7, 30 or 90 days" } });
  });
});
