import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { clusters, inbounds, meshChecks, serverHealth, serverMetrics, serverMetricsHistory, servers } from "@/db/schema";
import { hashAgentToken } from "@/server/auth/tokens";
import { TestReportIntake } from "@/server/dataplane/report-testing";
import { recordProbeResult } from "./probe-results";
import { sweepStatuses } from "./status";
import { HISTORY_BUCKET_MS } from "./metrics-history";
import { listProbeTargets } from "./service";
import { storeLoads } from "./reported-health";
import { loadMetricsSnapshot } from "@/server/subscription/snapshot";
import type { AgentReport } from "@/core/monitoring-contract";

const report = (over: Partial<AgentReport> = {}): AgentReport => ({
  listenerAlive: true,
  serviceRunning: true,
  usersOnline: 10,
  rxBps: 1_000_000,
  txBps: 2_000_000,
  cpu: 12.5,
  memory: 40,
  neighbours: [],
  ...over,
});

describe.each(testDbKinds())("monitoring status (%s)", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  const ids: string[] = [];
  const tokens: string[] = [];
  const auth = (i: number) => `Bearer ${tokens[i]}`;

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    const [c] = await t.db.insert(clusters).values({ name: "mon", reportIntervalS: 10 }).returning();
    clusterId = c!.id;
    for (let i = 0; i < 5; i++) {
      const token = `tok-${i}-${randomUUID()}`;
      const [s] = await t.db
        .insert(servers)
        .values({ clusterId, name: `s${i}`, address: "127.0.0.1", agentTokenHash: hashAgentToken(token), enabled: i !== 4 })
        .returning();
      ids.push(s!.id);
      tokens.push(token);
      await t.db.insert(inbounds).values({ clusterId, serverId: s!.id, name: `in${i}`, port: 20000 + i });
    }
  });
  afterAll(async () => {
    await t?.dispose();
  });
  // Reports go through the real route. Each case is a fresh panel (its own batcher and rate-limit
  // buckets): the cases are separate stories told on their own clocks, each within the burst.
  let intake: TestReportIntake;
  beforeEach(async () => {
    intake = await TestReportIntake.start(t);
  });
  afterEach(async () => {
    await intake?.close();
  });
  const send = (authorization: string | undefined, body: string, nowMs?: number) => intake.send(authorization, body, nowMs);

  const metricsRows = () => t.db.select().from(serverMetrics);
  const healthRows = () => t.db.select().from(serverHealth);

  it("401 without or with a bad token, 400 naming the field; nothing changes", async () => {
    const before = { m: await metricsRows(), h: await healthRows() };
    const body = JSON.stringify(report());
    expect(await send(undefined, body)).toMatchObject({ httpStatus: 401 });
    expect(await send("Bearer nope", body)).toMatchObject({ httpStatus: 401 });
    expect(await send("Basic abc", body)).toMatchObject({ httpStatus: 401 });
    const bad = await send(auth(0), JSON.stringify(report({ usersOnline: -1 })));
    expect(bad).toEqual({ httpStatus: 400, body: { error: "usersOnline: expected number ≥ 0" } });
    const badNeighbour = await send(
      auth(0),
      JSON.stringify(report({ neighbours: [{ serverId: "x", ok: true, rttMs: 1 }] })),
    );
    expect(badNeighbour.body).toEqual({ error: "neighbours[0].serverId: expected a UUID" });
    const extra = await send(auth(0), JSON.stringify({ ...report(), bogus: 1 }));
    expect(extra.body).toEqual({ error: "bogus: unknown field" });
    expect((await send(auth(0), "{not json")).httpStatus).toBe(400);
    expect(await metricsRows()).toEqual(before.m);
    expect(await healthRows()).toEqual(before.h);
  });

  it("floats too small for their column are stored as 0, not a 500 (found by the fuzz suite)", async () => {
    const r = await send(auth(3), JSON.stringify(report({ cpu: 1e-123, memory: 4e-323, rxBps: 5e-323, txBps: 1e-200, neighbours: [{ serverId: ids[0]!, ok: true, rttMs: 1e-300 }] })));
    expect(r.httpStatus).toBe(200);
    const [m] = await t.db.select().from(serverMetrics).where(eq(serverMetrics.serverId, ids[3]!));
    expect(m).toMatchObject({ cpu: 0, memory: 0, rxBps: 0, txBps: 0 });
  });

  it("stores metrics, learns the peak with a 24 h half-life and fills the 5-minute bucket", async () => {
    const t0 = Math.floor(Date.UTC(2030, 0, 1) / HISTORY_BUCKET_MS) * HISTORY_BUCKET_MS;
    const r1 = await send(auth(1), JSON.stringify(report({ rxBps: 8e6, txBps: 4e6, usersOnline: 10, cpu: 10 })), t0);
    expect(r1).toMatchObject({ httpStatus: 200, body: { ok: true, status: "healthy" } });
    // The status changed with this report (pending → healthy): it is the status's start.
    const [h1] = await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, ids[1]!));
    expect(h1!.statusSince.getTime()).toBe(t0);
    await send(auth(1), JSON.stringify(report({ rxBps: 1e6, txBps: 2e6, usersOnline: 20, cpu: 30 })), t0 + 60_000);
    const [m] = await t.db.select().from(serverMetrics).where(eq(serverMetrics.serverId, ids[1]!));
    expect(m).toMatchObject({ usersOnline: 20, rxBps: 1e6, txBps: 2e6, listenerAlive: true, serviceRunning: true });
    expect(m!.peakBps).toBeCloseTo(8e6 * Math.pow(2, -60_000 / 86_400_000), 0);
    const hist = await t.db.select().from(serverMetricsHistory).where(eq(serverMetricsHistory.serverId, ids[1]!));
    expect(hist).toHaveLength(1);
    expect(hist[0]).toMatchObject({ samples: 2, usersOnlineAvg: 15, trafficBpsMax: 8e6, trafficBpsAvg: 5e6, rxBpsAvg: 4.5e6, txBpsAvg: 3e6, cpuAvg: 20 });
    expect(hist[0]!.bucketStart.getTime()).toBe(t0);
    // a day later the old peak has halved
    await send(auth(1), JSON.stringify(report({ rxBps: 0, txBps: 0 })), t0 + 60_000 + 86_400_000);
    const [m2] = await t.db.select().from(serverMetrics).where(eq(serverMetrics.serverId, ids[1]!));
    expect(m2!.peakBps).toBeCloseTo(m!.peakBps / 2, 0);
    expect(await t.db.select().from(serverMetricsHistory).where(eq(serverMetricsHistory.serverId, ids[1]!))).toHaveLength(2);
  });

  it("marks a server held back when its users get less than another server's of its cluster got at its latest report; the last such report is kept", async () => {
    const t0 = Date.UTC(2031, 0, 1);
    const cluster = async (name: string, n: number) => {
      const [c] = await t.db.insert(clusters).values({ name, reportIntervalS: 10 }).returning();
      const made: Array<{ id: string; auth: string }> = [];
      for (let i = 0; i < n; i++) {
        const token = `${name}-${i}-${randomUUID()}`;
        const [srv] = await t.db.insert(servers).values({ clusterId: c!.id, name: `${name}-${i}`, address: "127.0.0.1", agentTokenHash: hashAgentToken(token) }).returning();
        made.push({ id: srv!.id, auth: `Bearer ${token}` });
      }
      return made;
    };
    const [far] = await cluster("held-other", 1);
    const mine = await cluster("held", 4);
    const row = async (i: number) => (await t.db.select().from(serverMetrics).where(eq(serverMetrics.serverId, mine[i]!.id)))[0]!;
    const at = async (i: number) => (await row(i)).heldBackAt?.getTime() ?? null;
    const say = (i: number, over: Partial<AgentReport>, nowMs: number) => send(mine[i]!.auth, JSON.stringify(report(over)), nowMs);
    // Another cluster's users get 10 Mbit/s each: not this cluster's reference.
    expect((await send(far!.auth, JSON.stringify(report({ usersOnline: 100, rxBps: 1000e6 })), t0)).httpStatus).toBe(200);
    await say(0, { usersOnline: 100, rxBps: 200e6 }, t0); // 2 Mbit/s each
    await say(1, { usersOnline: 100, rxBps: 160e6 }, t0 + 1000); // 1.6 × 1.25 = 2: within the margin
    await say(2, { usersOnline: 63, rxBps: 1e6 }, t0 + 1000); // too few users to say
    expect([await at(0), await at(1), await at(2)]).toEqual([null, null, null]);
    await say(1, { usersOnline: 100, rxBps: 100e6, txBps: 150e6 }, t0 + 2000); // the larger of rx and tx: 1.5 each
    expect(await at(1)).toBe(t0 + 2000);
    // What the link carried when seen full is stored with the time.
    expect((await row(1)).heldBackBps).toBe(150e6);
    expect([(await row(0)).heldBackBps, (await row(2)).heldBackBps]).toEqual([null, null]);
    // Kept through reports that do not show it; moved on by one that does.
    await say(1, { usersOnline: 10 }, t0 + 3000);
    expect(await at(1)).toBe(t0 + 2000);
    expect((await row(1)).heldBackBps).toBe(150e6);
    await say(1, { usersOnline: 100, rxBps: 100e6 }, t0 + 4000);
    expect(await at(1)).toBe(t0 + 4000);
    expect((await row(1)).heldBackBps).toBe(100e6);
    // Server 0's 2 Mbit/s is now over 10 minutes old (3 intervals are only 30 s): no reference.
    // Server 1's 1 Mbit/s is, and 0.9 is within the margin of it.
    await say(3, { usersOnline: 100, rxBps: 90e6 }, t0 + 10 * 60_000 + 1);
    expect(await at(3)).toBeNull();
  });

  it("loads from heartbeats set the balancing figures while they arrive; the report's, counted over a longer window, are kept out until they stop", async () => {
    const t0 = Date.UTC(2031, 1, 1);
    const [c] = await t.db.insert(clusters).values({ name: "loads", reportIntervalS: 60 }).returning();
    const mine: Array<{ id: string; auth: string }> = [];
    for (let i = 0; i < 2; i++) {
      const token = `loads-${i}-${randomUUID()}`;
      const [srv] = await t.db.insert(servers).values({ clusterId: c!.id, name: `loads-${i}`, address: "127.0.0.1", agentTokenHash: hashAgentToken(token) }).returning();
      mine.push({ id: srv!.id, auth: `Bearer ${token}` });
    }
    const row = async (i: number) => (await t.db.select().from(serverMetrics).where(eq(serverMetrics.serverId, mine[i]!.id)))[0];
    const load = (i: number, atMs: number, usersOnline: number, rxBps: number, txBps = 0) =>
      t.db.transaction((tx) => storeLoads(tx, [{ serverId: mine[i]!.id, clusterId: c!.id, atMs, load: { usersOnline, rxBps, txBps } }]));
    const say = (i: number, over: Partial<AgentReport>, nowMs: number) => send(mine[i]!.auth, JSON.stringify(report(over)), nowMs);

    // No report yet, so no row: the load is skipped (the first report creates the row).
    expect([...(await load(0, t0 - 1000, 100, 300e6))]).toEqual([]);
    expect(await row(0)).toBeUndefined();
    await say(0, { usersOnline: 100, rxBps: 200e6 }, t0);
    await say(1, { usersOnline: 100, rxBps: 200e6 }, t0);

    expect([...(await load(0, t0 + 10_000, 100, 100e6, 300e6))]).toEqual([c!.id]);
    expect(await row(0)).toMatchObject({ loadUsers: 100, loadBps: 300e6, peakBps: 300e6, heldBackAt: null, usersOnline: 100, rxBps: 200e6 });
    expect((await row(0))!.loadAt!.getTime()).toBe(t0 + 10_000);
    // 1 Mbit/s each against server 0's latest 3: held back, at the load's time and rate.
    await load(1, t0 + 12_000, 100, 100e6);
    expect((await row(1))!.heldBackAt!.getTime()).toBe(t0 + 12_000);
    expect((await row(1))!.heldBackBps).toBe(100e6);
    const peak1 = (await row(1))!.peakBps;
    expect(peak1).toBeCloseTo(200e6 * Math.pow(2, -12_000 / 86_400_000), 0);

    // A report 8 s after the last load: stored for health and charts, but 300 users over its
    // minute read 0.3 Mbit/s each; the load's figures stay, and nothing new is marked.
    await say(1, { usersOnline: 300, rxBps: 90e6 }, t0 + 20_000);
    expect(await row(1)).toMatchObject({ usersOnline: 300, rxBps: 90e6, peakBps: peak1, heldBackBps: 100e6 });
    expect((await row(1))!.heldBackAt!.getTime()).toBe(t0 + 12_000);
    // An older load (another instance's late flush) changes nothing.
    expect([...(await load(0, t0 + 9_000, 1, 1e6))]).toEqual([]);
    expect((await row(0))!.loadBps).toBe(300e6);

    const snap = await loadMetricsSnapshot(t.db);
    expect(snap.get(mine[0]!.id)).toMatchObject({ usersOnline: 100, trafficBps: 300e6, peakBps: 300e6 });
    expect(snap.get(mine[0]!.id)!.reportedAt.getTime()).toBe(t0 + 10_000);
    expect(snap.get(mine[1]!.id)).toMatchObject({ usersOnline: 100, trafficBps: 100e6, heldBack: true, heldBackBps: 100e6 });

    // Loads stopped (an older agent, or heartbeats lost): 38 s after the last, the report is the figure again.
    await say(1, { usersOnline: 100, rxBps: 250e6 }, t0 + 50_000);
    expect((await row(1))!.peakBps).toBe(250e6);
    expect((await row(1))!.heldBackAt!.getTime()).toBe(t0 + 12_000); // 2.5 × 1.25 > 3: not held back
    const after = (await loadMetricsSnapshot(t.db)).get(mine[1]!.id)!;
    expect(after).toMatchObject({ usersOnline: 100, trafficBps: 250e6 });
    expect(after.reportedAt.getTime()).toBe(t0 + 50_000);
  });

  it("a report saying the listener is down is unavailable, before and after a healthy one", async () => {
    const now = Date.now();
    const down = JSON.stringify(report({ listenerAlive: false }));
    expect((await send(auth(2), down, now)).body).toEqual({ ok: true, status: "unavailable", limits: [] });
    expect((await send(auth(2), JSON.stringify(report()), now + 1000)).body).toEqual({ ok: true, status: "healthy", limits: [] });
    const r = await send(auth(2), down, now + 2000);
    expect(r).toMatchObject({ body: { status: "unavailable" } });
    const [h] = await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, ids[2]!));
    expect(h).toMatchObject({ status: "unavailable", reportEverHealthy: true, statusReason: "The agent reports its traffic listener is down." });
    expect(h!.statusSince.getTime()).toBe(now + 2000); // the status changed with this report
    // A first success is not a recovery; coming back from unavailable is.
    expect(h!.recoveredAt).toBeNull();
    await send(auth(2), JSON.stringify(report()), now + 3000);
    const [back] = await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, ids[2]!));
    expect(back).toMatchObject({ status: "healthy" });
    expect(back!.recoveredAt?.getTime()).toBe(now + 3000);
  });

  it("probe failures make it probe-failing; one success brings it back", async () => {
    const now = Date.now();
    await send(auth(3), JSON.stringify(report()), now);
    const th = { unhealthyThreshold: 2, healthyThreshold: 1 };
    await recordProbeResult(t.db, ids[3]!, { ok: false, latencyMs: 1, reason: "connection refused" }, th, now + 10);
    let [h] = await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, ids[3]!));
    expect(h!.status).toBe("healthy");
    const res = await recordProbeResult(t.db, ids[3]!, { ok: false, latencyMs: 1, reason: "connection refused" }, th, now + 20);
    expect(res).toMatchObject({ status: "probe-failing", changed: true });
    [h] = await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, ids[3]!));
    expect(h).toMatchObject({ probeFailStreak: 2, lastProbeOk: false, lastProbeReason: "connection refused", statusReason: "Active health probe failing (2 failures in a row); last error: connection refused." });
    expect(await recordProbeResult(t.db, ids[3]!, { ok: true, code: 200, latencyMs: 3, reason: "status 200" }, th, now + 30)).toMatchObject({ status: "healthy", changed: true });
    [h] = await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, ids[3]!));
    expect(h!.recoveredAt?.getTime()).toBe(now + 30);
    // Another success changes no status input: the probe is stored, the status is not recomputed.
    expect(await recordProbeResult(t.db, ids[3]!, { ok: true, code: 200, latencyMs: 4, reason: "status 200" }, th, now + 40)).toBeNull();
    [h] = await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, ids[3]!));
    expect(h).toMatchObject({ status: "healthy", statusReason: "All checks pass.", probeOkStreak: 2, lastProbeLatencyMs: 4 });
    expect(h!.lastProbeAt?.getTime()).toBe(now + 40);
    // One failure below the threshold still recomputes (its reason counts failures), and so
    // does the success that clears it.
    expect(await recordProbeResult(t.db, ids[3]!, { ok: false, latencyMs: 1, reason: "timeout" }, th, now + 50)).toMatchObject({ status: "healthy", changed: false });
    expect(await recordProbeResult(t.db, ids[3]!, { ok: true, code: 200, latencyMs: 3, reason: "status 200" }, th, now + 60)).toMatchObject({ status: "healthy", changed: false });
  });

  it("mesh links are stored per observer; unknown targets are ignored", async () => {
    const now = Date.now();
    const r = await send(
      auth(0),
      JSON.stringify(report({ neighbours: [{ serverId: ids[1]!, ok: false, rttMs: null }, { serverId: randomUUID(), ok: false, rttMs: null }, { serverId: ids[2]!, ok: true, rttMs: 1.5 }] })),
      now,
    );
    expect(r.httpStatus).toBe(200);
    const rows = await t.db.select().from(meshChecks).where(eq(meshChecks.observerId, ids[0]!));
    expect(rows.map((x) => [x.targetId, x.lastOk, x.failStreak, x.rttMs]).sort()).toEqual(
      [[ids[1], false, 1, null], [ids[2], true, 0, 1.5]].sort(),
    );
  });

  it("sweep: two of four observers failing ≥ 3 times make the target unreachable; silence makes no-data", async () => {
    const now = Date.now();
    const target = ids[3]!;
    const others = [ids[0]!, ids[1]!, ids[2]!];
    for (let k = 0; k < 3; k++) {
      for (const [i, id] of others.entries()) {
        const neighbours = ids.slice(0, 4).filter((x) => x !== id).map((x) => ({ serverId: x, ok: !(x === target && i < 2), rttMs: null }));
        await send(auth(i), JSON.stringify(report({ neighbours })), now + k * 1000);
      }
      await send(auth(3), JSON.stringify(report()), now + k * 1000);
    }
    const sweep = await sweepStatuses(t.db, now + 3000);
    expect(sweep.changedClusters.has(clusterId)).toBe(true);
    let [h] = await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, target));
    expect(h).toMatchObject({ status: "unreachable", meshUnreachable: true });
    // 31 s of silence (interval 10 s) → no-data for everyone that reported
    await sweepStatuses(t.db, now + 2000 + 31_000);
    [h] = await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, ids[0]!));
    expect(h!.status).toBe("no-data");
    // the disabled server is disabled, and never a probe target
    const [d] = await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, ids[4]!));
    expect(d!.status).toBe("disabled");
    // A probe that was under way when it was disabled is dropped: nothing stored.
    expect(await recordProbeResult(t.db, ids[4]!, { ok: true, code: 200, latencyMs: 2, reason: "status 200" }, { unhealthyThreshold: 1, healthyThreshold: 1 }, now + 40_000)).toBeNull();
    const [still] = await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, ids[4]!));
    expect(still).toEqual(d);
    const targets = await listProbeTargets(t.db);
    expect(targets.map((x) => x.serverId).sort()).toEqual(ids.slice(0, 4).sort());
    expect(targets.find((x) => x.serverId === ids[0])).toMatchObject({ host: "127.0.0.1", port: 20000 });
  });
  it("probes failing before any success: probe-failing at once with the count and last error; the first success is no recovery", async () => {
    const now = Date.now();
    const token = `tok-new-${randomUUID()}`;
    const [c] = await t.db.insert(clusters).values({ name: "new servers", reportIntervalS: 10 }).returning();
    const [s] = await t.db.insert(servers).values({ clusterId: c!.id, name: "s-new", address: "127.0.0.1", agentTokenHash: hashAgentToken(token) }).returning();
    await t.db.insert(inbounds).values({ clusterId: c!.id, serverId: s!.id, name: "in-new", port: 20010 });
    const th = { unhealthyThreshold: 3, healthyThreshold: 1 };
    const fail = { ok: false, latencyMs: 1, reason: "connection refused" };
    expect(await recordProbeResult(t.db, s!.id, fail, th, now)).toMatchObject({ status: "probe-failing", changed: true });
    expect(await recordProbeResult(t.db, s!.id, fail, th, now + 10)).toMatchObject({ status: "probe-failing", changed: false });
    let [h] = await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, s!.id));
    expect(h).toMatchObject({ probeFailStreak: 2, probeHealthy: null, statusReason: "Health probe has never passed (2 failures in a row); last error: connection refused." });
    const ok = await send(`Bearer ${token}`, JSON.stringify(report()), now + 20);
    expect(ok.body).toEqual({ ok: true, status: "healthy", limits: [] });
    [h] = await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, s!.id));
    expect(h).toMatchObject({ status: "healthy", reportEverHealthy: true });
    expect(h!.recoveredAt).toBeNull();
  });

  it("sweep: reads servers in pages and reaches every one of them", async () => {
    const [c] = await t.db.insert(clusters).values({ name: "many", reportIntervalS: 10 }).returning();
    const many = await t.db
      .insert(servers)
      .values(Array.from({ length: 600 }, (_, i) => ({ clusterId: c!.id, name: `m${i}`, address: "127.0.0.1", agentTokenHash: hashAgentToken(`many-${i}-${randomUUID()}`) })))
      .returning({ id: servers.id });
    await sweepStatuses(t.db);
    const rows = await t.db.select({ id: serverHealth.serverId }).from(serverHealth).innerJoin(servers, eq(servers.id, serverHealth.serverId)).where(eq(servers.clusterId, c!.id));
    expect(rows.map((r) => r.id).sort()).toEqual(many.map((m) => m.id).sort());
  });
});
