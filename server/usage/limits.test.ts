/**
 * Reset schedules, on hold, crossing a limit: the pure rules, then resets and the fold's hold
 * start in the database (PGlite and, with TEST_DATABASE_URL, PostgreSQL).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { auditLog, subscriberUsagePeriods, subscribers } from "@/db/schema";
import { adminAndViewer } from "@/server/api/testing";
import { applyReports } from "@/server/dataplane/reports";
import { foldTrafficJournal } from "./journal";
import { agentReport } from "@/server/monitoring/testing";
import { blockReason } from "./access";
import { refineSubscriberLimits, subscriberLimitsIssues } from "@/core/validation";
import { z } from "zod";
import {
  crossedLimit,
  daysInMonth,
  expiryMovedIntoPast,
  holdExpiry,
  isoWeekday,
  limitColumns,
  nextResetAfter,
  nextScheduledReset,
  resetAfter,
  resetDue,
  resetUsage,
  runDueResets,
  usagePeriods,
} from "./limits";
import { UsageResetJob } from "./reset-job";
import { onChange, type ChangeEvent } from "@/server/bus";

const at = (iso: string) => Date.parse(iso);
const iso = (d: Date | null) => d?.toISOString() ?? null;

describe("next reset", () => {
  it("never has none", () => {
    expect(nextResetAfter("never", null, at("2026-01-01T00:00:00Z"))).toBeNull();
  });

  it("daily: the next 00:00 UTC, strictly after", () => {
    expect(iso(nextResetAfter("daily", null, at("2026-03-10T13:45:00Z")))).toBe("2026-03-11T00:00:00.000Z");
    expect(iso(nextResetAfter("daily", null, at("2026-03-10T00:00:00Z")))).toBe("2026-03-11T00:00:00.000Z");
    expect(iso(nextResetAfter("daily", null, at("2026-12-31T23:59:59.999Z")))).toBe("2027-01-01T00:00:00.000Z");
  });

  it("weekly: 00:00 UTC of the ISO weekday (1 = Monday … 7 = Sunday)", () => {
    // 2026-11-30 is a Monday.
    expect(isoWeekday(at("2026-11-30T12:00:00Z"))).toBe(1);
    expect(isoWeekday(at("2026-12-06T12:00:00Z"))).toBe(7);
    expect(iso(nextResetAfter("weekly", 3, at("2026-11-30T12:00:00Z")))).toBe("2026-12-02T00:00:00.000Z");
    // The same weekday: next week's, never today's instant again.
    expect(iso(nextResetAfter("weekly", 1, at("2026-11-30T00:00:00Z")))).toBe("2026-12-07T00:00:00.000Z");
    expect(iso(nextResetAfter("weekly", 1, at("2026-11-30T08:00:00Z")))).toBe("2026-12-07T00:00:00.000Z");
    expect(iso(nextResetAfter("weekly", 7, at("2026-12-06T23:00:00Z")))).toBe("2026-12-13T00:00:00.000Z");
    // Across a year end.
    expect(iso(nextResetAfter("weekly", 5, at("2026-12-31T10:00:00Z")))).toBe("2027-01-01T00:00:00.000Z");
  });

  it("monthly: 00:00 UTC of the anchor day, later this month or next month", () => {
    expect(iso(nextResetAfter("monthly", 15, at("2026-03-10T00:00:00Z")))).toBe("2026-03-15T00:00:00.000Z");
    expect(iso(nextResetAfter("monthly", 15, at("2026-03-15T00:00:00Z")))).toBe("2026-04-15T00:00:00.000Z");
    expect(iso(nextResetAfter("monthly", 1, at("2026-12-05T00:00:00Z")))).toBe("2027-01-01T00:00:00.000Z");
  });

  it("monthly on day 31 (or 29, 30) resets on the last day of shorter months, and the anchor does not drift", () => {
    expect(daysInMonth(2026, 1)).toBe(28);
    expect(daysInMonth(2028, 1)).toBe(29);
    expect(daysInMonth(2100, 1)).toBe(28); // not a leap year
    expect(daysInMonth(2000, 1)).toBe(29); // a leap year
    let t = at("2026-01-31T00:00:00Z");
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) {
      const n = nextResetAfter("monthly", 31, t)!;
      seen.push(n.toISOString().slice(0, 10));
      t = n.getTime();
    }
    expect(seen).toEqual(["2026-02-28", "2026-03-31", "2026-04-30", "2026-05-31", "2026-06-30"]);
    // Leap year: 29 Feb; day 30 too.
    expect(iso(nextResetAfter("monthly", 31, at("2028-02-10T00:00:00Z")))).toBe("2028-02-29T00:00:00.000Z");
    expect(iso(nextResetAfter("monthly", 30, at("2028-02-10T00:00:00Z")))).toBe("2028-02-29T00:00:00.000Z");
    expect(iso(nextResetAfter("monthly", 29, at("2026-02-28T00:00:00Z")))).toBe("2026-03-29T00:00:00.000Z");
    // Past the short month's last day: next month's anchor.
    expect(iso(nextResetAfter("monthly", 31, at("2026-04-30T12:00:00Z")))).toBe("2026-05-31T00:00:00.000Z");
  });

  it("after a reset: from the later of the boundary and now, so a late job resets once and a clock going back repeats nothing", () => {
    // The job ran three days late: one reset, the next one in the future.
    expect(iso(resetAfter("daily", null, at("2026-05-01T00:00:00Z"), at("2026-05-04T09:00:00Z")))).toBe("2026-05-05T00:00:00.000Z");
    // The clock went back an hour after a monthly reset: the next reset is still next month's.
    const boundary = at("2026-06-01T00:00:00Z");
    const next = resetAfter("monthly", 1, boundary, boundary - 3600_000)!;
    expect(next.toISOString()).toBe("2026-07-01T00:00:00.000Z");
    expect(resetDue(next, boundary - 3600_000)).toBe(false);
    expect(resetDue(next, next.getTime())).toBe(true);
    expect(resetDue(null, Date.now())).toBe(false);
  });

  it("limitColumns: a new or changed schedule counts from now, an unchanged one keeps its next reset; no day for daily", () => {
    const now = at("2026-03-10T10:00:00Z");
    expect(limitColumns({ trafficResetStrategy: "daily", trafficResetDay: 9, holdDays: null }, now)).toMatchObject({ trafficResetDay: null, nextResetAt: new Date("2026-03-11T00:00:00Z") });
    const due = new Date("2026-03-10T00:00:00Z");
    expect(limitColumns({ trafficResetStrategy: "monthly", trafficResetDay: 10, holdDays: null }, now, { trafficResetStrategy: "monthly", trafficResetDay: 10, nextResetAt: due }).nextResetAt).toBe(due);
    expect(iso(limitColumns({ trafficResetStrategy: "monthly", trafficResetDay: 12, holdDays: null }, now, { trafficResetStrategy: "monthly", trafficResetDay: 10, nextResetAt: due }).nextResetAt)).toBe("2026-03-12T00:00:00.000Z");
    expect(limitColumns({ trafficResetStrategy: "never", trafficResetDay: null, holdDays: 30 }, now)).toMatchObject({ nextResetAt: null, holdDays: 30 });
  });
});

describe("on hold, crossing, expiry edits", () => {
  it("on hold: the expiry is first use + the hold's days", () => {
    expect(holdExpiry(at("2026-02-27T15:00:00Z"), 30).toISOString()).toBe("2026-03-29T15:00:00.000Z");
    expect(holdExpiry(at("2028-02-28T00:00:00Z"), 1).toISOString()).toBe("2028-02-29T00:00:00.000Z");
  });

  it("crossing: under before, at or over after; never when there is no limit or when already over", () => {
    expect(crossedLimit(100, 99, 100)).toBe(true);
    expect(crossedLimit(100, 0, 5000)).toBe(true);
    expect(crossedLimit(100, 99, 99)).toBe(false);
    expect(crossedLimit(100, 100, 150)).toBe(false);
    expect(crossedLimit(null, 0, 1e12)).toBe(false);
  });

  it("a limited subscriber with a schedule renews at the next reset", () => {
    const renewsAt = new Date("2026-12-01T00:00:00Z");
    expect(blockReason({ expiresAt: null, trafficLimitBytes: 10, trafficUsedBytes: 10, nextResetAt: renewsAt }, Date.now())).toEqual({ kind: "limited", usedBytes: 10, limitBytes: 10, renewsAt });
    expect(blockReason({ expiresAt: null, trafficLimitBytes: 10, trafficUsedBytes: 9, nextResetAt: renewsAt }, Date.now())).toBeNull();
  });

  it("an edit may keep a past expiry but not move one into the past", () => {
    const now = at("2026-06-01T00:00:00Z");
    const past = new Date("2026-05-01T00:00:00Z");
    expect(expiryMovedIntoPast(past, new Date(past), now)).toBe(false);
    expect(expiryMovedIntoPast(null, past, now)).toBe(true);
    expect(expiryMovedIntoPast(new Date("2026-07-01T00:00:00Z"), past, now)).toBe(true);
    expect(expiryMovedIntoPast(past, null, now)).toBe(false);
    expect(expiryMovedIntoPast(null, new Date("2026-07-01T00:00:00Z"), now)).toBe(false);
  });

  it("field-named issues: reset day out of range for the strategy, on hold with an expiry", () => {
    const base = { expiresAt: null, trafficResetStrategy: "never" as const, trafficResetDay: null, holdDays: null };
    expect(subscriberLimitsIssues(base)).toEqual([]);
    expect(subscriberLimitsIssues({ ...base, trafficResetStrategy: "monthly", trafficResetDay: 32 })).toEqual([{ path: "trafficResetDay", message: "Monthly reset day must be between 1 and 31" }]);
    expect(subscriberLimitsIssues({ ...base, trafficResetStrategy: "monthly", trafficResetDay: 0 })[0]!.path).toBe("trafficResetDay");
    expect(subscriberLimitsIssues({ ...base, trafficResetStrategy: "monthly", trafficResetDay: null })[0]!.path).toBe("trafficResetDay");
    expect(subscriberLimitsIssues({ ...base, trafficResetStrategy: "weekly", trafficResetDay: 8 })[0]!.path).toBe("trafficResetDay");
    expect(subscriberLimitsIssues({ ...base, trafficResetStrategy: "weekly", trafficResetDay: 7 })).toEqual([]);
    expect(subscriberLimitsIssues({ ...base, holdDays: 30, expiresAt: new Date() })[0]!.path).toBe("holdDays");
    const schema = z.object({ expiresAt: z.date().nullable(), trafficResetStrategy: z.enum(["never", "daily", "weekly", "monthly"]), trafficResetDay: z.number().nullable(), holdDays: z.number().nullable() }).superRefine(refineSubscriberLimits);
    expect(schema.safeParse({ ...base, trafficResetStrategy: "monthly", trafficResetDay: 31 }).success).toBe(true);
    expect(schema.safeParse({ ...base, trafficResetStrategy: "monthly", trafficResetDay: 40 }).error?.issues[0]?.path).toEqual(["trafficResetDay"]);
  });
});

describe.each(testDbKinds())("usage resets and on hold in the database (%s)", (kind) => {
  let t: TestDatabase;
  let admin: Awaited<ReturnType<typeof adminAndViewer>>["admin"];
  let clusterId: string;
  let serverId: string;
  let seq = 0;

  const row = async (id: string) => (await t.db.select().from(subscribers).where(eq(subscribers.id, id)))[0]!;
  const traffic = async (id: string, up: number, down: number, nowMs = Date.now()) => {
    seq++;
    await t.db.transaction((tx) => applyReports(tx, [{ server: { serverId, clusterId }, nowMs, report: agentReport({ instance: `lim-${kind}`, seq, users: [{ email: id, up, down }] }) }]));
    return foldTrafficJournal(t.db);
  };

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    ({ admin } = await adminAndViewer(t.db));
    clusterId = (await admin.clusters.create({ name: `limits-${kind}` })).id;
    serverId = (await admin.servers.create({ clusterId, name: "s0", address: "10.9.0.1", role: "node", coefficient: 1, capacityMbps: null })).id;
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it("bad input is refused with the field named and nothing stored", async () => {
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ trafficLimitGb: 0 }, "trafficLimitGb"],
      [{ trafficLimitGb: 2_000_000 }, "trafficLimitGb"],
      [{ expiresAt: new Date(Date.now() - 60_000) }, "expiresAt"],
      [{ trafficResetStrategy: "monthly", trafficResetDay: 32 }, "trafficResetDay"],
      [{ trafficResetStrategy: "weekly", trafficResetDay: 0 }, "trafficResetDay"],
      [{ trafficResetStrategy: "hourly" }, "trafficResetStrategy"],
      [{ holdDays: 0 }, "holdDays"],
      [{ holdDays: -3 }, "holdDays"],
      [{ holdDays: 30, expiresAt: new Date(Date.now() + 86_400_000) }, "holdDays"],
    ];
    const before = (await admin.subscribers.list({ clusterId })).length;
    for (const [fields, field] of bad) {
      const err = await admin.subscribers.create({ clusterId, name: "bad", ...fields } as never).catch((e: unknown) => e);
      expect(err, field).toMatchObject({ code: "BAD_REQUEST" });
      expect(((err as { cause?: z.ZodError }).cause?.issues ?? []).map((i) => i.path.join("."))).toContain(field);
    }
    expect((await admin.subscribers.list({ clusterId })).length).toBe(before);
    // An edit may not move the expiry into the past either.
    const s = await admin.subscribers.create({ clusterId, name: "edit-me", expiresAt: null, trafficLimitGb: null });
    const err = await admin.subscribers.update({ subscriberId: s.id, name: "edit-me", expiresAt: new Date(Date.now() - 1000), trafficLimitGb: null }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "BAD_REQUEST" });
    expect(((err as { cause?: z.ZodError }).cause?.issues ?? [])[0]?.path).toEqual(["expiresAt"]);
    expect((await row(s.id)).expiresAt).toBeNull();
  });

  it("create stores the schedule and the next reset; the list shows them", async () => {
    const s = await admin.subscribers.create({ clusterId, name: "monthly-31", trafficLimitGb: 1, trafficResetStrategy: "monthly", trafficResetDay: 31 });
    const r = await row(s.id);
    expect(r).toMatchObject({ trafficResetStrategy: "monthly", trafficResetDay: 31 });
    expect(r.nextResetAt!.getTime()).toBe(nextResetAfter("monthly", 31, r.nextResetAt!.getTime() - 1)!.getTime());
    expect(r.nextResetAt!.getTime()).toBeGreaterThan(Date.now());
    const listed = (await admin.subscribers.list({ clusterId })).find((x) => x.id === s.id)!;
    expect(listed).toMatchObject({ trafficResetStrategy: "monthly", trafficResetDay: 31, limited: false, holdDays: null });
    expect(listed.nextResetAt?.getTime()).toBe(r.nextResetAt!.getTime());
  });

  it("a manual reset stores the period, zeroes the counters, keeps the schedule, and is audited", async () => {
    const s = await admin.subscribers.create({ clusterId, name: "manual", trafficLimitGb: 0.000001, trafficResetStrategy: "weekly", trafficResetDay: 2 });
    const fold = await traffic(s.id, 700, 900);
    expect(fold.crossedClusters).toEqual([clusterId]);
    const before = await row(s.id);
    expect((await admin.subscribers.list({ clusterId })).find((x) => x.id === s.id)!.limited).toBe(true);
    await admin.subscribers.resetUsage({ subscriberId: s.id });
    const after = await row(s.id);
    expect(after).toMatchObject({ trafficUpBytes: 0, trafficDownBytes: 0, trafficUsedBytes: 0 });
    expect(after.nextResetAt).toEqual(before.nextResetAt);
    expect(after.usagePeriodStart.getTime()).toBeGreaterThan(before.usagePeriodStart.getTime());
    const periods = await admin.subscribers.usagePeriods({ subscriberId: s.id });
    expect(periods).toHaveLength(1);
    expect(periods[0]).toMatchObject({ upBytes: 700, downBytes: 900, reason: "manual", periodStart: before.usagePeriodStart, periodEnd: after.usagePeriodStart });
    const audit = await t.db.select().from(auditLog).where(eq(auditLog.entityId, s.id));
    expect(audit.find((a) => a.action === "subscriber.reset-usage")).toMatchObject({ operatorName: "ada", summary: "Reset the usage of manual (reset by hand)" });
    // An unknown subscriber: 404, nothing stored.
    await expect(admin.subscribers.resetUsage({ subscriberId: "00000000-0000-4000-8000-000000000000" })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("scheduled resets: due ones only, once, periods ending at the scheduled instant, one audit entry per cluster", async () => {
    const a = await admin.subscribers.create({ clusterId, name: "daily-a", trafficLimitGb: 1, trafficResetStrategy: "daily" });
    const b = await admin.subscribers.create({ clusterId, name: "daily-b", trafficLimitGb: 1, trafficResetStrategy: "daily" });
    await traffic(a.id, 10, 20);
    await traffic(b.id, 1, 2);
    const due = (await row(a.id)).nextResetAt!;
    expect(await nextScheduledReset(t.db)).not.toBeNull();
    // Not yet due: nothing happens.
    expect((await runDueResets(t.db, due.getTime() - 1)).reset).toBe(0);
    const late = due.getTime() + 3 * 86_400_000 + 5000; // three days late
    const out = await runDueResets(t.db, late);
    expect(out.clusterIds).toEqual([clusterId]);
    expect(out.reset).toBeGreaterThanOrEqual(2);
    const ra = await row(a.id);
    expect(ra).toMatchObject({ trafficUsedBytes: 0, usagePeriodStart: due });
    expect(ra.nextResetAt!.getTime()).toBe(nextResetAfter("daily", null, late)!.getTime());
    expect(await usagePeriods(t.db, a.id)).toEqual([{ periodStart: expect.any(Date), periodEnd: due, upBytes: 10, downBytes: 20, reason: "schedule" }]);
    // Once: running again at the same time (or with the clock gone back) resets nothing.
    expect((await runDueResets(t.db, late)).reset).toBe(0);
    expect((await runDueResets(t.db, late - 3600_000)).reset).toBe(0);
    const entries = (await t.db.select().from(auditLog).where(eq(auditLog.action, "subscriber.reset-usage"))).filter((e) => e.operatorName === "system");
    expect(entries.length).toBeGreaterThanOrEqual(1);
    expect(entries.some((e) => /^Reset the usage of \d+ subscribers \(scheduled reset\)$/.test(e.summary))).toBe(true);
  });

  it("resetUsage for many subscribers (bulk): one statement per group, one audit entry, every period kept", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await admin.subscribers.create({ clusterId, name: `bulk-${i}`, trafficLimitGb: null })).id);
    for (const id of ids) await traffic(id, 5, 5);
    const out = await t.db.transaction((tx) => resetUsage(tx, [...ids, ids[0]!, "00000000-0000-4000-8000-000000000001"], "bulk", { operator: { operatorId: null as never, username: "bulk-test" } }));
    expect(out).toEqual({ reset: 3, clusterIds: [clusterId] });
    for (const id of ids) expect((await row(id)).trafficUsedBytes).toBe(0);
    const periods = await t.db.select().from(subscriberUsagePeriods).where(eq(subscriberUsagePeriods.reason, "bulk"));
    expect(periods.length).toBe(3);
    const audit = await t.db.select().from(auditLog).where(eq(auditLog.operatorName, "bulk-test"));
    expect(audit.map((a) => a.summary)).toEqual(["Reset the usage of 3 subscribers (bulk reset)"]);
  });

  it("on hold: no expiry until the first traffic is folded, then first use + the hold's days, and the cluster is told", async () => {
    const s = await admin.subscribers.create({ clusterId, name: "held", holdDays: 30 });
    expect(await row(s.id)).toMatchObject({ holdDays: 30, expiresAt: null });
    // A report with no bytes for them starts nothing.
    const idle = await traffic(s.id, 0, 0);
    expect(idle.startedClusters).toEqual([]);
    expect((await row(s.id)).holdDays).toBe(30);
    const first = Date.now();
    const fold = await traffic(s.id, 100, 200, first);
    expect(fold.startedClusters).toEqual([clusterId]);
    const r = await row(s.id);
    expect(r.holdDays).toBeNull();
    expect(r.expiresAt).not.toBeNull();
    const seenAt = r.lastSeenAt!.getTime();
    expect(r.expiresAt!.getTime()).toBe(holdExpiry(seenAt, 30).getTime());
    // Later traffic does not move the expiry again.
    const again = await traffic(s.id, 1, 1, first + 60_000);
    expect(again.startedClusters).toEqual([]);
    expect((await row(s.id)).expiresAt).toEqual(r.expiresAt);
  });

  it("the job runs due resets from its own clock and publishes the clusters", async () => {
    const s = await admin.subscribers.create({ clusterId, name: "job-daily", trafficLimitGb: 0.000001, trafficResetStrategy: "daily" });
    await traffic(s.id, 5000, 5000);
    const due = (await row(s.id)).nextResetAt!.getTime();
    let now = due - 10_000;
    const job = new UsageResetJob(() => Promise.resolve(t.db), () => now);
    const events: ChangeEvent[] = [];
    const off = onChange((e) => events.push(e));
    try {
      job.start();
      await job.tick();
      expect((await row(s.id)).trafficUsedBytes).toBe(10_000);
      now = due + 1;
      await job.tick();
      expect((await row(s.id)).trafficUsedBytes).toBe(0);
      expect(events.some((e) => e.kind === "subscribers" && e.clusterId === clusterId)).toBe(true);
    } finally {
      off();
      await job.stop();
    }
  });
});
