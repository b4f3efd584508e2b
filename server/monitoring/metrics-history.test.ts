import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { clusters, serverMetricsHistory, servers } from "@/db/schema";
import { clusterMetricsHistory, historyStepMs, HISTORY_MAX_POINTS, HISTORY_WINDOW_MS } from "./metrics-history";

const BUCKET = 5 * 60 * 1000;
const NOW = new Date(Math.floor(Date.UTC(2030, 5, 1, 12) / BUCKET) * BUCKET + 90_000);
const bucketAgo = (n: number) => new Date(Math.floor(NOW.getTime() / BUCKET) * BUCKET - n * BUCKET);

describe("historyStepMs", () => {
  it("is the stored bucket when the window fits, a whole number of buckets otherwise", () => {
    expect(historyStepMs(HISTORY_WINDOW_MS, HISTORY_MAX_POINTS)).toBe(BUCKET);
    expect(historyStepMs(HISTORY_WINDOW_MS, 100)).toBe(3 * BUCKET);
    expect(historyStepMs(HISTORY_WINDOW_MS, 1)).toBe(HISTORY_WINDOW_MS);
    expect(historyStepMs(60_000, 288)).toBe(BUCKET);
  });
});

describe.each(testDbKinds())("clusterMetricsHistory (%s)", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  let otherClusterId: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    const [c, o] = await t.db.insert(clusters).values([{ name: "hist" }, { name: "other" }]).returning();
    clusterId = c!.id;
    otherClusterId = o!.id;
    for (const [name, cid] of [
      ["b-busy", clusterId],
      ["a-empty", clusterId],
      ["c-gappy", clusterId],
      ["elsewhere", otherClusterId],
    ] as const) {
      const [s] = await t.db.insert(servers).values({ clusterId: cid, name, address: "127.0.0.1", agentTokenHash: `h-${name}` }).returning();
      ids[name] = s!.id;
    }
    const row = (serverId: string, bucketStart: Date, v: number, samples = 1) => ({
      serverId,
      bucketStart,
      samples,
      usersOnlineAvg: v,
      trafficBpsMax: v * 10,
      trafficBpsAvg: v * 5,
      rxBpsAvg: v * 4,
      txBpsAvg: v * 2,
      cpuAvg: 1,
    });
    // b-busy: every bucket of the last 24 h, plus a day-old one and one in the future.
    await t.db.insert(serverMetricsHistory).values([
      ...Array.from({ length: 288 }, (_, i) => row(ids["b-busy"]!, bucketAgo(i), i)),
      row(ids["b-busy"]!, bucketAgo(288), 9999),
      row(ids["b-busy"]!, bucketAgo(600), 9999),
      row(ids["b-busy"]!, bucketAgo(-3), 9999),
    ]);
    // c-gappy: an hour ago and now, nothing in between.
    await t.db.insert(serverMetricsHistory).values([row(ids["c-gappy"]!, bucketAgo(12), 3, 2), row(ids["c-gappy"]!, bucketAgo(0), 7, 3)]);
    await t.db.insert(serverMetricsHistory).values([row(ids["elsewhere"]!, bucketAgo(0), 1)]);
  });
  afterAll(async () => t?.close());

  it("an empty cluster has no servers; a server without rows has no points", async () => {
    const [e] = await t.db.insert(clusters).values({ name: "empty" }).returning();
    expect((await clusterMetricsHistory(t.db, e!.id, { now: NOW })).servers).toEqual([]);
    const h = await clusterMetricsHistory(t.db, clusterId, { now: NOW });
    expect(h.servers.map((s) => s.serverId)).toEqual([ids["a-empty"], ids["b-busy"], ids["c-gappy"]]);
    expect(h.servers[0]!.points).toEqual([]);
  });

  it("returns the last 24 h only, one point per 5-minute bucket, in time order", async () => {
    const h = await clusterMetricsHistory(t.db, clusterId, { now: NOW });
    expect(h.stepMs).toBe(BUCKET);
    expect(h.to).toBe(NOW.getTime());
    const busy = h.servers.find((s) => s.serverId === ids["b-busy"])!.points;
    expect(busy).toHaveLength(288);
    expect(busy.length).toBeLessThanOrEqual(HISTORY_MAX_POINTS);
    expect(busy.every((p) => p.usersAvg !== 9999)).toBe(true);
    expect(busy[0]!.t).toBe(bucketAgo(287).getTime());
    expect(busy.at(-1)).toEqual({ t: bucketAgo(0).getTime(), usersAvg: 0, rxBpsAvg: 0, txBpsAvg: 0, trafficBpsMax: 0 });
    expect(busy[0]!).toMatchObject({ usersAvg: 287, rxBpsAvg: 287 * 4, txBpsAvg: 287 * 2, trafficBpsMax: 2870 });
    for (let i = 1; i < busy.length; i++) expect(busy[i]!.t - busy[i - 1]!.t).toBe(BUCKET);
    expect(busy.every((p) => p.t >= h.from && p.t <= h.to)).toBe(true);
  });

  it("leaves gaps as gaps: no point is made up between two far-apart buckets", async () => {
    const h = await clusterMetricsHistory(t.db, clusterId, { now: NOW });
    const gappy = h.servers.find((s) => s.serverId === ids["c-gappy"])!.points;
    expect(gappy.map((p) => p.t)).toEqual([bucketAgo(12).getTime(), bucketAgo(0).getTime()]);
    expect(gappy.map((p) => p.usersAvg)).toEqual([3, 7]);
  });

  it("downsamples many points to at most maxPoints, averaging by sample count and keeping the peak", async () => {
    const h = await clusterMetricsHistory(t.db, clusterId, { now: NOW, maxPoints: 24 });
    expect(h.stepMs).toBe(12 * BUCKET);
    const busy = h.servers.find((s) => s.serverId === ids["b-busy"])!.points;
    expect(busy.length).toBeLessThanOrEqual(24);
    expect(busy.length).toBeGreaterThanOrEqual(23);
    for (const p of busy) expect(p.t % h.stepMs).toBe(0);
    // The newest slot holds the buckets 0..k of the current hour; its average and max follow them.
    const last = busy.at(-1)!;
    const inLast = Array.from({ length: 288 }, (_, i) => i).filter((i) => bucketAgo(i).getTime() >= last.t);
    expect(last.usersAvg).toBeCloseTo(inLast.reduce((a, b) => a + b, 0) / inLast.length, 6);
    expect(last.trafficBpsMax).toBe(Math.max(...inLast) * 10);
    const gappy = h.servers.find((s) => s.serverId === ids["c-gappy"])!.points;
    // Two buckets with 2 and 3 samples in one slot average to (3·2 + 7·3) / 5.
    if (gappy.length === 1) expect(gappy[0]!.usersAvg).toBeCloseTo((3 * 2 + 7 * 3) / 5, 6);
    else expect(gappy.map((p) => p.usersAvg)).toEqual([3, 7]);
  });

  it("never reads another cluster's servers", async () => {
    const h = await clusterMetricsHistory(t.db, otherClusterId, { now: NOW });
    expect(h.servers).toEqual([{ serverId: ids["elsewhere"], points: [expect.objectContaining({ usersAvg: 1 })] }]);
  });
});
