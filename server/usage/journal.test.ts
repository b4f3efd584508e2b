/**
 * The traffic journal: a batch's per-user traffic is one journal row written with the agents'
 * seq; folds add it to subscribers' totals and to subscriber_traffic exactly once.
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq, sql } from "drizzle-orm";
import { openDatabase, type Database } from "@/db/client";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { pgliteTemplateDir } from "@/db/pglite-template";
import { subscriberTraffic, subscribers, trafficJournal } from "@/db/schema";
import { adminAndViewer } from "@/server/api/testing";
import { onChange, type ChangeEvent } from "@/server/bus";
import { ReportBatcher } from "@/server/dataplane/report-batcher";
import { TrafficFoldJob } from "./fold-job";
import type { Db } from "@/db/client";
import { applyReports, type ReportToApply } from "@/server/dataplane/reports";
import { foldSubscriberChanges, foldTrafficDays, foldTrafficJournal, foldTrafficTotals } from "./journal";
import { MAX_NAMED_SUBSCRIBERS } from "@/server/changes";
import { agentReport as report } from "@/server/monitoring/testing";


const admins = new WeakMap<object, Awaited<ReturnType<typeof adminAndViewer>>["admin"]>();
async function fleet(db: Db, name: string, servers: number, limitGb: number | null = null) {
  if (!admins.has(db)) admins.set(db, (await adminAndViewer(db)).admin);
  const admin = admins.get(db)!;
  const clusterId = (await admin.clusters.create({ name })).id;
  const ids: string[] = [];
  for (let i = 0; i < servers; i++) {
    ids.push((await admin.servers.create({ clusterId, name: `${name}-s${i}`, address: `10.1.0.${i + 1}`, role: "node", coefficient: 1, capacityMbps: null })).id);
  }
  const sub = await admin.subscribers.create({ clusterId, name: `${name}-u`, expiresAt: null, trafficLimitGb: limitGb });
  const other = await admin.subscribers.create({ clusterId, name: `${name}-v`, expiresAt: null, trafficLimitGb: null });
  return { clusterId, servers: ids, sub: sub.id, other: other.id };
}

const totals = async (db: Db, id: string) => {
  const [s] = await db.select().from(subscribers).where(eq(subscribers.id, id));
  return { up: s!.trafficUpBytes, down: s!.trafficDownBytes, used: s!.trafficUsedBytes, seen: s!.lastSeenAt };
};
const days = (db: Db, id: string) =>
  db.select({ serverId: subscriberTraffic.serverId, up: subscriberTraffic.upBytes, down: subscriberTraffic.downBytes }).from(subscriberTraffic).where(eq(subscriberTraffic.subscriberId, id));

describe.each(testDbKinds())("traffic journal (%s)", (kind) => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await openTestDatabase(kind);
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it("one subscriber across many reports and servers in one batch: one journal row, summed per subscriber and per server", async () => {
    const f = await fleet(t.db, "agg", 3);
    const now = Date.now();
    const items: ReportToApply[] = [];
    for (let s = 0; s < 3; s++) {
      for (let seq = 1; seq <= 4; seq++) {
        items.push({
          server: { serverId: f.servers[s]!, clusterId: f.clusterId },
          nowMs: now,
          report: report({ instance: `agg-agent-${s}`, seq, users: [{ email: f.sub, up: s + 1, down: 10 }, { email: f.other, up: 1, down: 0 }] }),
        });
      }
    }
    await t.db.transaction((tx) => applyReports(tx, items));
    const rows = await t.db.select().from(trafficJournal);
    expect(rows).toHaveLength(1);
    // One element per distinct subscriber, one entry per (subscriber, server, day).
    expect([...rows[0]!.subIds].sort()).toEqual([f.sub, f.other].sort());
    expect(rows[0]!.entSub.filter((s) => s === f.sub)).toHaveLength(3);
    const at = rows[0]!.subIds.indexOf(f.sub);
    expect([rows[0]!.subUp[at], rows[0]!.subDown[at]]).toEqual([4 * (1 + 2 + 3), 12 * 10]);

    // Nothing moves before the fold; the totals fold, then the per-day fold.
    expect(await totals(t.db, f.sub)).toMatchObject({ up: 0, down: 0, seen: null });
    expect(await foldTrafficTotals(t.db)).toMatchObject({ folded: 1, movedClusters: [f.clusterId], crossedClusters: [] });
    expect(await totals(t.db, f.sub)).toMatchObject({ up: 24, down: 120, used: 144 });
    expect((await totals(t.db, f.sub)).seen).not.toBeNull();
    expect(await days(t.db, f.sub)).toEqual([]);
    expect(await foldTrafficDays(t.db)).toBe(1);
    const perServer = (await days(t.db, f.sub)).sort((a, b) => a.up - b.up);
    expect(perServer).toEqual(f.servers.map((serverId, s) => ({ serverId, up: 4 * (s + 1), down: 40 })));
    // Applied once: folding again changes nothing.
    expect(await foldTrafficJournal(t.db)).toMatchObject({ folded: 0, daysFolded: 0 });
    expect(await totals(t.db, f.sub)).toMatchObject({ up: 24, down: 120 });
  });

  it("a limit crossed inside a fold: the fold names the cluster and publishes 'subscribers'", async () => {
    const f = await fleet(t.db, "lim", 2, 0.000001); // 1,074 bytes
    const now = Date.now();
    // Two batches, each under the limit; together over it.
    for (const s of [0, 1]) {
      await t.db.transaction((tx) =>
        applyReports(tx, [{ server: { serverId: f.servers[s]!, clusterId: f.clusterId }, nowMs: now, report: report({ instance: `lim-agent-${s}`, seq: 1, users: [{ email: f.sub, up: 0, down: 600 }] }) }]),
      );
    }
    const events: ChangeEvent[] = [];
    const off = onChange((e) => events.push(e));
    const folds = new TrafficFoldJob(async () => t.db);
    try {
      await folds.fold();
    } finally {
      off();
    }
    expect(await totals(t.db, f.sub)).toMatchObject({ down: 1200 });
    expect(events.filter((e) => e.clusterId === f.clusterId).map((e) => e.kind).sort()).toEqual(["subscribers", "traffic"]);
    // The change names who crossed: listeners re-read that row, not a million.
    expect(events.find((e) => e.kind === "subscribers")?.subscriberIds).toEqual([f.sub]);
    // Already over: more traffic is counted, but the limit is not "crossed" again.
    await t.db.transaction((tx) =>
      applyReports(tx, [{ server: { serverId: f.servers[0]!, clusterId: f.clusterId }, nowMs: now, report: report({ instance: "lim-agent-0", seq: 2, users: [{ email: f.sub, up: 1, down: 0 }] }) }]),
    );
    expect(await foldTrafficTotals(t.db)).toMatchObject({ folded: 1, crossedClusters: [] });
  });

  it("a fold's subscriber changes name at most MAX_NAMED_SUBSCRIBERS per cluster, else none", () => {
    const many = Array.from({ length: MAX_NAMED_SUBSCRIBERS + 1 }, (_, k) => `s${k}`);
    const changes = foldSubscriberChanges({
      folded: 2,
      movedClusters: ["a", "b", "c"],
      crossedClusters: ["a", "b"],
      startedClusters: ["b", "c"],
      changedSubscribers: new Map([
        ["a", ["s1"]],
        ["b", many],
        ["c", ["s2", "s3"]],
      ]),
    });
    expect(changes).toEqual([
      { kind: "subscribers", clusterId: "a", subscriberIds: ["s1"] },
      { kind: "subscribers", clusterId: "b" },
      { kind: "subscribers", clusterId: "c", subscriberIds: ["s2", "s3"] },
    ]);
  });

  it("fold lag (/metrics): -1 before the first totals fold, then the time since the last fold that caught up started", async () => {
    let clock = 1_000_000;
    const folds = new TrafficFoldJob(async () => t.db, () => clock);
    expect(folds.totalsLagS()).toBe(-1);
    await folds.foldTotals();
    clock += 2500;
    expect(folds.totalsLagS()).toBe(2.5);
  });

  it("two writers (PostgreSQL's setting): every report of a server stored once, in order, none taken for a duplicate", async () => {
    const f = await fleet(t.db, "two", 3);
    const batcher = new ReportBatcher(async () => t.db);
    batcher.start("postgres");
    try {
      const sent: Array<Promise<{ httpStatus: number; body: unknown }>> = [];
      for (let seq = 1; seq <= 100; seq++) {
        for (let s = 0; s < 3; s++) {
          sent.push(
            batcher.submit(
              { serverId: f.servers[s]!, clusterId: f.clusterId },
              report({ instance: `two-agent-${s}`, seq, users: [{ email: f.sub, up: 1, down: 2 }] }),
            ),
          );
        }
      }
      const out = await Promise.all(sent);
      expect(out.filter((o) => o.httpStatus !== 200 || (o.body as { duplicate?: boolean }).duplicate)).toEqual([]);
      expect(batcher.batches).toBeGreaterThan(1);
    } finally {
      await batcher.stop();
    }
    expect(await totals(t.db, f.sub)).toMatchObject({ up: 300, down: 600 });
  });

  it("a fold that fails applies nothing and marks nothing: the next one applies it once", async () => {
    const f = await fleet(t.db, "fail", 1);
    const item = { server: { serverId: f.servers[0]!, clusterId: f.clusterId }, nowMs: Date.now(), report: report({ instance: "fail-agent", seq: 1, users: [{ email: f.sub, up: 7, down: 8 }] }) };
    await t.db.transaction((tx) => applyReports(tx, [item]));
    // The fold's statement runs, then its transaction is rolled back (a crash before commit).
    await expect(
      t.db.transaction(async (tx) => {
        await foldTrafficTotals(tx as unknown as Db);
        throw new Error("crash");
      }),
    ).rejects.toThrow("crash");
    expect(await totals(t.db, f.sub)).toMatchObject({ up: 0, down: 0 });
    await foldTrafficJournal(t.db);
    expect(await totals(t.db, f.sub)).toMatchObject({ up: 7, down: 8 });
    expect(await days(t.db, f.sub)).toEqual([{ serverId: f.servers[0]!, up: 7, down: 8 }]);
  });
});

describe("traffic journal across a restart (pglite)", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rb-journal-"));
  let database: Database | undefined;
  afterAll(async () => {
    await database?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a journal written but not folded is folded after a restart, exactly once", async () => {
    // From the run's migrated copy: an initdb and every migration here cost a busy machine most of a minute.
    const template = pgliteTemplateDir("migrated");
    if (template) cpSync(template, dir, { recursive: true });
    database = await openDatabase({ dataDir: dir });
    const f = await fleet(database.db, "restart", 2);
    const items = [0, 1].map((s) => ({
      server: { serverId: f.servers[s]!, clusterId: f.clusterId },
      nowMs: Date.now(),
      report: report({ instance: `restart-agent-${s}`, seq: 1, users: [{ email: f.sub, up: 100, down: 200 }] }),
    }));
    // Acknowledged (committed with the seq), then the process dies before any fold.
    await database.db.transaction((tx) => applyReports(tx, items));
    await database.close();

    database = await openDatabase({ dataDir: dir });
    const db = database.db;
    expect(await db.select({ n: sql<number>`count(*)::int` }).from(trafficJournal)).toEqual([{ n: 1 }]);
    const batcher = new ReportBatcher(async () => db);
    batcher.start("pglite"); // folds what the previous run left
    await batcher.stop(); // and everything else, once more
    expect(await totals(db, f.sub)).toMatchObject({ up: 200, down: 400, used: 600 });
    expect((await days(db, f.sub)).sort((a, b) => (a.serverId < b.serverId ? -1 : 1))).toEqual(
      [...f.servers].sort().map((serverId) => ({ serverId, up: 100, down: 200 })),
    );
    expect(await db.select().from(trafficJournal)).toEqual([]);
    // The same reports sent again after the restart are duplicates: nothing more is counted.
    const again = await db.transaction((tx) => applyReports(tx, items));
    expect(again.map((a) => a.duplicate)).toEqual([true, true]);
    await foldTrafficJournal(db);
    expect(await totals(db, f.sub)).toMatchObject({ up: 200, down: 400 });
  });
});
