/**
 * Issue 21 ("Trust boundaries"), points 2 and 3: an agent token speaks only for its own
 * server. One row per user per report; per-user bytes bounded by the server's report capacity
 * (400 + server.report_implausible, at most once per interval); folds that never overflow and
 * never wedge (a bad batch is quarantined, everyone else's traffic is still counted); usage
 * kept per server, and an owner can discard what one server reported.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, eq, sql } from "drizzle-orm";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { alertEvents, auditLog, operators, serverMetrics, servers, subscriberTraffic, subscribers, trafficJournal, trafficQuarantine } from "@/db/schema";
import type { Db } from "@/db/client";
import { adminAndViewer, failure, operatorContext } from "@/server/api/testing";
import { buildClusterConfigs } from "@/server/dataplane/config";
import { applyReports, parseReport, reportByteBound, reportOutcome, type ReportToApply } from "@/server/dataplane/reports";
import { BYTES_CAP, foldTrafficJournal, utcDay } from "@/server/usage/journal";
import { agentReport as report } from "./testing";

const GiB = 1024 ** 3;
const BIGINT_MAX = 9_223_372_036_854_775_807n;

describe.each(testDbKinds())("agent report trust boundaries (%s)", (kind) => {
  let t: TestDatabase;
  let admin: Awaited<ReturnType<typeof adminAndViewer>>["admin"];
  let viewer: Awaited<ReturnType<typeof adminAndViewer>>["viewer"];
  let owner: typeof admin;

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    ({ admin, viewer } = await adminAndViewer(t.db));
    const { createCaller } = await import("@/server/api/root");
    const [o] = await t.db.insert(operators).values({ username: "olga", passwordHash: "x", role: "owner" }).returning();
    owner = createCaller(operatorContext(t.db, o!.id, "olga", "owner"));
  });
  afterAll(async () => {
    await t?.dispose();
  });

  async function fleet(name: string, limitGb: number | null = null) {
    const clusterId = (await admin.clusters.create({ name })).id;
    await admin.monitoring.setReportInterval({ clusterId, seconds: 60 });
    const a = await admin.servers.create({ clusterId, name: `${name}-a`, address: "10.2.0.1", role: "node", coefficient: 1, capacityMbps: null });
    const b = await admin.servers.create({ clusterId, name: `${name}-b`, address: "10.2.0.2", role: "node", coefficient: 1, capacityMbps: null });
    const dave = await admin.subscribers.create({ clusterId, name: `${name}-dave`, expiresAt: null, trafficLimitGb: limitGb });
    const erin = await admin.subscribers.create({ clusterId, name: `${name}-erin`, expiresAt: null, trafficLimitGb: null });
    return { clusterId, a: { serverId: a.id, clusterId }, b: { serverId: b.id, clusterId }, dave: dave.id, erin: erin.id };
  }
  const usage = async (db: Db, id: string) => {
    const [s] = await db.select().from(subscribers).where(eq(subscribers.id, id));
    return { up: s!.trafficUpBytes, down: s!.trafficDownBytes, used: s!.trafficUsedBytes };
  };
  const implausibleAlerts = async (serverId: string) =>
    (await t.db.select().from(alertEvents).where(eq(alertEvents.type, "server.report_implausible"))).filter((e) => (e.data as { server: { id: string } }).server.id === serverId);

  it("one row per user per report: a repeated row is a 400 naming it", () => {
    const body = JSON.stringify(
      report({
        instance: "dup-agent",
        seq: 1,
        users: [
          { email: "8a6e0804-2bd0-4672-b79d-d97027f9071a", up: 1, down: 1 },
          { email: "0b9ef3b2-1c36-4a4e-8f3c-0d1d5c1d7a30", up: 1, down: 1 },
          { email: "8A6E0804-2BD0-4672-B79D-D97027F9071A", up: 5, down: 5 },
        ],
      }),
    );
    const out = parseReport(body);
    expect(out).toEqual({ error: expect.stringMatching(/^users\[2\]\.email: duplicate of users\[0\]/) });
  });

  it("per-user bytes above what the server's report capacity moves in the interval: 400, nothing stored, one alert per interval", async () => {
    const f = await fleet("bound");
    const now = Date.now();
    // 10 Gbit/s by default; the server was created just now: about one interval (60 s) allowed.
    const bound = reportByteBound(10_000, 0, 60);
    expect(bound).toBe(75e9);
    const items: ReportToApply[] = [
      { server: f.b, nowMs: now, report: report({ instance: "bound-agent", seq: 1, users: [{ email: f.erin, up: 1, down: 1 }, { email: f.dave, up: 0, down: 200e9 }] }) },
      { server: f.a, nowMs: now, report: report({ instance: "bound-a", seq: 1, users: [{ email: f.dave, up: 10, down: 20 }] }) },
    ];
    const out = await t.db.transaction((tx) => applyReports(tx, items));
    const refused = reportOutcome(f.b, out[0]!);
    expect(refused.httpStatus).toBe(400);
    expect(refused.body).toEqual({ error: expect.stringMatching(/^users\[1\]\.down: 200000000000 bytes is more than this server's report capacity \(10000 Mbit\/s\)/) });
    // The honest report of the same batch is stored; the refused one changed nothing (no seq either).
    expect(reportOutcome(f.a, out[1]!).httpStatus).toBe(200);
    await foldTrafficJournal(t.db);
    expect(await usage(t.db, f.dave)).toEqual({ up: 10, down: 20, used: 30 });
    expect(await usage(t.db, f.erin)).toEqual({ up: 0, down: 0, used: 0 });
    expect(await implausibleAlerts(f.b.serverId)).toHaveLength(1);
    // Again within the interval: refused again, no second alert.
    const again = await t.db.transaction((tx) =>
      applyReports(tx, [{ server: f.b, nowMs: now + 1000, report: report({ instance: "bound-agent", seq: 1, users: [{ email: f.dave, up: 100e9, down: 0 }] }) }]),
    );
    expect(again[0]!.refused).toMatch(/^users\[0\]\.up:/);
    expect(await implausibleAlerts(f.b.serverId)).toHaveLength(1);

    // A resend of a report already counted (its ack was lost) is a duplicate, not judged again.
    const resend = await t.db.transaction((tx) =>
      applyReports(tx, [{ server: f.a, nowMs: now + 1000, report: report({ instance: "bound-a", seq: 1, users: [{ email: f.dave, up: 100e9, down: 0 }] }) }]),
    );
    expect(resend[0]).toMatchObject({ duplicate: true });
    expect(resend[0]!.refused).toBeUndefined();
    expect(await implausibleAlerts(f.a.serverId)).toHaveLength(0);

    // The capacity is a per-server setting: at 100 Gbit/s the same report is plausible.
    const [row] = await t.db.select().from(servers).where(eq(servers.id, f.b.serverId));
    expect(row!.reportCapacityMbps).toBe(10_000);
    await admin.servers.update({ serverId: f.b.serverId, name: row!.name, address: row!.address, role: "node", coefficient: 1, capacityMbps: null, reportCapacityMbps: 100_000 });
    const ok = await t.db.transaction((tx) =>
      applyReports(tx, [{ server: f.b, nowMs: now + 2000, report: report({ instance: "bound-agent", seq: 1, users: [{ email: f.erin, up: 0, down: 200e9 }] }) }]),
    );
    expect(ok[0]!.refused).toBeUndefined();
    // Validated: named field, nothing changed.
    const bad = await failure(admin.servers.update({ serverId: f.b.serverId, name: row!.name, address: row!.address, role: "node", coefficient: 1, capacityMbps: null, reportCapacityMbps: 0 }));
    expect(bad.fieldErrors.reportCapacityMbps).toMatch(/between 1 and 10,000,000/);
  });

  it("a rate above the server's report capacity is stored as the capacity (no learned peak beyond the link), its users' traffic counted, one alert", async () => {
    const f = await fleet("rate");
    const now = Date.now();
    const items: ReportToApply[] = [
      // 10 Gbit/s by default: 20 Gbit/s of downlink is more than the link carries.
      { server: f.b, nowMs: now, report: report({ instance: "rate-b", seq: 1, usersOnline: 3, rxBps: 1e6, txBps: 2e10, users: [{ email: f.erin, up: 1, down: 1 }] }) },
      { server: f.a, nowMs: now, report: report({ instance: "rate-a", seq: 1, rxBps: 5e6, txBps: 5e6, users: [{ email: f.dave, up: 10, down: 20 }] }) },
    ];
    const out = await t.db.transaction((tx) => applyReports(tx, items));
    expect(reportOutcome(f.b, out[0]!).httpStatus).toBe(200);
    expect(reportOutcome(f.a, out[1]!).httpStatus).toBe(200);
    const metric = async (serverId: string) => (await t.db.select().from(serverMetrics).where(eq(serverMetrics.serverId, serverId)))[0]!;
    const b = await metric(f.b.serverId);
    expect([b.rxBps, b.txBps, b.peakBps]).toEqual([1e6, 1e10, 1e10]);
    expect((await metric(f.a.serverId)).txBps).toBe(5e6);
    await foldTrafficJournal(t.db);
    expect(await usage(t.db, f.erin)).toEqual({ up: 1, down: 1, used: 2 });
    expect(await usage(t.db, f.dave)).toEqual({ up: 10, down: 20, used: 30 });
    const alerts = await implausibleAlerts(f.b.serverId);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.data).toMatchObject({ field: "txBps", rateBps: 2e10, capacityMbps: 10_000 });
    // rxBps the same way, at most one alert per interval; at the capacity itself nothing is capped.
    await t.db.transaction((tx) => applyReports(tx, [{ server: f.b, nowMs: now + 1000, report: report({ rxBps: 1e14, txBps: 0 }) }]));
    expect((await metric(f.b.serverId)).rxBps).toBe(1e10);
    await t.db.transaction((tx) => applyReports(tx, [{ server: f.b, nowMs: now + 2000, report: report({ rxBps: 1e10, txBps: 3e9 }) }]));
    expect([(await metric(f.b.serverId)).rxBps, (await metric(f.b.serverId)).txBps]).toEqual([1e10, 3e9]);
    expect(await implausibleAlerts(f.b.serverId)).toHaveLength(1);
  });

  it("sums past the bigint range are clamped: the fold never fails, and other servers' and clusters' traffic is counted", async () => {
    const f = await fleet("overflow");
    const g = await fleet("overflow-other");
    const day = utcDay(Date.now());
    const huge = (BIGINT_MAX - 10n).toString();
    // What two forged reports journalled before this change (each sum within bigint, the total not).
    for (let k = 0; k < 2; k++) {
      await t.db.execute(sql`
        insert into ${trafficJournal} (sub_ids, sub_up, sub_down, seen_at, ent_sub, ent_srv, ent_day, ent_up, ent_down)
        values (array[${f.dave}]::uuid[], array[${huge}]::bigint[], array[0]::bigint[], now(), array[${f.dave}]::uuid[], array[${f.b.serverId}]::uuid[], array[${day}]::date[], array[${huge}]::bigint[], array[0]::bigint[])`);
    }
    await t.db.transaction((tx) =>
      applyReports(tx, [{ server: g.a, nowMs: Date.now(), report: report({ instance: "overflow-honest", seq: 1, users: [{ email: g.erin, up: 7, down: 8 }] }) }]),
    );
    await foldTrafficJournal(t.db);
    expect(await t.db.select().from(trafficJournal)).toEqual([]);
    const d = await usage(t.db, f.dave);
    expect(BigInt(d.up)).toBe(BigInt(Number(BYTES_CAP)));
    expect(await usage(t.db, g.erin)).toEqual({ up: 7, down: 8, used: 15 });
    const [st] = await t.db.select({ up: sql<string>`${subscriberTraffic.upBytes}::text` }).from(subscriberTraffic).where(eq(subscriberTraffic.subscriberId, f.dave));
    expect(st!.up).toBe(BYTES_CAP.toString());
  });

  it("a batch that cannot be folded is quarantined with its server and reason, shown on the health page; everyone else's traffic is counted", async () => {
    const f = await fleet("quarantine");
    const g = await fleet("quarantine-other");
    const day = utcDay(Date.now());
    // One batch of two servers: A's part is honest, B's is corrupt (a negative count: no path
    // of today's code writes one, but whatever makes a row fail must not stop the others).
    await t.db.execute(sql`
      insert into ${trafficJournal} (sub_ids, sub_up, sub_down, seen_at, ent_sub, ent_srv, ent_day, ent_up, ent_down)
      values (array[${f.erin}, ${f.dave}]::uuid[], array[100, -5]::bigint[], array[0, 0]::bigint[], now(),
        array[${f.erin}, ${f.dave}]::uuid[], array[${f.a.serverId}, ${f.b.serverId}]::uuid[], array[${day}, ${day}]::date[], array[100, -5]::bigint[], array[0, 0]::bigint[])`);
    // Another cluster's traffic, journalled after it.
    await t.db.transaction((tx) =>
      applyReports(tx, [{ server: g.b, nowMs: Date.now(), report: report({ instance: "quarantine-honest", seq: 1, users: [{ email: g.dave, up: 3, down: 4 }] }) }]),
    );
    await foldTrafficJournal(t.db);
    expect(await foldTrafficJournal(t.db)).toMatchObject({ folded: 0, daysFolded: 0 });
    expect(await t.db.select().from(trafficJournal)).toEqual([]);
    expect(await usage(t.db, f.erin)).toEqual({ up: 100, down: 0, used: 100 });
    expect(await usage(t.db, f.dave)).toEqual({ up: 0, down: 0, used: 0 });
    expect(await usage(t.db, g.dave)).toEqual({ up: 3, down: 4, used: 7 });
    const q = await t.db.select().from(trafficQuarantine).where(eq(trafficQuarantine.clusterId, f.clusterId));
    expect(q).toEqual([expect.objectContaining({ serverId: f.b.serverId, stage: "totals", subIds: [f.dave], reason: expect.stringMatching(/subscribers_traffic_non_negative|check constraint/) })]);
    const health = await viewer.monitoring.health({ clusterId: f.clusterId });
    expect(health.quarantine).toEqual([expect.objectContaining({ server: "quarantine-b", stage: "totals", reason: q[0]!.reason })]);
    expect((await viewer.monitoring.health({ clusterId: g.clusterId })).quarantine).toEqual([]);
  });

  it("usage is kept per server; the owner discards what one server reported over a period, which gives it back and re-enables the subscriber", async () => {
    const f = await fleet("discard", 5);
    const now = Date.now();
    const today = utcDay(now);
    const tomorrow = utcDay(now + 86_400_000);
    await t.db.transaction((tx) =>
      applyReports(tx, [
        { server: f.a, nowMs: now, report: report({ instance: "discard-a", seq: 1, users: [{ email: f.dave, up: 0, down: 1 * GiB }, { email: f.erin, up: 10, down: 10 }] }) },
        // Server B served nothing to dave; it reports 6 GiB for him (within its capacity bound).
        { server: f.b, nowMs: now, report: report({ instance: "discard-b", seq: 1, users: [{ email: f.dave, up: 0, down: 6 * GiB }, { email: f.erin, up: 1, down: 1 }] }) },
      ]),
    );
    await foldTrafficJournal(t.db);
    expect(await usage(t.db, f.dave)).toMatchObject({ used: 7 * GiB });
    const allowed = async () => (await buildClusterConfigs(t.db, f.clusterId)).users.map((u) => u.email);
    expect(await allowed()).not.toContain(f.dave);

    // Who reported what: per server, for operators.
    const perServer = await viewer.subscribers.usageByServer({ subscriberId: f.dave });
    expect(perServer.map((u) => [u.server, u.downBytes, u.periodDownBytes])).toEqual([
      ["discard-a", 1 * GiB, 1 * GiB],
      ["discard-b", 6 * GiB, 6 * GiB],
    ]);
    const cluster = await viewer.monitoring.usageByServer({ clusterId: f.clusterId, from: today, to: tomorrow });
    expect(cluster.map((u) => [u.server, u.subscribers, u.upBytes + u.downBytes])).toEqual([
      ["discard-a", 2, 1 * GiB + 20],
      ["discard-b", 2, 6 * GiB + 2],
    ]);

    // Owner only; bad input names the field and changes nothing.
    const input = { clusterId: f.clusterId, serverId: f.b.serverId, from: today, to: tomorrow };
    expect((await failure(admin.monitoring.discardReportedUsage(input))).code).toBe("FORBIDDEN");
    expect((await failure(viewer.monitoring.discardReportedUsage(input))).code).toBe("FORBIDDEN");
    expect((await failure(owner.monitoring.discardReportedUsage({ ...input, to: today }))).fieldErrors.to).toMatch(/after from/);
    expect((await failure(owner.monitoring.discardReportedUsage({ ...input, from: "2026-02-30" }))).fieldErrors.from).toMatch(/not a day/);
    const g = await fleet("discard-elsewhere");
    expect((await failure(owner.monitoring.discardReportedUsage({ ...input, serverId: g.a.serverId }))).message).toMatch(/serverId: no such server in this cluster/);
    expect(await usage(t.db, f.dave)).toMatchObject({ used: 7 * GiB });

    const out = await owner.monitoring.discardReportedUsage(input);
    expect(out).toEqual({ subscribers: 2, upBytes: 1, downBytes: 6 * GiB + 1, givenBackBytes: 6 * GiB + 2, reenabled: 1 });
    expect(await usage(t.db, f.dave)).toEqual({ up: 0, down: 1 * GiB, used: 1 * GiB });
    expect(await usage(t.db, f.erin)).toEqual({ up: 10, down: 10, used: 20 });
    expect(await allowed()).toContain(f.dave);
    expect((await viewer.subscribers.usageByServer({ subscriberId: f.dave })).map((u) => u.server)).toEqual(["discard-a"]);
    const [entry] = await t.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.action, "server.discard-usage"), eq(auditLog.entityId, f.b.serverId)));
    expect(entry).toMatchObject({ operatorName: "olga", clusterId: f.clusterId, summary: expect.stringContaining("discard-b") });
  });
});
