/** Old history buckets are deleted; recent ones, and other tables, stay. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asc } from "drizzle-orm";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { clusters, serverMetricsHistory, servers } from "@/db/schema";
import { HISTORY_RETENTION_MS, pruneMetricsHistory } from "./metrics-history";

const NOW = Date.UTC(2030, 0, 10, 12);
const HOUR = 60 * 60 * 1000;

describe.each(testDbKinds())("pruneMetricsHistory (%s)", (kind) => {
  let t: TestDatabase;
  let serverId: string;
  beforeAll(async () => {
    t = await openTestDatabase(kind);
    const [c] = await t.db.insert(clusters).values({ name: "prune" }).returning();
    const [s] = await t.db.insert(servers).values({ clusterId: c!.id, name: "p-1", address: "127.0.0.1", agentTokenHash: "prune-h" }).returning();
    serverId = s!.id;
  });
  afterAll(async () => {
    await t?.dispose();
  });

  const bucket = (ms: number) => ({ serverId, bucketStart: new Date(ms), samples: 1, usersOnlineAvg: 1, trafficBpsMax: 1, trafficBpsAvg: 1, cpuAvg: 1 });

  it("deletes buckets older than the retention, keeps the one at its edge and newer ones", async () => {
    await t.db.insert(serverMetricsHistory).values([bucket(NOW - HISTORY_RETENTION_MS - HOUR), bucket(NOW - HISTORY_RETENTION_MS), bucket(NOW - HOUR), bucket(NOW)]);
    expect(await pruneMetricsHistory(t.db, NOW)).toBe(1);
    const left = await t.db.select({ at: serverMetricsHistory.bucketStart }).from(serverMetricsHistory).orderBy(asc(serverMetricsHistory.bucketStart));
    expect(left.map((r) => r.at.getTime())).toEqual([NOW - HISTORY_RETENTION_MS, NOW - HOUR, NOW]);
  });

  it("deletes nothing when nothing is old, and nothing recent when the clock went backwards", async () => {
    expect(await pruneMetricsHistory(t.db, NOW)).toBe(0);
    expect(await pruneMetricsHistory(t.db, NOW - 30 * 24 * HOUR)).toBe(0);
    expect(await t.db.$count(serverMetricsHistory)).toBe(3);
  });
});
