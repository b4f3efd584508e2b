/**
 * Status changes re-decide only what they touch (answer.ts header): a server going down
 * re-decides the routes that name it, for the users they belong to; a route in fallback or
 * panic is re-decided when any of its servers changes; a topology change re-decides all.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { eq } from "drizzle-orm";
import { inbounds, servers } from "@/db/schema";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { publishChange } from "@/server/bus";
import { mulberry32 } from "@/scripts/simulator/prng";
import { seedTestFleet, setStatus, type TestFleet } from "@/server/assignments/testfleet";
import { ANSWER_TTL_MS } from "./answer";
import { SubscriptionService } from "./service";

interface JsonAnswer {
  routes: Array<{ routeId: string; inboundId: string; server: string }>;
}

describe.each(testDbKinds())("status changes on %s", (kind) => {
  let t: TestDatabase;
  let fleet: TestFleet;
  let service: SubscriptionService;
  let now = Date.parse("2026-06-01T12:00:00Z");
  /** serverId → name, to read answers. */
  const nameOf = new Map<string, string>();
  const idOfName = new Map<string, string>();

  const answer = async (token: string) => {
    const a = await service.answer(token, "json");
    expect(a.status).toBe(200);
    return (JSON.parse(a.body) as JsonAnswer).routes.map((r) => ({ routeId: r.routeId, serverId: idOfName.get(r.server)! }));
  };
  const health = async (ids: string[], status: string) => {
    await setStatus(t.db, ids, status);
    publishChange("health", fleet.clusterId);
  };
  /** Which routes each decideForSubscriber call was given, per user. */
  const spyDecisions = () => {
    const calls: Array<{ userId: string; routeIds: string[] }> = [];
    const original = service.balancer.decideForSubscriber.bind(service.balancer);
    const spy = vi.spyOn(service.balancer, "decideForSubscriber").mockImplementation((req) => {
      calls.push({ userId: req.userId, routeIds: req.routes.map((r) => r.routeId) });
      return original(req);
    });
    return { calls, restore: () => spy.mockRestore() };
  };

  beforeEach(async () => {
    t = await openTestDatabase(kind);
    fleet = await seedTestFleet(t.db, { routes: 4, perRoute: 3, subscribers: 30 });
    for (const s of await t.db.select({ id: servers.id, name: servers.name }).from(servers)) {
      nameOf.set(s.id, s.name);
      idOfName.set(s.name, s.id);
    }
    service = new SubscriptionService(t.db, () => now);
    service.start();
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await service?.stop();
    await t?.dispose();
  });

  it("a server going down re-decides only the routes that name it, and the next fetch names another", async () => {
    const before = new Map<string, Awaited<ReturnType<typeof answer>>>();
    for (const s of fleet.subscribers) before.set(s.id, await answer(s.token));
    const x = before.get(fleet.subscribers[0]!.id)![1]!.serverId;
    const xRoute = fleet.routeOfServer.get(x)!;
    const users = fleet.subscribers.filter((s) => before.get(s.id)!.some((r) => r.serverId === x));
    expect(users.length).toBeGreaterThan(0);
    expect(users.length).toBeLessThan(fleet.subscribers.length);

    await health([x], "probe-failing");
    const { calls, restore } = spyDecisions();
    for (const s of fleet.subscribers) {
      const after = await answer(s.token);
      expect(after.some((r) => r.serverId === x)).toBe(false);
      // Every other route keeps its inbound.
      for (const r of after) if (r.routeId !== xRoute) expect(r).toEqual(before.get(s.id)!.find((b) => b.routeId === r.routeId));
    }
    restore();
    expect(new Set(calls.map((c) => c.userId))).toEqual(new Set(users.map((u) => u.id)));
    for (const c of calls) expect(c.routeIds).toEqual([xRoute]);
  });

  it("leaves the answers of a normal route alone when a server comes back, and takes it within the answer TTL under load changes", async () => {
    const s0 = fleet.subscribers[0]!;
    const [route] = fleet.routeIds;
    const [a, b, c] = fleet.serversOf.get(route!)!;
    await health([b!, c!], "probe-failing");
    expect((await answer(s0.token))[0]!.serverId).toBe(a);
    await health([b!, c!], "healthy");
    const { calls, restore } = spyDecisions();
    expect((await answer(s0.token))[0]!.serverId).toBe(a); // a still works: nothing to re-decide
    expect(calls).toHaveLength(0);
    restore();
    // Past the TTL, with a load change, every route is decided again.
    now += ANSWER_TTL_MS + 1;
    publishChange("metrics", fleet.clusterId);
    const spy2 = spyDecisions();
    await answer(s0.token);
    expect(spy2.calls).toHaveLength(1);
    expect(spy2.calls[0]!.routeIds).toEqual(fleet.routeIds);
    spy2.restore();
  });

  it("re-decides a route in panic or fallback when any of its servers changes", async () => {
    const s0 = fleet.subscribers[0]!;
    const route = fleet.routeIds[2]!;
    const [a, b, c] = fleet.serversOf.get(route)!;
    await health([a!, b!, c!], "no-data"); // panic: one of them, though down
    const inPanic = (await answer(s0.token)).find((r) => r.routeId === route)!.serverId;
    const other = [a!, b!, c!].find((id) => id !== inPanic)!;
    await health([other], "healthy");
    const { calls, restore } = spyDecisions();
    expect((await answer(s0.token)).find((r) => r.routeId === route)!.serverId).toBe(other);
    restore();
    expect(calls.map((x) => x.routeIds)).toEqual([[route]]);

    // Fallback: the only regular server goes down, the fallback takes over; when the regular
    // one returns the route is re-decided at once.
    const fb = fleet.routeIds[3]!;
    const [f1, f2, f3] = fleet.serversOf.get(fb)!;
    await t.db.update(inbounds).set({ isFallback: true }).where(eq(inbounds.serverId, f3!));
    publishChange("topology", fleet.clusterId);
    await health([f1!, f2!], "probe-failing");
    expect((await answer(s0.token)).find((r) => r.routeId === fb)!.serverId).toBe(f3);
    await health([f2!], "healthy");
    expect((await answer(s0.token)).find((r) => r.routeId === fb)!.serverId).toBe(f2);
  });

  it("decides every route again after a topology change", async () => {
    const s0 = fleet.subscribers[0]!;
    await answer(s0.token);
    publishChange("topology", fleet.clusterId);
    const { calls, restore } = spyDecisions();
    await answer(s0.token);
    restore();
    expect(calls).toHaveLength(1);
    expect(calls[0]!.routeIds).toEqual(fleet.routeIds);
  });

  it("never names a server known down while its route has an available one, through a random storm", async () => {
    const rnd = mulberry32(7);
    const all = [...fleet.routeOfServer.keys()];
    const down = new Set<string>();
    for (let step = 0; step < 60; step++) {
      // Flip one to three servers, then fetch a few users.
      const flips = 1 + Math.floor(rnd() * 3);
      const changed: string[] = [];
      for (let k = 0; k < flips; k++) {
        const id = all[Math.floor(rnd() * all.length)]!;
        if (down.has(id)) down.delete(id);
        else down.add(id);
        changed.push(id);
      }
      for (const id of changed) await setStatus(t.db, [id], down.has(id) ? "probe-failing" : "healthy");
      publishChange("health", fleet.clusterId);
      if (rnd() < 0.2) now += 1000;
      for (let u = 0; u < 8; u++) {
        const s = fleet.subscribers[Math.floor(rnd() * fleet.subscribers.length)]!;
        for (const r of await answer(s.token)) {
          const routeHasUp = fleet.serversOf.get(r.routeId)!.some((id) => !down.has(id));
          if (routeHasUp) expect(down.has(r.serverId), `step ${step}: ${nameOf.get(r.serverId)} is down`).toBe(false);
          else expect(fleet.serversOf.get(r.routeId)).toContain(r.serverId); // panic stays in the route
        }
      }
    }
  });
});
