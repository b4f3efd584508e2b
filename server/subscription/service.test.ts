import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq, inArray } from "drizzle-orm";
import { clusters, inbounds, routes, serverHealth, serverMetrics, servers, subscriberAssignments, subscriberLegacyLinks, subscribers } from "@/db/schema";
import { seedDemoCluster } from "@/server/demo/seed";
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
    // No brand set: a neutral title, never the internal cluster name.
    expect(a.headers["profile-title"]).toBe("VPN");
    const links = Buffer.from(a.body, "base64").toString().split("\n");
    expect(links).toHaveLength(3); // Japan is empty: invisible
    const j = await json();
    expect(j.routes.map((r) => r.route)).toEqual(["🇺🇸 USA", "🇩🇪 Germany", "🇳🇱 Netherlands"]);
    expect(j.routes[0]!.server).not.toBe("us-dal-1"); // down: never chosen while others are up
    for (const r of j.routes) expect(r.link).toContain(encodeURIComponent(r.inbound));
  });

  it("subscription-userinfo carries the upload and download totals once traffic moved", async () => {
    const [sub] = await t.db.select({ id: subscribers.id }).from(subscribers).where(eq(subscribers.token, token));
    // A limit is a subscriber edit: its event names the subscriber, whose row alone is read again.
    await t.db.update(subscribers).set({ trafficLimitBytes: 10_000 }).where(eq(subscribers.token, token));
    publishChange("subscribers", clusterId, [sub!.id]);
    expect((await service.answer(token, null)).headers["subscription-userinfo"]).toBe("upload=0; download=0; total=10000; expire=0");
    await t.db.update(subscribers).set({ trafficUpBytes: 1000, trafficDownBytes: 5000, trafficUsedBytes: 6000 }).where(eq(subscribers.token, token));
    publishChange("traffic", clusterId);
    // Traffic alone re-reads the totals at most every TRAFFIC_RELOAD_MS, in the background:
    // the request that starts the pass does not wait for it, a later one has the figures.
    now += 10_000;
    await service.answer(token, null);
    await service.trafficSettled();
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

  it("404s an unknown or disabled token alike; an expired or limited one gets one informational entry in every format", async () => {
    const unknown = await service.answer("no-such-token-here", null);
    expect(unknown.status).toBe(404);
    const [other] = await t.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId)).offset(1).limit(2);
    await t.db.update(subscribers).set({ enabled: false }).where(eq(subscribers.id, other!.id));
    const [third] = await t.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId)).offset(2).limit(1);
    await t.db.update(subscribers).set({ expiresAt: new Date(Date.UTC(2026, 4, 31, 8)) }).where(eq(subscribers.id, third!.id));
    const [fourth] = await t.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId)).offset(3).limit(1);
    await t.db
      .update(subscribers)
      .set({ trafficLimitBytes: 1000, trafficUsedBytes: 1000, trafficUpBytes: 200, trafficDownBytes: 800 })
      .where(eq(subscribers.id, fourth!.id));
    publishChange("subscribers", clusterId);
    const disabled = await service.answer(other!.token, null);
    expect(disabled.status).toBe(404);
    expect(disabled).toEqual(unknown);
    // Disabled stays 404 whatever the app or format.
    expect(await service.answer(other!.token, null, { userAgent: "Mozilla/5.0 (X11; Linux x86_64)" })).toEqual(unknown);
    expect(await service.answer(other!.token, "clash")).toEqual(unknown);

    for (const [sub, text] of [
      [third!, "⛔ Subscription expired on 31 May 2026 — contact your provider to renew"],
      [fourth!, "⛔ Traffic limit reached — contact your provider to renew"],
    ] as const) {
      const plain = await service.answer(sub.token, null);
      expect(plain.status).toBe(200);
      const links = Buffer.from(plain.body, "base64").toString("utf8").split("\n");
      expect(links).toHaveLength(1);
      const u = new URL(links[0]!);
      expect([u.protocol, u.hostname, u.port, u.username]).toEqual(["vless:", "127.0.0.1", "1", "00000000-0000-0000-0000-000000000000"]);
      expect(decodeURIComponent(u.hash.slice(1))).toBe(text);
      const json = JSON.parse((await service.answer(sub.token, "json")).body) as JsonAnswer;
      expect(json.routes.map((r) => r.inbound)).toEqual([text]);
      const clash = (await service.answer(sub.token, "clash")).body;
      expect(clash.match(/^ {2}- name: /gm)).toHaveLength(2); // the one proxy and the group
      expect(clash).toContain(`  - name: ${JSON.stringify(text)}\n    type: vless\n    server: "127.0.0.1"\n    port: 1`);
      const sb = JSON.parse((await service.answer(sub.token, "singbox")).body) as { outbounds: Array<{ type: string; tag: string; server?: string; server_port?: number }> };
      expect(sb.outbounds.filter((o) => o.type === "vless")).toEqual([expect.objectContaining({ tag: text, server: "127.0.0.1", server_port: 1 })]);
      const page = await service.answer(sub.token, null, { userAgent: "Mozilla/5.0 (Macintosh) Safari/605.1.15", origin: "https://panel.example.com" });
      expect(page.headers["content-type"]).toContain("text/html");
      expect(page.body).toContain('data-testid="blocked">⛔');
    }
    // The real figures still travel in subscription-userinfo.
    expect((await service.answer(fourth!.token, null)).headers["subscription-userinfo"]).toBe("upload=200; download=800; total=1000; expire=0");
    await t.db.update(subscribers).set({ enabled: true }).where(eq(subscribers.id, other!.id));
    await t.db.update(subscribers).set({ expiresAt: null }).where(eq(subscribers.id, third!.id));
    await t.db.update(subscribers).set({ trafficLimitBytes: null, trafficUsedBytes: 0, trafficUpBytes: 0, trafficDownBytes: 0 }).where(eq(subscribers.id, fourth!.id));
    publishChange("subscribers", clusterId);
    expect(Buffer.from((await service.answer(fourth!.token, null)).body, "base64").toString("utf8").split("\n")).toHaveLength(3);
  });

  it("picks the format by User-Agent without ?format, says Vary, and caches each chosen format apart", async () => {
    const clash = await service.answer(token, null, { userAgent: "clash-verge/v2.0.3" });
    expect(clash.headers["content-type"]).toContain("yaml");
    expect(clash.headers.vary).toBe("User-Agent");
    const sb = await service.answer(token, null, { userAgent: "SFA/1.11.4 (1114; sing-box 1.11.4)" });
    expect(JSON.parse(sb.body).outbounds).toBeDefined();
    const plain = await service.answer(token, null, { userAgent: "v2rayNG/1.9.36" });
    expect(Buffer.from(plain.body, "base64").toString("utf8")).toMatch(/^vless:\/\//);
    // Asked again in another order: each from its own cache entry.
    expect((await service.answer(token, null, { userAgent: "clash-verge/v2.0.3" })).body).toBe(clash.body);
    expect((await service.answer(token, null, { userAgent: "curl/8" })).body).toBe(plain.body);
    // ?format wins over the User-Agent, and then the answer does not vary by it.
    const forced = await service.answer(token, "json", { userAgent: "clash-verge/v2.0.3" });
    expect(JSON.parse(forced.body).routes).toHaveLength(3);
    expect(forced.headers.vary).toBeUndefined();
    const html = await service.answer(token, null, { userAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", origin: "https://a.example" });
    expect(html.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(html.headers["content-security-policy"]).toContain("default-src 'none'");
    expect(html.body).toContain("https://a.example/sub/");
    // The page names its origin: another origin is another page.
    const other = await service.answer(token, null, { userAgent: "Mozilla/5.0", origin: "https://b.example" });
    expect(other.body).toContain("https://b.example/sub/");
    expect(other.body).not.toContain("https://a.example/");
  });

  it("follows the cluster's brand and the browser's language, and shows no internal name unless chosen", async () => {
    const browser = { userAgent: "Mozilla/5.0 (X11; Linux x86_64) Chrome/140", origin: "https://a.example" };
    const sub = (await t.db.select().from(subscribers).where(eq(subscribers.token, token)))[0]!;
    let page = await service.answer(token, null, browser);
    // The words a reader sees: the random parts (the token, links, the QR code's path) can hold
    // any short name by chance.
    const shown = (html: string) => html.replace(/<(style|svg|code|script)\b[\s\S]*?<\/\1>/g, " ").replace(/<[^>]*>/g, " ");
    expect(shown(page.body)).not.toContain("Sub test");
    expect(shown(page.body)).not.toMatch(new RegExp(`\\b${sub.name}\\b`));
    await t.db
      .update(clusters)
      .set({ branding: { title: "Нет Блок ☂", logo: "https://cdn.example.net:8443/logo.png", supportUrl: "tg://resolve?domain=help", accentColor: "#aa0000", backgroundColor: "#101010", showSubscriberName: true } })
      .where(eq(clusters.id, clusterId));
    publishChange("settings", clusterId);
    page = await service.answer(token, null, { ...browser, acceptLanguage: "fa-IR,fa;q=0.9,en;q=0.5" });
    expect(page.headers["profile-title"]).toBe(`base64:${Buffer.from("Нет Блок ☂").toString("base64")}`);
    expect(page.headers["content-security-policy"]).toContain("img-src data: https://cdn.example.net:8443;");
    expect(page.headers.vary).toBe("User-Agent, Accept-Language");
    expect(page.body).toContain('<html lang="fa" dir="rtl">');
    expect(page.body).toContain("<h1>Нет Блок ☂</h1>");
    expect(page.body).toContain(`اشتراک ${sub.name}`);
    expect(page.body).toContain('href="tg://resolve?domain=help"');
    expect(page.body).toContain("--accent:#aa0000;--on-accent:#ffffff;--bg:#101010;--fg:#ffffff");
    // The same subscriber in English next: a page per language, not the cached Persian one.
    page = await service.answer(token, null, { ...browser, acceptLanguage: "en-US" });
    expect(page.body).toContain('<html lang="en" dir="ltr">');
    expect(page.body).toContain(`Subscription of ${sub.name}`);
    // Apps get the brand too, whatever the language.
    expect((await service.answer(token, "json")).headers["profile-title"]).toBe(`base64:${Buffer.from("Нет Блок ☂").toString("base64")}`);
    await t.db.update(clusters).set({ branding: null }).where(eq(clusters.id, clusterId));
    publishChange("settings", clusterId);
    expect((await service.answer(token, "json")).headers["profile-title"]).toBe("VPN");
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
    const report = async (serverId: string, usersOnline: number, bps: number, heldBack = false) => {
      const row = { serverId, reportedAt: new Date(now), listenerAlive: true, serviceRunning: true, usersOnline, rxBps: bps, txBps: bps, cpu: 1, memory: 1, peakBps: 0, heldBackAt: heldBack ? new Date(now) : null };
      const { serverId: _id, ...set } = row;
      await t.db.insert(serverMetrics).values(row).onConflictDoUpdate({ target: serverMetrics.serverId, set });
      publishChange("metrics", clusterId);
      await service.refresh();
      now += 1000;
    };
    // Frankfurt once carried 900 Mbit/s: its link is big, though its stored peak says nothing.
    await report(fra.id, 10, 900e6);
    await report(fra.id, 10, 50e6);
    // Berlin's link was seen full, so the pool is not blind (rule 0) and the scores decide.
    await report(ber.id, 1, 50e6, true);
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

  it("a server stored held back with its report is held back for another instance and after a restart: a burst of new users is not evened out, and what its link carried then outlasts its peak's decay", async () => {
    const de = await t.db.select().from(servers).where(inArray(servers.name, ["de-fra-1", "de-ber-1"]));
    const fra = de.find((x) => x.name === "de-fra-1")!;
    const ber = de.find((x) => x.name === "de-ber-1")!;
    // Frankfurt: 1 Mbit/s per user and 936 Mbit/s spare by its peak; Berlin: 2 per user, none spare.
    const store = async (heldBack: boolean, fraPeakBps = 1000e6, heldBackBps: number | null = null) => {
      const row = (serverId: string, bps: number, peakBps: number) => ({ serverId, reportedAt: new Date(now), listenerAlive: true, serviceRunning: true, usersOnline: 64, rxBps: bps, txBps: bps, cpu: 1, memory: 1, peakBps });
      const rows = [{ ...row(fra.id, 64e6, fraPeakBps), heldBackAt: heldBack ? new Date(now) : null, heldBackBps }, { ...row(ber.id, 128e6, 128e6), heldBackAt: null, heldBackBps: null }];
      for (const r of rows) await t.db.insert(serverMetrics).values(r).onConflictDoUpdate({ target: serverMetrics.serverId, set: r });
      publishChange("metrics", clusterId);
    };
    /** 40 new subscribers fetch one after another on a just-started instance: Germany's servers they got. */
    const burst = async (tag: string) => {
      const fresh = new SubscriptionService(t.db, () => now);
      const made = await t.db
        .insert(subscribers)
        .values(Array.from({ length: 40 }, (_, i) => ({ clusterId, name: `${tag}-${i}`, token: `${tag}-burst-token-${i}` })))
        .returning();
      const got: string[] = [];
      for (const sub of made) {
        const a = await fresh.answer(sub.token, "json");
        got.push((JSON.parse(a.body) as JsonAnswer).routes.find((r) => r.route === "🇩🇪 Germany")!.server);
      }
      await fresh.stop();
      await t.db.delete(subscribers).where(inArray(subscribers.id, made.map((m) => m.id)));
      publishChange("subscribers", clusterId);
      return got;
    };
    // Not held back: nothing has shown either link's capacity; once 32 users (25 % of the 128
    // reported) arrived since the reports, the rest go to the fewer users: Berlin.
    await store(false);
    expect((await burst("blind")).filter((n) => n === "de-ber-1").length).toBeGreaterThan(0);
    // Held back: Frankfurt's peak is its capacity, so its spare decides every pick.
    await store(true);
    expect(new Set(await burst("held"))).toEqual(new Set(["de-fra-1"]));
    // Quiet days later Frankfurt's stored peak has decayed to its 64 Mbit/s of traffic; what it
    // carried when seen full (stored with the mark) still counts as its link.
    await store(true, 64e6, 1000e6);
    expect(new Set(await burst("quiet"))).toEqual(new Set(["de-fra-1"]));
    await store(true, 64e6, null);
    expect((await burst("decayed")).filter((n) => n === "de-ber-1").length).toBeGreaterThan(0);
    await t.db.delete(serverMetrics).where(inArray(serverMetrics.serverId, [fra.id, ber.id]));
    publishChange("metrics", clusterId);
  });

  it("a change naming its subscribers re-reads those rows only; one naming none re-reads all", async () => {
    const two = await t.db.select({ id: subscribers.id, token: subscribers.token }).from(subscribers).where(eq(subscribers.clusterId, clusterId)).limit(3);
    const [a, b] = two.slice(1);
    expect((await service.answer(a!.token, null)).status).toBe(200);
    expect((await service.answer(b!.token, null)).status).toBe(200);
    await t.db.update(subscribers).set({ enabled: false }).where(inArray(subscribers.id, [a!.id, b!.id]));
    publishChange("subscribers", clusterId, [a!.id]);
    expect((await service.answer(a!.token, null)).status).toBe(404);
    // b's row was not read again: the change did not name it.
    expect((await service.answer(b!.token, null)).status).toBe(200);
    publishChange("subscribers", clusterId);
    expect((await service.answer(b!.token, null)).status).toBe(404);
    await t.db.update(subscribers).set({ enabled: true }).where(inArray(subscribers.id, [a!.id, b!.id]));
    publishChange("subscribers", clusterId);
    expect((await service.answer(b!.token, null)).status).toBe(200);
  });

  it("a named change carries a rotated token, a new subscriber and a deleted one", async () => {
    const [a] = await t.db.select({ id: subscribers.id, token: subscribers.token }).from(subscribers).where(eq(subscribers.clusterId, clusterId)).limit(1);
    const rotated = `rotated-${a!.token.slice(0, 20)}`;
    await t.db.update(subscribers).set({ token: rotated }).where(eq(subscribers.id, a!.id));
    publishChange("subscribers", clusterId, [a!.id]);
    expect((await service.answer(a!.token, null)).status).toBe(404);
    expect((await service.answer(rotated, null)).status).toBe(200);
    const [added] = await t.db.insert(subscribers).values({ clusterId, name: "named-new", token: "named-new-token-1" }).returning();
    publishChange("subscribers", clusterId, [added!.id]);
    expect((await service.answer("named-new-token-1", null)).status).toBe(200);
    await t.db.delete(subscribers).where(eq(subscribers.id, added!.id));
    publishChange("subscribers", clusterId, [added!.id]);
    expect((await service.answer("named-new-token-1", null)).status).toBe(404);
    await t.db.update(subscribers).set({ token: a!.token }).where(eq(subscribers.id, a!.id));
    publishChange("subscribers", clusterId, [a!.id]);
    expect((await service.answer(a!.token, null)).status).toBe(200);
  });

  it("an edit re-reads the old URLs of the subscribers it names; an import re-reads them all", async () => {
    const [a, b] = await t.db.select({ id: subscribers.id, token: subscribers.token }).from(subscribers).where(eq(subscribers.clusterId, clusterId)).offset(4).limit(2);
    const served = async (path: string) => (await service.answerPath(null, path, path.split("/").pop()!, "json")).status;
    await t.db.insert(subscriberLegacyLinks).values([
      { host: "", path: "/old/a-key", subscriberId: a!.id },
      { host: "", path: "/old/b-key", subscriberId: b!.id },
    ]);
    publishChange("subscribers", clusterId);
    expect(await served("/old/a-key")).toBe(200);
    expect(await served("/old/b-key")).toBe(200);
    // A rotated key takes a's old URL with it (rotateSubscriberToken deletes the row); b's
    // URL changed in the database too, but the edit did not name b: only a's rows are read.
    await t.db.delete(subscriberLegacyLinks).where(eq(subscriberLegacyLinks.subscriberId, a!.id));
    await t.db.insert(subscriberLegacyLinks).values({ host: "", path: "/old/a-new-key", subscriberId: a!.id });
    await t.db.delete(subscriberLegacyLinks).where(eq(subscriberLegacyLinks.subscriberId, b!.id));
    publishChange("subscribers", clusterId, [a!.id]);
    expect(service.legacyMayBeStale).toBe(true);
    expect(await served("/old/a-key")).toBe(404);
    expect(await served("/old/a-new-key")).toBe(200);
    expect(service.legacyMayBeStale).toBe(false);
    expect(await served("/old/b-key")).toBe(200);
    // A change naming no one (an import) reads every old URL again.
    publishChange("subscribers", clusterId);
    expect(await served("/old/b-key")).toBe(404);
    expect(await served("/old/a-new-key")).toBe(200);
    await t.db.delete(subscriberLegacyLinks);
    publishChange("subscribers", clusterId);
    expect(await served("/old/a-new-key")).toBe(404);
  });

  it("traffic is re-read after the clock went backwards, not only after it moved on", async () => {
    await t.db.update(subscribers).set({ trafficUpBytes: 7, trafficDownBytes: 8, trafficUsedBytes: 15 }).where(eq(subscribers.token, token));
    publishChange("traffic", clusterId);
    now -= 3_600_000;
    await service.answer(token, null);
    await service.trafficSettled();
    expect((await service.answer(token, null)).headers["subscription-userinfo"]).toMatch(/^upload=7; download=8; /);
    await t.db.update(subscribers).set({ trafficUpBytes: 0, trafficDownBytes: 0, trafficUsedBytes: 0 }).where(eq(subscribers.token, token));
    publishChange("subscribers", clusterId);
    now += 3_600_000;
  });
});
