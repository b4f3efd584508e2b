/** Subscriber writes: they commit, audit, and hand back their change events without publishing them. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { auditLog, subscribers } from "@/db/schema";
import { seedDemoCluster } from "@/server/demo/seed";
import { openTestDatabase, type TestDatabase } from "@/db/testing";
import { onChange, type ChangeEvent } from "@/server/bus";
import { publishAfterCommit } from "@/server/changes";
import { createSubscriber, deleteSubscriber, listSubscribers, setSubscriberEnabled } from "./subscribers";


/** No reset schedule and no hold: the fields these tests are not about. */
const NO_SCHEDULE = { trafficResetStrategy: "never", trafficResetDay: null, holdDays: null } as const;

describe("subscriber domain functions", () => {
  let t: TestDatabase;
  let clusterId: string;
  const events: ChangeEvent[] = [];
  let stop: () => void;

  beforeAll(async () => {
    t = await openTestDatabase("pglite");
    clusterId = await seedDemoCluster(t.db, "Demo");
    stop = onChange((e) => events.push(e));
  });
  afterAll(async () => {
    stop?.();
    await t?.dispose();
  });

  it("returns the change to publish and publishes nothing itself", async () => {
    events.length = 0;
    const w = await createSubscriber(t.db, null, { clusterId, name: "Ola", expiresAt: null, trafficLimitGb: 1.5, ...NO_SCHEDULE });
    expect(w.changes).toEqual([{ kind: "subscribers", clusterId, subscriberIds: [w.result.id] }]); // named: the config hub patches
    expect(events).toEqual([]);
    const [row] = await t.db.select().from(subscribers).where(eq(subscribers.id, w.result.id));
    expect(row!.trafficLimitBytes).toBe(Math.round(1.5 * 1024 ** 3));
    const [audit] = await t.db.select().from(auditLog).where(eq(auditLog.entityId, w.result.id));
    expect(audit).toMatchObject({ action: "subscriber.create", operatorName: "system", summary: "Added subscriber Ola" });
  });

  it("publishAfterCommit announces each change once, after the write", async () => {
    const w = createSubscriber(t.db, null, { clusterId, name: "Per", expiresAt: null, trafficLimitGb: null, ...NO_SCHEDULE });
    events.length = 0;
    const { id } = await publishAfterCommit(w);
    expect(events.map((e) => [e.kind, e.clusterId])).toEqual([["subscribers", clusterId]]);
    events.length = 0;
    await publishAfterCommit(setSubscriberEnabled(t.db, null, { subscriberId: id, enabled: false }));
    expect(events.map((e) => e.kind)).toEqual(["subscribers"]);
    const listed = await listSubscribers(t.db, { clusterId, search: "per" }, false);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ enabled: false, token: null, online: false });
  });

  it("a failed write changes nothing and announces nothing", async () => {
    events.length = 0;
    const before = (await t.db.select().from(auditLog)).length;
    await expect(publishAfterCommit(deleteSubscriber(t.db, null, { subscriberId: "00000000-0000-4000-8000-000000000000" }))).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
    expect((await t.db.select().from(auditLog)).length).toBe(before);
    expect(events).toEqual([]);
  });
});
