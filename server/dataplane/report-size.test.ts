import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTestDatabase, type TestDatabase } from "@/db/testing";
import type { Db } from "@/db/client";
import { subscribers } from "@/db/schema";
import { adminAndViewer, type Caller } from "@/server/api/testing";
import { publishChange } from "@/server/bus";
import { reportLimits, reportLimitsFor } from "./report-size";

const TTL_MS = 10_000;

describe("report size bound: the cluster's subscriber count", () => {
  let t: TestDatabase;
  let admin: Caller;
  let counts = 0;
  /** The test database, counting the queries reportLimitsFor makes (each is one count). */
  let db: Db;

  beforeAll(async () => {
    t = await openTestDatabase("pglite");
    ({ admin } = await adminAndViewer(t.db));
    db = new Proxy(t.db, {
      get(target, key, receiver) {
        if (key === "select") counts++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
  });
  afterAll(async () => {
    await t?.dispose();
  });

  async function clusterWith(n: number): Promise<string> {
    const clusterId = (await admin.clusters.create({ name: `report-size-${Math.random().toString(36).slice(2, 8)}` })).id;
    for (let k = 0; k < n; k++) await admin.subscribers.create({ clusterId, name: `s${k}` });
    return clusterId;
  }

  /** A subscriber added behind the bus's back: only a count sees it. */
  async function addUnannounced(clusterId: string): Promise<void> {
    const k = Math.random().toString(36).slice(2, 10);
    await t.db.insert(subscribers).values({ clusterId, name: `quiet-${k}`, token: `quiet-token-${k}` });
  }

  it("reports arriving together share one count", async () => {
    const clusterId = await clusterWith(3);
    counts = 0;
    const now = Date.now();
    const all = await Promise.all(Array.from({ length: 20 }, () => reportLimitsFor(db, clusterId, now)));
    expect(counts).toBe(1);
    for (const limits of all) expect(limits).toEqual(reportLimits(3));
    // Within the TTL: no count at all.
    expect(await reportLimitsFor(db, clusterId, now + TTL_MS - 1)).toEqual(reportLimits(3));
    expect(counts).toBe(1);
  });

  it("each cluster has its own count: a server of a small cluster never gets a large cluster's bound", async () => {
    const [small, large] = [await clusterWith(1), await clusterWith(4)];
    const now = Date.now();
    const [a, b] = await Promise.all([reportLimitsFor(db, small, now), reportLimitsFor(db, large, now)]);
    expect(a).toEqual(reportLimits(1));
    expect(b).toEqual(reportLimits(4));
    // A change in the large cluster moves only its own count.
    publishChange("subscribers", large, ["00000000-0000-4000-8000-000000000003"]);
    expect(await reportLimitsFor(db, small, now + 1)).toEqual(reportLimits(1));
    expect(await reportLimitsFor(db, large, now + 1)).toEqual(reportLimits(5));
  });

  it("past the TTL the count before answers at once while one new count runs, and the next answer has it", async () => {
    const clusterId = await clusterWith(2);
    const now = Date.now();
    await reportLimitsFor(db, clusterId, now);
    await addUnannounced(clusterId);
    counts = 0;
    const later = now + TTL_MS + 1;
    const during = await Promise.all(Array.from({ length: 10 }, () => reportLimitsFor(db, clusterId, later)));
    for (const limits of during) expect(limits).toEqual(reportLimits(2));
    expect(counts).toBe(1);
    await expect.poll(() => reportLimitsFor(db, clusterId, later + 1)).toEqual(reportLimits(3));
    expect(counts).toBe(1);
  });

  it("a change that names its subscribers raises the count; one that names none drops it, and a count running then is not kept", async () => {
    const clusterId = await clusterWith(1);
    const now = Date.now();
    await reportLimitsFor(db, clusterId, now);
    publishChange("subscribers", clusterId, ["00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"]);
    counts = 0;
    expect(await reportLimitsFor(db, clusterId, now + 1)).toEqual(reportLimits(3));
    expect(counts).toBe(0);

    publishChange("subscribers", clusterId);
    const running = reportLimitsFor(db, clusterId, now + 2);
    // Dropped again while that count runs: its figure may predate the change.
    publishChange("subscribers", clusterId);
    await addUnannounced(clusterId);
    expect(await running).toEqual(reportLimits(1));
    expect(await reportLimitsFor(db, clusterId, now + 3)).toEqual(reportLimits(2));
    expect(counts).toBe(2);
  });
});
