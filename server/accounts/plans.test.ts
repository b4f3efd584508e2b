/**
 * Plans (issue 27 point 2) against a real database: the procedures and their refusals, the
 * defaults a new subscriber takes, what the subscription lists, and what each server's agent
 * accepts.
 */
import { describe, expect, it } from "vitest";
import { and, eq } from "drizzle-orm";
import { auditLog, clusters, inbounds, operators, routes, serverHealth, servers, subscribers } from "@/db/schema";
import { testDbKinds, type TestDatabase } from "@/db/testing";
import { failure, operatorContext, seededSuite, type Caller } from "@/server/api/testing";
import { createCaller } from "@/server/api/root";
import { publishChange, type ChangeEvent } from "@/server/bus";
import { SubscriptionService } from "@/server/subscription/service";
import { EMPTY_PLAN_MESSAGE } from "@/server/subscription/answer";
import { buildClusterConfigs, configOf, patchClusterConfigs } from "@/server/dataplane/config";
import { diffSortedUsers } from "@/core/config-version";
import { renderXray } from "@/agent/render-xray";
import { GIB } from "@/core/validation";

interface JsonAnswer {
  routes: Array<{ routeId: string; route: string; inboundId: string }>;
}

describe.each(testDbKinds())("plans on %s", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  let admin: Caller;
  let viewer: Caller;
  const events: ChangeEvent[] = [];
  seededSuite(kind, (s) => ({ t, clusterId, admin, viewer } = s), events);

  const routeId = async (name: string) => (await t.db.select().from(routes).where(and(eq(routes.clusterId, clusterId), eq(routes.name, name))))[0]!.id;
  const planNamed = async (name: string) => (await admin.plans.list({ clusterId })).find((p) => p.name === name)!;

  /** A subscription service on the test database, everything healthy. */
  async function subscriptions() {
    const ss = await t.db.select().from(servers).where(eq(servers.clusterId, clusterId));
    for (const s of ss) await t.db.update(serverHealth).set({ status: "healthy" }).where(eq(serverHealth.serverId, s.id));
    const service = new SubscriptionService(t.db);
    service.start();
    const json = async (token: string) => {
      const a = await service.answer(token, "json");
      expect(a.status).toBe(200);
      return (JSON.parse(a.body) as JsonAnswer).routes.map((r) => r.route);
    };
    return { service, json };
  }

  it("migrated and new clusters start on an 'All routes' default plan that every subscriber is on", async () => {
    const list = await admin.plans.list({ clusterId });
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ name: "All routes", allRoutes: true, routeIds: [], isDefault: true });
    const n = (await t.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId))).length;
    expect(list[0]!.subscriberCount).toBe(n);
    const created = await admin.clusters.create({ name: "Second" });
    expect((await admin.plans.list({ clusterId: created.id })).map((p) => [p.name, p.isDefault])).toEqual([["All routes", true]]);
  });

  it("creates a plan with defaults; a subscriber created on it takes the defaults for the fields left out, explicit values win", async () => {
    events.length = 0;
    const usa = await routeId("🇺🇸 USA");
    const { id: planId } = await admin.plans.create({ clusterId, name: "USA only", routeIds: [usa], trafficLimitGb: 20, expiryDays: 30, trafficResetStrategy: "monthly", trafficResetDay: 1, deviceLimit: 2 });
    expect(events.some((e) => e.kind === "topology" && e.clusterId === clusterId)).toBe(true);
    expect(await planNamed("USA only")).toMatchObject({ allRoutes: false, routeIds: [usa], trafficLimitBytes: 20 * GIB, expiryDays: 30, deviceLimit: 2, isDefault: false, subscriberCount: 0 });

    const before = Date.now();
    const a = await admin.subscribers.create({ clusterId, name: "plan-defaults", planId });
    const [row] = await t.db.select().from(subscribers).where(eq(subscribers.id, a.id));
    expect(row).toMatchObject({ planId, trafficLimitBytes: 20 * GIB, trafficResetStrategy: "monthly", trafficResetDay: 1, deviceLimit: 2 });
    expect(row!.expiresAt!.getTime()).toBeGreaterThanOrEqual(before + 30 * 86_400_000);
    expect(row!.expiresAt!.getTime()).toBeLessThanOrEqual(Date.now() + 30 * 86_400_000);

    const b = await admin.subscribers.create({ clusterId, name: "plan-explicit", planId, trafficLimitGb: null, expiresAt: null, trafficResetStrategy: "never", deviceLimit: 5 });
    const [rowB] = await t.db.select().from(subscribers).where(eq(subscribers.id, b.id));
    expect(rowB).toMatchObject({ planId, trafficLimitBytes: null, expiresAt: null, trafficResetStrategy: "never", trafficResetDay: null, deviceLimit: 5 });

    // On hold: the hold sets the expiry at first use, so the plan's length does not apply.
    const c = await admin.subscribers.create({ clusterId, name: "plan-hold", planId, holdDays: 10 });
    expect((await t.db.select().from(subscribers).where(eq(subscribers.id, c.id)))[0]).toMatchObject({ expiresAt: null, holdDays: 10 });
    const audit = await t.db.select().from(auditLog).where(eq(auditLog.entityId, planId));
    expect(audit.map((x) => x.action)).toEqual(["plan.create"]);
  });

  it("the subscription lists only the plan's routes; an all-routes plan sees a route created later; an empty plan gets one informational entry", async () => {
    const { service, json } = await subscriptions();
    try {
      const onUsa = (await t.db.select().from(subscribers).where(eq(subscribers.name, "plan-explicit")))[0]!;
      const onAll = (await t.db.select().from(subscribers).where(and(eq(subscribers.clusterId, clusterId), eq(subscribers.planId, (await planNamed("All routes")).id))))[0]!;
      expect(await json(onUsa.token)).toEqual(["🇺🇸 USA"]);
      const all = await json(onAll.token);
      expect(all).toEqual(["🇺🇸 USA", "🇩🇪 Germany", "🇳🇱 Netherlands"]);
      // The page and explain follow the plan too.
      const page = await service.answer(onUsa.token, null, { userAgent: "Mozilla/5.0 (X11; Linux x86_64) Chrome/130.0" });
      expect(page.headers["content-type"]).toContain("text/html");
      expect(page.body.match(/data-testid="share-link"/g)).toHaveLength(1);
      expect((await service.explain(onUsa.id))!.routes.map((r) => r.route)).toEqual(["🇺🇸 USA"]);

      // A route created later, given an inbound: in the all-routes plan, not in "USA only".
      const [japan] = await t.db.select().from(routes).where(and(eq(routes.clusterId, clusterId), eq(routes.name, "🇯🇵 Japan")));
      const [spare] = await t.db.select().from(inbounds).where(and(eq(inbounds.clusterId, clusterId), eq(inbounds.routeId, await routeId("🇳🇱 Netherlands"))));
      const [later] = await t.db.insert(routes).values({ clusterId, name: "Later", position: 99 }).returning();
      const [copy] = await t.db
        .insert(inbounds)
        .values({ ...spare!, id: undefined, name: "later-in", port: spare!.port + 1000, routeId: later!.id, isFallback: false, createdAt: undefined, updatedAt: undefined })
        .returning();
      publishChange("topology", clusterId);
      expect(await json(onAll.token)).toEqual([...all, "Later"]);
      expect(await json(onUsa.token)).toEqual(["🇺🇸 USA"]);

      // A plan of only an empty route (Japan has no inbound): one entry that says so, in every format.
      const { id: emptyPlan } = await admin.plans.create({ clusterId, name: "Japan only", routeIds: [japan!.id] });
      await admin.subscribers.update({ subscriberId: onUsa.id, name: onUsa.name, planId: emptyPlan, expiresAt: null, trafficLimitGb: null });
      const info = await service.answer(onUsa.token, "json");
      expect((JSON.parse(info.body) as { routes: Array<{ route: string }> }).routes.map((r) => r.route)).toEqual([EMPTY_PLAN_MESSAGE]);
      const links = Buffer.from((await service.answer(onUsa.token, null)).body, "base64").toString();
      expect(links.split("\n")).toHaveLength(1);
      expect(decodeURIComponent(links)).toContain(EMPTY_PLAN_MESSAGE);

      // The list's route choices follow the plan too (none stored for its only, empty route).
      await service.flushAssignments();
      expect((await admin.subscribers.get({ subscriberId: onUsa.id })).routes ?? []).toEqual([]);
      // Back on "USA only" (a plan change): the next fetch lists USA again.
      await admin.subscribers.update({ subscriberId: onUsa.id, name: onUsa.name, planId: (await planNamed("USA only")).id, expiresAt: null, trafficLimitGb: null });
      expect(await json(onUsa.token)).toEqual(["🇺🇸 USA"]);
      await service.flushAssignments();
      expect((await admin.subscribers.get({ subscriberId: onUsa.id })).routes?.map((r) => r.route)).toEqual(["🇺🇸 USA"]);
      await t.db.delete(inbounds).where(eq(inbounds.id, copy!.id));
      await t.db.delete(routes).where(eq(routes.id, later!.id));
      publishChange("topology", clusterId);
    } finally {
      await service.stop();
    }
  });

  it("agents: a subscriber on plan A is not on the inbounds of a route only in plan B; a plan change is a delta, a plan's routes a full config", async () => {
    const usaPlan = await planNamed("USA only");
    const { id: dePlan } = await admin.plans.create({ clusterId, name: "Germany only", routeIds: [await routeId("🇩🇪 Germany")] });
    const onUsa = (await t.db.select().from(subscribers).where(eq(subscribers.name, "plan-explicit")))[0]!;
    const onAll = (await t.db.select().from(subscribers).where(and(eq(subscribers.clusterId, clusterId), eq(subscribers.planId, (await planNamed("All routes")).id))))[0]!;
    const built = await buildClusterConfigs(t.db, clusterId);
    const ibs = await t.db.select().from(inbounds).where(eq(inbounds.clusterId, clusterId));
    const usaRoute = await routeId("🇺🇸 USA");
    const deRoute = await routeId("🇩🇪 Germany");
    let sawUsa = false;
    let sawDe = false;
    for (const [serverId] of built.byServer) {
      const config = configOf(built, serverId)!;
      const rendered = renderXray(config, { apiPort: 10085 }).json as { inbounds: Array<{ tag: string; settings?: { clients?: { toJSON(): Array<{ email: string }> } } }> };
      for (const ib of config.inbounds) {
        const row = ibs.find((i) => i.id === ib.id)!;
        const emails = rendered.inbounds.find((i) => i.tag === ib.tag)?.settings?.clients?.toJSON().map((c) => c.email) ?? [];
        // The all-routes subscriber is everywhere; the USA-plan one only on USA's inbounds.
        expect(emails).toContain(onAll.id);
        if (row.routeId === usaRoute) {
          sawUsa = true;
          expect(ib.plans).toContain(usaPlan.id);
          expect(emails).toContain(onUsa.id);
        } else {
          if (row.routeId === deRoute) sawDe = true;
          expect(emails).not.toContain(onUsa.id);
        }
      }
    }
    expect(sawUsa && sawDe).toBe(true);
    expect(built.users.find((u) => u.email === onUsa.id)).toEqual({ id: onUsa.vlessUuid, email: onUsa.id, plan: usaPlan.id });
    expect(built.users.find((u) => u.email === onAll.id)).toEqual({ id: onAll.vlessUuid, email: onAll.id });

    // One subscriber moved to Germany only: a patch (delta) of that user alone, equal to a full build.
    await admin.subscribers.bulk({ clusterId, selection: { ids: [onUsa.id] }, action: { kind: "setPlan", planId: dePlan } });
    const patched = await patchClusterConfigs(t.db, built, [onUsa.id]);
    expect(patched.patchedFrom!.added).toEqual([{ id: onUsa.vlessUuid, email: onUsa.id, plan: dePlan }]);
    expect(patched.patchedFrom!.removed).toEqual([{ id: onUsa.vlessUuid, email: onUsa.id, plan: usaPlan.id }]);
    const rebuilt = await buildClusterConfigs(t.db, clusterId);
    expect(patched.usersHash).toBe(rebuilt.usersHash);
    for (const [id, b] of rebuilt.byServer) expect(patched.byServer.get(id)!.version).toBe(b.version);
    expect(diffSortedUsers(built.users, rebuilt.users).added).toHaveLength(1);
    // Changing a plan's routes changes the servers' configs themselves (a full config).
    await admin.plans.update({ planId: dePlan, name: "Germany only", routeIds: [deRoute, usaRoute] });
    const widened = await buildClusterConfigs(t.db, clusterId);
    expect(widened.usersHash).toBe(rebuilt.usersHash);
    expect([...widened.byServer.values()].map((b) => b.version)).not.toEqual([...rebuilt.byServer.values()].map((b) => b.version));
  });

  it("bulk setPlan keeps the subscribers' own limits unless asked to apply the plan's", async () => {
    const usaPlan = await planNamed("USA only");
    const all = await planNamed("All routes");
    const x = await admin.subscribers.create({ clusterId, name: "bulk-x", planId: all.id, trafficLimitGb: 7 });
    const y = await admin.subscribers.create({ clusterId, name: "bulk-y", planId: all.id, trafficLimitGb: 7 });
    events.length = 0;
    const r = await admin.subscribers.bulk({ clusterId, selection: { ids: [x.id, y.id] }, action: { kind: "setPlan", planId: usaPlan.id }, expectedCount: 2 });
    expect(r.affected).toBe(2);
    expect(events.find((e) => e.kind === "subscribers")?.subscriberIds?.sort()).toEqual([x.id, y.id].sort());
    const rows = await t.db.select().from(subscribers).where(eq(subscribers.planId, usaPlan.id));
    expect(rows.filter((s) => s.name.startsWith("bulk-")).map((s) => s.trafficLimitBytes)).toEqual([7 * GIB, 7 * GIB]);
    await admin.subscribers.bulk({ clusterId, selection: { ids: [x.id] }, action: { kind: "setPlan", planId: usaPlan.id, applyLimits: true } });
    expect((await t.db.select().from(subscribers).where(eq(subscribers.id, x.id)))[0]).toMatchObject({ trafficLimitBytes: 20 * GIB, trafficResetStrategy: "monthly", trafficResetDay: 1, deviceLimit: 2 });
    const page = await admin.subscribers.page({ clusterId, planId: usaPlan.id, search: "bulk-" });
    expect(page.items.map((i) => [i.name, i.planName]).sort()).toEqual([
      ["bulk-x", "USA only"],
      ["bulk-y", "USA only"],
    ]);
    const audit = await t.db.select().from(auditLog).where(eq(auditLog.action, "subscriber.bulk-set-plan"));
    expect(audit.map((a) => a.summary)).toContain("Changed the plan of 2 subscribers to USA only: bulk-x, bulk-y");
  });

  it("refuses a plan of another cluster naming the field, and viewers, and changes nothing", async () => {
    const other = await admin.clusters.create({ name: "Other" });
    const otherPlan = (await admin.plans.list({ clusterId: other.id }))[0]!;
    const count = async () => (await t.db.select().from(subscribers)).length;
    const n = await count();
    const f1 = await failure(admin.subscribers.create({ clusterId, name: "cross", planId: otherPlan.id }));
    expect(f1).toMatchObject({ code: "BAD_REQUEST", fieldErrors: { planId: "No such plan in this cluster" } });
    const sub = (await t.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId)))[0]!;
    const f2 = await failure(admin.subscribers.update({ subscriberId: sub.id, name: sub.name, planId: otherPlan.id }));
    expect(f2.fieldErrors).toEqual({ planId: "No such plan in this cluster" });
    const f3 = await failure(admin.subscribers.bulk({ clusterId, selection: { ids: [sub.id] }, action: { kind: "setPlan", planId: otherPlan.id } }));
    expect(f3.fieldErrors).toEqual({ "action.planId": "No such plan in this cluster" });
    const f4 = await failure(admin.plans.setDefault({ clusterId, planId: otherPlan.id }));
    expect(f4.fieldErrors).toEqual({ planId: "No such plan in this cluster" });
    const f5 = await failure(admin.plans.create({ clusterId, name: "Cross routes", routeIds: [(await t.db.select().from(routes).where(eq(routes.clusterId, other.id)))[0]?.id ?? "00000000-0000-4000-8000-00000000dead"] }));
    expect(Object.keys(f5.fieldErrors)).toEqual(["routeIds"]);
    const f7 = await failure(admin.plans.create({ clusterId, name: "Tiny", trafficLimitGb: 1e-12 }));
    expect(f7.fieldErrors).toEqual({ trafficLimitGb: "Traffic limit must be at least 1 byte" });
    const f6 = await failure(admin.plans.create({ clusterId, name: "all routes" }));
    expect(f6).toMatchObject({ code: "CONFLICT", fieldErrors: { name: 'A plan named "all routes" already exists in this cluster' } });
    expect(await count()).toBe(n);
    expect((await t.db.select().from(subscribers).where(eq(subscribers.id, sub.id)))[0]!.planId).toBe(sub.planId);

    const usaPlan = await planNamed("USA only");
    // One call at a time: each refusal is awaited as it is made.
    for (const call of [
      () => viewer.plans.create({ clusterId, name: "v" }),
      () => viewer.plans.update({ planId: usaPlan.id, name: "v" }),
      () => viewer.plans.delete({ planId: usaPlan.id }),
      () => viewer.plans.setDefault({ clusterId, planId: usaPlan.id }),
      () => viewer.subscribers.bulk({ clusterId, selection: { ids: [sub.id] }, action: { kind: "setPlan", planId: usaPlan.id } }),
    ]) {
      expect((await failure(call())).code).toBe("FORBIDDEN");
    }
    // An API token with subscribers:write only may move subscribers between plans, not edit plans.
    const [ada] = await t.db.select().from(operators).where(eq(operators.username, "ada"));
    const token = createCaller({ ...operatorContext(t.db, ada!.id, "ada", "admin"), apiToken: { id: "tok", name: "shop", scopes: ["read", "subscribers:write"] } } as never);
    expect((await failure(token.plans.create({ clusterId, name: "by token" }))).message).toMatch(/needs the topology:write scope/);
    expect((await token.plans.list({ clusterId })).length).toBeGreaterThan(1);
  });

  it("default plan: new subscribers get it, it cannot be deleted; a plan in use is deleted only with a move-to", async () => {
    const usaPlan = await planNamed("USA only");
    const all = await planNamed("All routes");
    await admin.plans.setDefault({ clusterId, planId: usaPlan.id });
    const [c] = await t.db.select().from(clusters).where(eq(clusters.id, clusterId));
    expect(c!.defaultPlanId).toBe(usaPlan.id);
    const s = await admin.subscribers.create({ clusterId, name: "on-default" });
    expect((await t.db.select().from(subscribers).where(eq(subscribers.id, s.id)))[0]).toMatchObject({ planId: usaPlan.id, trafficLimitBytes: 20 * GIB });
    expect((await failure(admin.plans.delete({ planId: usaPlan.id }))).fieldErrors).toEqual({ planId: "USA only is the cluster's default plan: make another plan the default first" });
    await admin.plans.setDefault({ clusterId, planId: all.id });

    const users = usaPlan.subscriberCount + 1;
    const refused = await failure(admin.plans.delete({ planId: usaPlan.id }));
    expect(Object.keys(refused.fieldErrors)).toEqual(["moveToPlanId"]);
    expect(refused.message).toMatch(/subscribers? (is|are) on USA only/);
    expect((await planNamed("USA only")).subscriberCount).toBeGreaterThanOrEqual(users);
    events.length = 0;
    const { moved } = await admin.plans.delete({ planId: usaPlan.id, moveToPlanId: all.id });
    expect(moved).toBeGreaterThanOrEqual(users);
    expect(events.map((e) => e.kind).sort()).toEqual(["subscribers", "topology"]);
    expect((await admin.plans.list({ clusterId })).some((p) => p.name === "USA only")).toBe(false);
    expect((await t.db.select().from(subscribers).where(eq(subscribers.id, s.id)))[0]!.planId).toBe(all.id);
  });
});
