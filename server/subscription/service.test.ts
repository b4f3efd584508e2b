import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq, inArray } from "drizzle-orm";
import { inbounds, routes, serverHealth, serverMetrics, servers, subscriberAssignments, subscribers } from "@/db/schema";
import { seedDemoCluster } from "@/db/seed";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { deliverRemoteChange, publishChange } from "@/server/bus";
import { SubscriptionService } from "./service";

interface JsonAnswer {
  routes: Array<{ routeId: string; route: string; inboundId: string; inbound: string; server: string; link: string }>;
}

describe.each(testDbKinds())("subscription service on %s", (kind) => {
  let t: TestDatabase;
  let service: SubscriptionService;
  let clusterId: string;
  let token: string;
  let now = Date.parse("2026-06-01T12:00:00Z");

  const json = async () => {
    const a = await service.answer(token, "json");
    expect(a.status).toBe(200);
    return JSON.parse(a.body) as JsonAnswer;
  };

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    clusterId = await seedDemoCluster(t.db, "Sub test");
    // Everything healthy except us-dal-1.
    const ss = await t.db.select().from(servers).where(eq(servers.clusterId, clusterId));
    for (const s of ss) await t.db.update(serverHealth).set({ status: s.name === "us-dal-1" ? "probe-failing" : "healthy" }).where(eq(serverHealth.serverId, s.id));
    const [sub] = await t.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId)).limit(1);
    token = sub!.token;
    service = new SubscriptionService(t.db, () => now);
    service.start();
  });
  afterAll(async () => {
    await service?.stop();
    await t?.dispose();
  });

  it("answers one entry per non-empty route, in route order, with headers", async () => {
    const a = await service.answer(token, null);
    expect(a.status).toBe(200);
    expect(a.headers["subscription-userinfo"]).toMatch(/^upload=0; download=0; total=0; expire=0$/);
    expect(a.headers["profile-update-interval"]).toBe("12");
    expect(a.headers["profile-title"]).toBe("Sub test");
    const links = Buffer.from(a.body, "base64").toString().split("\n");
    expect(links).toHaveLength(3); // Japan is empty: invisible
    const j = await json();
    expect(j.routes.map((r) => r.route)).toEqual(["🇺🇸 USA", "🇩🇪 Germany", "🇳🇱 Netherlands"]);
    expect(j.routes[0]!.server).not.toBe("us-dal-1"); // down: never chosen while others are up
    for (const r of j.routes) expect(r.link).toContain(encodeURIComponent(r.inbound));
  });

  it("subscription-userinfo carries the upload and download totals once traffic moved", async () => {
    await t.db
      .update(subscribers)
      .set({ trafficUpBytes: 1000, trafficDownBytes: 5000, trafficUsedBytes: 6000, trafficLimitBytes: 10_000 })
      .where(eq(subscribers.token, token));
    publishChange("traffic", clusterId);
    // Traffic alone re-reads the totals at most every TRAFFIC_RELOAD_MS.
    now += 10_000;
    const a = await service.answer(token, null);
    expect(a.headers["subscription-userinfo"]).toBe("upload=1000; download=5000; total=10000; expire=0");
    await t.db.update(subscribers).set({ trafficUpBytes: 0, trafficDownBytes: 0, trafficUsedBytes: 0, trafficLimitBytes: null }).where(eq(subscribers.token, token));
    publishChange("subscribers", clusterId);
  });

  it("stores assignments, and only when they change", async () => {
    await service.flushAssignments();
    const sub = (await t.db.select().from(subscribers).where(eq(subscribers.token, token)))[0]!;
    const rows = await t.db.select().from(subscriberAssignments).where(eq(subscriberAssignments.subscriberId, sub.id));
    expect(rows).toHaveLength(1);
    expect(rows[0]!.inboundIds).toHaveLength(3);
    const stamp = rows.map((r) => r.updatedAt.getTime());
    now += 60_000; // past the answer cache
    await json();
    await service.flushAssignments();
    const again = await t.db.select().from(subscriberAssignments).where(eq(subscriberAssignments.subscriberId, sub.id));
    expect(again.map((r) => r.updatedAt.getTime())).toEqual(stamp);
  });

  it("shows a move in the very next fetch", async () => {
    const before = await json();
    const usa = before.routes[0]!;
    const [germany] = await t.db.select().from(routes).where(eq(routes.name, "🇩🇪 Germany"));
    // Take every USA inbound but the chosen one out, then move the chosen one to Germany.
    await t.db.update(inbounds).set({ routeId: germany!.id }).where(eq(inbounds.id, usa.inboundId));
    publishChange("topology", clusterId);
    const after = await json();
    expect(after.routes.find((r) => r.routeId === usa.routeId)?.inboundId).not.toBe(usa.inboundId);
    await t.db.update(inbounds).set({ routeId: usa.routeId }).where(eq(inbounds.id, usa.inboundId));
    publishChange("topology", clusterId);
  });

  it("404s an unknown, disabled or expired token alike", async () => {
    const unknown = await service.answer("no-such-token-here", null);
    expect(unknown.status).toBe(404);
    const [other] = await t.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId)).offset(1).limit(2);
    await t.db.update(subscribers).set({ enabled: false }).where(eq(subscribers.id, other!.id));
    const [third] = await t.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId)).offset(2).limit(1);
    await t.db.update(subscribers).set({ expiresAt: new Date(now - 1000) }).where(eq(subscribers.id, third!.id));
    publishChange("subscribers", clusterId);
    const disabled = await service.answer(other!.token, null);
    const expired = await service.answer(third!.token, null);
    expect([disabled.status, expired.status]).toEqual([404, 404]);
    expect(disabled.body).toBe(unknown.body);
    expect(expired.body).toBe(unknown.body);
  });

  it("answers concurrent first fetches of a new subscriber from the reloaded picture", async () => {
    const [fresh] = await t.db.insert(subscribers).values({ clusterId, name: "newcomer", token: "newcomer-token-0001" }).returning();
    publishChange("subscribers", clusterId);
    const answers = await Promise.all(Array.from({ length: 10 }, () => service.answer(fresh!.token, "json")));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
  });

  it("takes a choice stored by another instance instead of its own cached one", async () => {
    const before = await json();
    const usa = before.routes.find((r) => r.route === "🇺🇸 USA")!;
    await service.flushAssignments();
    // Another instance stored a different (equally good) inbound of the same route for this user.
    const sub = (await t.db.select().from(subscribers).where(eq(subscribers.token, token)))[0]!;
    const sameRoute = await t.db.select().from(inbounds).where(eq(inbounds.routeId, usa.routeId));
    const onSameServer = sameRoute.find((i) => i.id !== usa.inboundId && i.serverId === sameRoute.find((x) => x.id === usa.inboundId)!.serverId)!;
    const [stored] = await t.db.select().from(subscriberAssignments).where(eq(subscriberAssignments.subscriberId, sub.id));
    await t.db
      .update(subscriberAssignments)
      .set({ inboundIds: stored!.inboundIds.map((id) => (id === usa.inboundId ? onSameServer.id : id)) })
      .where(eq(subscriberAssignments.subscriberId, sub.id));
    expect((await json()).routes.find((r) => r.route === "🇺🇸 USA")!.inboundId).toBe(usa.inboundId); // still cached
    deliverRemoteChange({ kind: "assignments", clusterId: null, subscriberIds: [sub.id], origin: "another-instance", at: Date.now() });
    expect((await json()).routes.find((r) => r.route === "🇺🇸 USA")!.inboundId).toBe(onSameServer.id);
  });

  it("refuses an unknown format with 400", async () => {
    const a = await service.answer(token, "xml");
    expect(a.status).toBe(400);
  });

  it("goes to panic when every server of a route is down, and skips none", async () => {
    const nl = await t.db.select().from(servers).where(inArray(servers.name, ["nl-ams-1", "nl-rtm-1"]));
    for (const s of nl) await t.db.update(serverHealth).set({ status: "no-data" }).where(eq(serverHealth.serverId, s.id));
    publishChange("health", clusterId);
    const sub = (await t.db.select().from(subscribers).where(eq(subscribers.token, token)))[0]!;
    const ex = await service.explain(sub.id);
    const nlRoute = ex!.routes.find((r) => r.route === "🇳🇱 Netherlands")!;
    expect(nlRoute.decision.reason).toBe("panic");
    expect((await json()).routes).toHaveLength(3);
    for (const s of nl) await t.db.update(serverHealth).set({ status: "healthy" }).where(eq(serverHealth.serverId, s.id));
    publishChange("health", clusterId);
  });

  it("explains every candidate without recording anything", async () => {
    const sub = (await t.db.select().from(subscribers).where(eq(subscribers.token, token)))[0]!;
    const ex = await service.explain(sub.id);
    expect(ex!.routes.map((r) => r.route)).toEqual(["🇺🇸 USA", "🇩🇪 Germany", "🇳🇱 Netherlands"]);
    const usa = ex!.routes[0]!;
    expect(usa.decision.candidates.length).toBeGreaterThanOrEqual(3);
    expect(usa.decision.candidates.find((c) => c.excluded === "server-down")).toBeDefined();
    expect(usa.decision.explanation.length).toBeGreaterThan(0);
  });

  it("explains the choice the next fetch makes, with the peaks the balancer learned from earlier reports", async () => {
    const de = await t.db.select().from(servers).where(inArray(servers.name, ["de-fra-1", "de-ber-1"]));
    const fra = de.find((x) => x.name === "de-fra-1")!;
    const ber = de.find((x) => x.name === "de-ber-1")!;
    const report = async (serverId: string, usersOnline: number, bps: number) => {
      const row = { serverId, reportedAt: new Date(now), listenerAlive: true, serviceRunning: true, usersOnline, rxBps: bps, txBps: bps, cpu: 1, memory: 1, peakBps: 0 };
      const { serverId: _id, ...set } = row;
      await t.db.insert(serverMetrics).values(row).onConflictDoUpdate({ target: serverMetrics.serverId, set });
      publishChange("metrics", clusterId);
      await service.refresh();
      now += 1000;
    };
    // Frankfurt once carried 900 Mbit/s: its link is big, though its stored peak says nothing.
    await report(fra.id, 10, 900e6);
    await report(fra.id, 10, 50e6);
    await report(ber.id, 1, 50e6);
    const [fresh] = await t.db.insert(subscribers).values({ clusterId, name: "peak-reader", token: "peak-reader-token-01" }).returning();
    publishChange("subscribers", clusterId);
    const ex = await service.explain(fresh!.id);
    const explained = ex!.routes.find((r) => r.route === "🇩🇪 Germany")!.decision;
    const a = await service.answer(fresh!.token, "json");
    const fetched = (JSON.parse(a.body) as JsonAnswer).routes.find((r) => r.route === "🇩🇪 Germany")!;
    expect(explained.serverId).toBe(fra.id); // (900 − 50) / 11 beats (100 − 50) / 2 Mbit/s per user
    expect(fetched.inboundId).toBe(explained.inboundId);
    await t.db.delete(serverMetrics).where(inArray(serverMetrics.serverId, [fra.id, ber.id]));
    publishChange("metrics", clusterId);
  });
});
