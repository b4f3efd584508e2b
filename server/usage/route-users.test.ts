import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { clusters, subscribers } from "@/db/schema";
import { mayConnect } from "./access";
import { countRouteUsers } from "./route-users";

describe.each(testDbKinds())("route users on %s", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  let otherId: string;
  const now = new Date("2026-06-01T12:00:00Z");
  const rows = [
    { name: "plain", enabled: true, expiresAt: null, trafficLimitBytes: null, trafficUsedBytes: 0 },
    { name: "disabled", enabled: false, expiresAt: null, trafficLimitBytes: null, trafficUsedBytes: 0 },
    { name: "expired", enabled: true, expiresAt: new Date("2026-06-01T11:59:59Z"), trafficLimitBytes: null, trafficUsedBytes: 0 },
    { name: "expires now", enabled: true, expiresAt: now, trafficLimitBytes: null, trafficUsedBytes: 0 },
    { name: "not yet expired", enabled: true, expiresAt: new Date("2026-06-02T00:00:00Z"), trafficLimitBytes: null, trafficUsedBytes: 0 },
    { name: "at limit", enabled: true, expiresAt: null, trafficLimitBytes: 100, trafficUsedBytes: 100 },
    { name: "under limit", enabled: true, expiresAt: null, trafficLimitBytes: 100, trafficUsedBytes: 99 },
  ];

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    const made = await t.db.insert(clusters).values([{ name: "a" }, { name: "b" }]).returning({ id: clusters.id });
    [clusterId, otherId] = [made[0]!.id, made[1]!.id];
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it("is 0 for a cluster without subscribers", async () => {
    expect(await countRouteUsers(t.db, clusterId, now)).toBe(0);
  });

  it("counts exactly the subscribers who may connect, in this cluster only", async () => {
    await t.db.insert(subscribers).values(rows.map((r, i) => ({ ...r, trafficUpBytes: r.trafficUsedBytes, clusterId, token: `tok-${kind}-${i}` })));
    await t.db.insert(subscribers).values({ clusterId: otherId, name: "elsewhere", token: `tok-${kind}-other` });
    const expected = rows.filter((r) => mayConnect(r, now.getTime())).length;
    expect(expected).toBe(3);
    expect(await countRouteUsers(t.db, clusterId, now)).toBe(expected);
    expect(await countRouteUsers(t.db, otherId, now)).toBe(1);
  });
});
