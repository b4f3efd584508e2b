import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asc, eq, sql } from "drizzle-orm";
import { clusters, serverHealth, servers, subscriberDevices, subscribers } from "@/db/schema";
import { seedDemoCluster } from "@/server/demo/seed";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { publishChange } from "@/server/bus";
import { deviceFromHeaders, DEVICES_STORED_MAX } from "@/core/devices";
import { SubscriptionService } from "./service";
import { DeviceGate } from "./devices";

interface JsonAnswer {
  routes: Array<{ inbound: string }>;
}

describe.each(testDbKinds())("device limits on /sub on %s", (kind) => {
  let t: TestDatabase;
  let service: SubscriptionService;
  let clusterId: string;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };
  let now = Date.parse("2026-06-01T12:00:00Z");

  const fetch = async (token: string, headers: Record<string, string> = {}) => {
    const a = await service.answer(token, "json", { device: deviceFromHeaders(headers) });
    expect(a.status).toBe(200);
    return { routes: (JSON.parse(a.body) as JsonAnswer).routes.map((r) => r.inbound), headers: a.headers };
  };
  const devicesOf = (id: string) => t.db.select().from(subscriberDevices).where(eq(subscriberDevices.subscriberId, id)).orderBy(asc(subscriberDevices.firstSeenAt));
  const setLimit = async (id: string, deviceLimit: number | null) => {
    await t.db.update(subscribers).set({ deviceLimit }).where(eq(subscribers.id, id));
    publishChange("subscribers", clusterId);
  };

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    clusterId = await seedDemoCluster(t.db, "Devices test");
    for (const s of await t.db.select().from(servers).where(eq(servers.clusterId, clusterId))) await t.db.update(serverHealth).set({ status: "healthy" }).where(eq(serverHealth.serverId, s.id));
    const subs = await t.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId)).orderBy(asc(subscribers.name)).limit(2);
    [alice, bob] = subs.map((s) => ({ id: s.id, token: s.token })) as [typeof alice, typeof bob];
    service = new SubscriptionService(t.db, () => now);
    service.start();
  });
  afterAll(async () => {
    await service?.stop();
    await t?.dispose();
  });

  it("a subscriber without a limit is served on every device; each device is listed once, with what its app said", async () => {
    const phone = { "x-hwid": "phone-1", "x-device-os": "iOS", "x-ver-os": "17.4", "x-device-model": "iPhone15,2", "user-agent": "Happ/3.5.0" };
    const first = await fetch(alice.token, phone);
    expect(first.routes).toHaveLength(3);
    now += 120_000;
    await fetch(alice.token, phone);
    await fetch(alice.token, { "x-hwid": "laptop-1\u0000\u202e", "user-agent": "v2rayTun/4" });
    await fetch(alice.token); // no device id: served, nothing recorded
    const rows = await devicesOf(alice.id);
    expect(rows.map((r) => [r.hwid, r.os, r.osVersion, r.model, r.userAgent])).toEqual([
      ["phone-1", "iOS", "17.4", "iPhone15,2", "Happ/3.5.0"],
      ["laptop-1", null, null, null, "v2rayTun/4"],
    ]);
    expect(rows[0]!.lastSeenAt.getTime()).toBeGreaterThan(rows[0]!.firstSeenAt.getTime());
  });

  it("over the limit a new device gets one informational entry and is not recorded; known devices keep their servers", async () => {
    await setLimit(alice.id, 2);
    const refused = await fetch(alice.token, { "x-hwid": "tablet-1" });
    expect(refused.routes).toEqual(["⛔ Device limit reached (2) — remove a device or contact your provider"]);
    expect(refused.headers["x-hwid-limit"]).toBe("true");
    expect((await fetch(alice.token, { "x-hwid": "phone-1" })).routes).toHaveLength(3);
    expect((await devicesOf(alice.id)).map((r) => r.hwid)).toEqual(["phone-1", "laptop-1"]);
    // A device removed frees its place.
    await t.db.delete(subscriberDevices).where(eq(subscriberDevices.hwid, "laptop-1"));
    expect((await fetch(alice.token, { "x-hwid": "tablet-1" })).routes).toHaveLength(3);
  });

  it("a limit lowered below the count serves the devices seen first and refuses the newest", async () => {
    await setLimit(alice.id, 1);
    expect((await fetch(alice.token, { "x-hwid": "phone-1" })).routes).toHaveLength(3);
    expect((await fetch(alice.token, { "x-hwid": "tablet-1" })).routes[0]).toMatch(/^⛔ Device limit reached \(1\)/);
    // The subscriber's page says it in the page's language.
    const page = await service.answer(alice.token, null, { device: deviceFromHeaders({ "x-hwid": "tablet-1" }), userAgent: "Mozilla/5.0 (X11; Linux x86_64) Chrome/140.0", acceptLanguage: "ru-RU,ru;q=0.9" });
    expect(page.body).toContain("⛔ Достигнут лимит устройств (1) — удалите устройство или обратитесь к провайдеру");
  });

  it("fetches without a device id: allowed by default, refused where the cluster says so, and only for subscribers with a limit", async () => {
    expect((await fetch(alice.token)).routes).toHaveLength(3);
    await t.db.update(clusters).set({ devicelessFetches: "refuse" }).where(eq(clusters.id, clusterId));
    publishChange("settings", clusterId);
    expect((await fetch(alice.token)).routes).toEqual(["⛔ This app sends no device id — use an app that does, or contact your provider"]);
    expect((await service.answer(alice.token, null, { userAgent: "Mozilla/5.0 Chrome/140", device: deviceFromHeaders({}) })).body).toContain("This app sends no device id");
    expect((await fetch(bob.token)).routes).toHaveLength(3);
    await t.db.update(clusters).set({ devicelessFetches: "allow" }).where(eq(clusters.id, clusterId));
    publishChange("settings", clusterId);
  });

  it("the same device id with another subscriber's link is that subscriber's device: neither sees nor uses the other's place", async () => {
    await fetch(bob.token, { "x-hwid": "phone-1" });
    expect((await devicesOf(bob.id)).map((r) => r.hwid)).toEqual(["phone-1"]);
    expect((await devicesOf(alice.id)).map((r) => r.hwid)).toEqual(["phone-1", "tablet-1"]);
  });

  // PostgreSQL only: PGlite has one connection, so two checks never overlap there.
  it.runIf(kind === "postgres")("a check waits for another one holding the subscriber, then counts the device it added: no two take the last place", async () => {
    const [carol] = await t.db.select().from(subscribers).where(eq(subscribers.name, "carol"));
    const id = carol!.id;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let holding!: () => void;
    const held = new Promise<void>((r) => (holding = r));
    // Another instance's check in the middle of adding the last free device.
    const other = t.db.transaction(async (tx) => {
      await tx.select({ id: subscribers.id }).from(subscribers).where(eq(subscribers.id, id)).for("update");
      await tx.insert(subscriberDevices).values({ subscriberId: id, hwid: "race-first" });
      holding();
      await released;
    });
    await held;
    const gate = new DeviceGate(t.db, () => now);
    const second = gate.check({ id, deviceLimit: 1 }, "allow", deviceFromHeaders({ "x-hwid": "race-second" }));
    const waitingOnLocks = async () => {
      const r = await t.db.execute(sql`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`);
      return Number(((r as unknown as { rows: Array<{ n: number }> }).rows ?? [])[0]?.n ?? 0);
    };
    await expect.poll(waitingOnLocks).toBeGreaterThan(0);
    release();
    await other;
    expect(await second).toEqual({ allowed: false, reason: "device-limit", limit: 1 });
    expect((await devicesOf(id)).map((d) => d.hwid)).toEqual(["race-first"]);
  });

  it("a new device id on every fetch cannot grow the table past the cap", async () => {
    await setLimit(bob.id, null);
    for (let i = 0; i < DEVICES_STORED_MAX + 5; i++) {
      now += 1000;
      await fetch(bob.token, { "x-hwid": `forged-${i}` });
    }
    const rows = await devicesOf(bob.id);
    expect(rows).toHaveLength(DEVICES_STORED_MAX);
    // The least recently seen made room: the newest ids are kept.
    expect(rows.map((r) => r.hwid)).toContain(`forged-${DEVICES_STORED_MAX + 4}`);
    expect(rows.map((r) => r.hwid)).not.toContain("phone-1");
  });
});
