/**
 * Deleting the live demo like any other cluster (issue 27, point 4): its simulated agents stop
 * (the same stop path as Delete demo: the "topology" change of a cluster that is gone), and the
 * demo is forgotten in the same transaction, so it never starts again.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { servers } from "@/db/schema";
import { openTestDatabase, type TestDatabase } from "@/db/testing";
import { publishAfterCommit } from "@/server/changes";
import { TestReportIntake } from "@/server/dataplane/report-testing";
import { deleteCluster } from "@/server/topology/clusters";
import { forgetLiveDemoOf, liveDemoClusterId, seedDemoIfEmpty } from "./seed";
import { startLiveDemo, type LiveDemo } from "./live";

const quiet = { info() {}, warn() {} };

describe("deleting the live demo cluster", () => {
  let t: TestDatabase;
  let intake: TestReportIntake;
  let demo: LiveDemo | null = null;

  beforeAll(async () => {
    t = await openTestDatabase("pglite");
    expect(await seedDemoIfEmpty(t.db)).toBe(true);
    intake = await TestReportIntake.start(t);
  });
  afterAll(async () => {
    await demo?.stop();
    await intake?.close();
    await t?.dispose();
  });

  it("stops its simulated agents, forgets the demo, and refuses a mistyped name first", async () => {
    const demoId = (await liveDemoClusterId(t.db))!;
    demo = await startLiveDemo({ db: t.db, appUrl: intake.base, log: quiet });
    const sims = [...demo!.fleet.servers.values()];
    expect(sims.length).toBe(6);
    for (const sim of sims) expect((await sim.reportNow()).status).toBe(200);

    await expect(publishAfterCommit(deleteCluster(t.db, null, { clusterId: demoId, confirmName: "Demo" }, forgetLiveDemoOf))).rejects.toThrow(/Type the cluster's name, Demo cluster/);
    expect(await liveDemoClusterId(t.db)).toBe(demoId);
    expect(sims.every((s) => s.state().listening)).toBe(true);

    const gone = await publishAfterCommit(deleteCluster(t.db, null, { clusterId: demoId, confirmName: "Demo cluster" }, forgetLiveDemoOf));
    expect(gone).toMatchObject({ name: "Demo cluster", servers: 6, routes: 4, subscribers: 60 });
    await expect.poll(() => sims.every((s) => !s.state().listening)).toBe(true);
    expect(await t.db.select().from(servers).where(eq(servers.clusterId, demoId))).toEqual([]);
    expect(await liveDemoClusterId(t.db)).toBeNull();
    expect((await sims[0]!.reportNow()).status).toBe(401);
    expect(await startLiveDemo({ db: t.db, appUrl: intake.base, log: quiet })).toBeNull();
  });
});
