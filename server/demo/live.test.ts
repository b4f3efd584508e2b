/**
 * The live demo (issue 25, point 2): its simulated agents report through the real, token-checked
 * report route; only the seeded demo cluster is taken over; deleting it stops them, and no other
 * cluster can be deleted that way.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asc, eq } from "drizzle-orm";
import { auditLog, clusters, inbounds, servers, subscriberAssignments, subscribers } from "@/db/schema";
import { assignedSubscribersByServer } from "@/server/topology/tooling";
import { newAgentToken } from "@/server/auth/tokens";
import { openTestDatabase, type TestDatabase } from "@/db/testing";
import { publishAfterCommit } from "@/server/changes";
import { TestReportIntake } from "@/server/dataplane/report-testing";
import { deleteDemoCluster, liveDemoClusterId, seedDemoIfEmpty } from "./seed";
import { loopbackUrl, startLiveDemo, type LiveDemo } from "./live";

const quiet = { info() {}, warn() {} };

describe("live demo", () => {
  let t: TestDatabase;
  let intake: TestReportIntake;
  let demo: LiveDemo | null = null;
  let demoId: string;
  let otherId: string;
  const serversOf = (clusterId: string) => t.db.select().from(servers).where(eq(servers.clusterId, clusterId));

  beforeAll(async () => {
    t = await openTestDatabase("pglite");
    expect(await seedDemoIfEmpty(t.db)).toBe(true);
    demoId = (await liveDemoClusterId(t.db))!;
    // Another cluster (an operator's own) with a server of its own.
    otherId = (await t.db.insert(clusters).values({ name: "Sample" }).returning())[0]!.id;
    await t.db.insert(servers).values({ clusterId: otherId, name: "own-1", address: "192.0.2.10", agentTokenHash: newAgentToken().hash });
    intake = await TestReportIntake.start(t);
  });
  afterAll(async () => {
    await demo?.stop();
    await intake?.close();
    await t?.dispose();
  });

  it("takes over only the demo cluster, and its agents' reports pass the token-checked route", async () => {
    const otherBefore = await serversOf(otherId);
    demo = await startLiveDemo({ db: t.db, appUrl: intake.base, log: quiet });
    expect(demo?.clusterId).toBe(demoId);
    expect(demo!.fleet.servers.size).toBe(6);
    for (const s of await serversOf(demoId)) expect(s.address).toBe("127.0.0.1");
    // The other cluster keeps its address and agent token.
    expect(await serversOf(otherId)).toEqual(otherBefore);
    for (const sim of demo!.fleet.servers.values()) {
      const sent = await sim.reportNow();
      expect(sent.status).toBe(200);
    }
    const [started] = await t.db.select().from(auditLog).where(eq(auditLog.action, "demo.start"));
    expect(started?.summary).toContain("6 servers");
  });

  it("each server's users are the subscribers assigned to it, and its reports carry their traffic through the same route, counted", async () => {
    const [sim] = [...demo!.fleet.servers.values()];
    const [inbound] = await t.db.select().from(inbounds).where(eq(inbounds.serverId, sim!.serverId));
    const [dave, erin] = await t.db.select().from(subscribers).where(eq(subscribers.clusterId, demoId)).orderBy(asc(subscribers.name)).limit(2);
    for (const sub of [dave!, erin!]) {
      await t.db.insert(subscriberAssignments).values({ subscriberId: sub.id, inboundIds: [inbound!.id] }).onConflictDoUpdate({ target: subscriberAssignments.subscriberId, set: { inboundIds: [inbound!.id] } });
    }
    const expected = (await assignedSubscribersByServer(t.db, demoId)).get(sim!.serverId)!;
    expect(expected).toEqual(expect.arrayContaining([dave!.id, erin!.id]));
    // The demo polls the assignments; its server then has those users.
    await expect.poll(() => sim!.state().users, { timeout: 30_000 }).toBe(expected.length);
    const sent = await sim!.reportNow();
    expect(sent.status).toBe(200);
    const rows = sent.report.users!;
    expect(rows.map((r) => r.email).sort()).toEqual([...expected].sort().slice(0, rows.length));
    expect(rows.length).toBe(sent.report.usersOnline);
    expect(sent.report).toMatchObject({ instance: expect.stringMatching(/^sim-/), seq: expect.any(Number) });
    const mine = rows.find((r) => r.email === dave!.id)!;
    expect(mine.down).toBeGreaterThan(0);
    await intake.fold();
    const [after] = await t.db.select().from(subscribers).where(eq(subscribers.id, dave!.id));
    expect(after!.trafficUsedBytes).toBeGreaterThanOrEqual(mine.up + mine.down);
    expect(after!.lastSeenAt).not.toBeNull();
  });

  it("never takes over, nor deletes, a server an operator added to the demo", async () => {
    const [own] = await t.db.insert(servers).values({ clusterId: demoId, name: "my-real-1", address: "198.51.100.7", agentTokenHash: newAgentToken().hash }).returning();
    // Another start (the app restarted) localises the demo's own six again, never this one.
    const again = await startLiveDemo({ db: t.db, appUrl: intake.base, log: quiet });
    try {
      expect(again!.fleet.servers.size).toBe(6);
      expect(again!.fleet.servers.has(own!.id)).toBe(false);
    } finally {
      await again?.stop();
    }
    const [after] = await t.db.select().from(servers).where(eq(servers.id, own!.id));
    expect(after).toEqual(own);
    // Delete demo would take it along: refused, naming it, and nothing deleted.
    await expect(publishAfterCommit(deleteDemoCluster(t.db, null, { clusterId: demoId }))).rejects.toThrow(/not the demo's: my-real-1/);
    expect(await serversOf(demoId)).toHaveLength(7);
    await t.db.delete(servers).where(eq(servers.id, own!.id));
  });

  it("refuses to delete any other cluster, and deleting the demo stops its agents", async () => {
    await expect(publishAfterCommit(deleteDemoCluster(t.db, null, { clusterId: otherId }))).rejects.toThrow(/Sample is not the demo cluster/);
    expect(await serversOf(otherId)).toHaveLength(1);

    const sims = [...demo!.fleet.servers.values()];
    await publishAfterCommit(deleteDemoCluster(t.db, null, { clusterId: demoId }));
    await expect.poll(() => sims.every((s) => !s.state().listening)).toBe(true);
    expect(await serversOf(demoId)).toHaveLength(0);
    expect(await liveDemoClusterId(t.db)).toBeNull();
    // Its tokens died with its servers; nothing starts again.
    expect((await sims[0]!.reportNow()).status).toBe(401);
    expect(await startLiveDemo({ db: t.db, appUrl: intake.base, log: quiet })).toBeNull();
  });

  it("reports to the app on loopback whatever address it listens on", () => {
    expect(loopbackUrl("0.0.0.0", 3000)).toBe("http://127.0.0.1:3000");
    expect(loopbackUrl("::", 3000)).toBe("http://[::1]:3000");
    expect(loopbackUrl("127.0.0.5", 80)).toBe("http://127.0.0.5:80");
  });
});
