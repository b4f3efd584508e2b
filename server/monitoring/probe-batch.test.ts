/**
 * Probe results stored in batches: recordProbeResults (probe-results.ts) against recordProbeResult one
 * by one, and the queue in front of it (ProbeResultBatcher): flush triggers, outage, cap, stop.
 */
import { mulberry32 } from "@/scripts/simulator/prng";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { eq, inArray } from "drizzle-orm";
import type { Db } from "@/db/client";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { alertEvents, clusters, serverHealth, servers } from "@/db/schema";
import { hashAgentToken } from "@/server/auth/tokens";
import { applyReport } from "@/server/dataplane/reports";
import { recordProbeResult, recordProbeResults, type ProbeResultToRecord } from "./probe-results";
import type { ProbeResultLike } from "./probe-streak";
import { ProbeResultBatcher } from "./probe-batcher";
import { agentReport } from "./testing";


const BASE = Date.UTC(2030, 5, 1, 12, 0, 0);
const ok = (latencyMs = 3): ProbeResultLike => ({ ok: true, code: 200, latencyMs, reason: "status 200" });
const fail = (reason = "connection refused"): ProbeResultLike => ({ ok: false, latencyMs: 1, reason });
const th = (unhealthyThreshold = 2, healthyThreshold = 1) => ({ unhealthyThreshold, healthyThreshold });

/** A connection error as node-postgres gives it when the server is away. */
const connectionRefused = () => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });

/** The test database, with transactions failing as `fault()` says while it returns an error. */
function faultyDb(db: Db, fault: () => Error | null): Db {
  return new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === "transaction") {
        return (...args: Parameters<Db["transaction"]>) => {
          const err = fault();
          return err ? Promise.reject(err) : target.transaction(...args);
        };
      }
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
}

describe.each(testDbKinds())("probe results in batches (%s)", (kind) => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await openTestDatabase(kind);
  });
  afterAll(async () => {
    await t?.dispose();
  });

  /** n servers in a new cluster; `reported`: each has a healthy agent report (probes alone make no-data). */
  async function fleet(name: string, n: number, reported = true): Promise<{ clusterId: string; ids: string[] }> {
    const [c] = await t.db.insert(clusters).values({ name: `${name}-${randomUUID().slice(0, 8)}`, reportIntervalS: 10 }).returning();
    const rows = await t.db
      .insert(servers)
      .values(Array.from({ length: n }, (_, i) => ({ clusterId: c!.id, name: `${name}${i}`, address: "127.0.0.1", agentTokenHash: hashAgentToken(randomUUID()) })))
      .returning({ id: servers.id, name: servers.name });
    // By index, whatever order the insert returned them in.
    const ids = rows.sort((a, b) => Number(a.name.slice(name.length)) - Number(b.name.slice(name.length))).map((r) => r.id);
    if (reported) for (const id of ids) await t.db.transaction((tx) => applyReport(tx, { serverId: id, clusterId: c!.id }, agentReport(), BASE - 1000));
    return { clusterId: c!.id, ids };
  }

  const health = async (id: string) => (await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, id)))[0];

  /** Health rows by index, with times the database chose (defaults) made comparable. */
  async function rowsOf(ids: string[]) {
    const rows = await t.db.select().from(serverHealth).where(inArray(serverHealth.serverId, ids));
    const byId = new Map(rows.map((r) => [r.serverId, r]));
    const time = (d: Date | null) => (d === null ? null : d.getTime() >= BASE - 60_000 ? d.getTime() : "database default");
    return ids.map((id) => {
      const r = byId.get(id);
      if (!r) return null;
      const { serverId: _omit, statusSince, recoveredAt, lastProbeAt, updatedAt, ...rest } = r;
      return { ...rest, statusSince: time(statusSince), recoveredAt: time(recoveredAt), lastProbeAt: time(lastProbeAt), updatedAt: time(updatedAt) };
    });
  }

  /** server.down / server.up events of a fleet, by server index. */
  async function alertsOf(clusterId: string, ids: string[]) {
    const rows = await t.db.select().from(alertEvents).where(eq(alertEvents.clusterId, clusterId));
    return rows
      .map((e) => {
        const d = e.data as { server: { id: string }; from: string; to: string; reason: string };
        return { type: e.type, server: ids.indexOf(d.server.id), from: d.from, to: d.to, reason: d.reason, at: e.occurredAt.getTime() };
      })
      .sort((a, b) => a.server - b.server || a.at - b.at || a.type.localeCompare(b.type));
  }

  it("a batch of many servers stores the same rows, statuses and alerts as one call per result", async () => {
    const n = 60;
    const a = await fleet("a", n, false);
    const b = await fleet("b", n, false);
    const random = mulberry32(20301);
    // Varied histories, the same for both fleets: agent reports (healthy or listener down),
    // probe streaks of every length, servers with no health row at all, disabled servers.
    const reports: Array<boolean | null> = [];
    const history: ProbeResultLike[][] = [];
    for (let i = 0; i < n; i++) {
      reports.push(i % 5 === 4 ? null : i % 5 === 3 ? false : true);
      history.push(Array.from({ length: i % 6 }, () => (random() < 0.6 ? ok(random() * 10) : fail(`refused ${i}`))));
    }
    const thresholdsOf = (i: number) => th(1 + (i % 3), 1 + (i % 2));
    for (const f of [a, b]) {
      for (let i = 0; i < n; i++) {
        const r = reports[i];
        if (r !== null) await t.db.transaction((tx) => applyReport(tx, { serverId: f.ids[i]!, clusterId: f.clusterId }, agentReport({ listenerAlive: r }), BASE - 1000));
        for (const [k, res] of history[i]!.entries()) await recordProbeResult(t.db, f.ids[i]!, res, thresholdsOf(i), BASE - 900 + k);
      }
      const off = f.ids.filter((_, i) => i % 17 === 5);
      await t.db.update(servers).set({ enabled: false }).where(inArray(servers.id, off));
    }
    expect(await rowsOf(b.ids)).toEqual(await rowsOf(a.ids));
    expect((await rowsOf(a.ids)).filter((r) => r === null).length).toBeGreaterThan(0);

    for (let round = 0; round < 4; round++) {
      const results = Array.from({ length: n }, (_, i) => (random() < 0.55 ? ok(Math.round(random() * 100) / 4) : fail(`round ${round}: refused ${i}`)));
      const nowOf = (i: number) => BASE + round * 1000 + i;
      const one = new Map<number, unknown>();
      for (let i = 0; i < n; i++) one.set(i, await recordProbeResult(t.db, a.ids[i]!, { ...results[i]!, atMs: nowOf(i) - 5 }, thresholdsOf(i), nowOf(i)));
      // The batch in another order than the ids: recordProbeResults orders it itself.
      const items: ProbeResultToRecord[] = results.map((r, i) => ({ serverId: b.ids[i]!, result: { ...r, atMs: nowOf(i) - 5 }, thresholds: thresholdsOf(i), nowMs: nowOf(i) })).reverse();
      const batch = await recordProbeResults(t.db, items);
      expect(await rowsOf(b.ids)).toEqual(await rowsOf(a.ids));
      for (let i = 0; i < n; i++) {
        const single = one.get(i) as { status: string; changed: boolean } | null;
        const batched = batch.recomputed.get(b.ids[i]!);
        expect(batched ? { status: batched.status, changed: batched.changed } : null).toEqual(single ? { status: single.status, changed: single.changed } : null);
      }
      const anyChanged = [...one.values()].some((r) => (r as { changed?: boolean } | null)?.changed);
      expect(batch.changedClusters).toEqual(anyChanged ? new Set([b.clusterId]) : new Set());
    }
    // Server down/up alerts, including whether a first success counts as a recovery.
    const alertsA = (await alertsOf(a.clusterId, a.ids)).map(({ at: _at, ...x }) => x);
    expect(alertsA.length).toBeGreaterThan(0);
    expect((await alertsOf(b.clusterId, b.ids)).map(({ at: _at, ...x }) => x)).toEqual(alertsA);
    // The statuses the rounds went through, so the comparison above covered something.
    const statuses = new Set((await rowsOf(a.ids)).map((r) => r?.status));
    expect(statuses.has("probe-failing") && statuses.has("healthy") && statuses.has("unavailable")).toBe(true);
    // About 1,500 single writes: seconds on an idle machine, a minute on one with the suite beside it.
  }, 240_000);

  it("a first success ever leaving a down status is no recovery and no server.up, in a batch as one by one", async () => {
    // Healthy agent reports that never counted as a success (reportEverHealthy unset, as in
    // rows from before it existed): the probe's first success is the server's first.
    const f = await fleet("first", 3);
    await t.db.update(serverHealth).set({ reportEverHealthy: false }).where(inArray(serverHealth.serverId, f.ids));
    for (const id of f.ids) {
      await recordProbeResult(t.db, id, fail(), th(2), BASE);
      await recordProbeResult(t.db, id, fail(), th(2), BASE + 1);
    }
    const [one, batched, folded] = f.ids as [string, string, string];
    expect(await health(one)).toMatchObject({ status: "probe-failing", everSucceeded: false });
    expect(await recordProbeResult(t.db, one, ok(), th(2), BASE + 10)).toMatchObject({ status: "healthy", changed: true });
    const res = await recordProbeResults(t.db, [
      { serverId: batched, result: ok(), thresholds: th(2), nowMs: BASE + 10 },
      { serverId: folded, result: fail(), thresholds: th(2), nowMs: BASE + 9 },
      { serverId: folded, result: ok(), thresholds: th(2), nowMs: BASE + 10 },
    ]);
    expect(res.recomputed.get(batched)).toMatchObject({ status: "healthy", changed: true });
    const rows = await rowsOf(f.ids);
    expect(rows[0]).toMatchObject({ status: "healthy", everSucceeded: true, recoveredAt: null });
    expect(rows[1]).toEqual(rows[0]);
    expect(rows[2]).toEqual(rows[0]);
    expect(await alertsOf(f.clusterId, f.ids)).toEqual([]);
    // A later recovery is one.
    for (const id of [one, batched]) await recordProbeResults(t.db, [0, 1].map((k) => ({ serverId: id, result: fail(), thresholds: th(2), nowMs: BASE + 20 + k })));
    await recordProbeResult(t.db, one, ok(), th(2), BASE + 30);
    await recordProbeResults(t.db, [{ serverId: batched, result: ok(), thresholds: th(2), nowMs: BASE + 30 }]);
    expect((await rowsOf([one, batched])).map((r) => r?.recoveredAt)).toEqual([BASE + 30, BASE + 30]);
    expect((await alertsOf(f.clusterId, f.ids)).map((e) => [e.type, e.server])).toEqual([
      ["server.down", 0],
      ["server.up", 0],
      ["server.down", 1],
      ["server.up", 1],
    ]);
  });

  it("two results of one server in a batch are folded in order", async () => {
    const f = await fleet("order", 4);
    for (const id of f.ids) await recordProbeResult(t.db, id, ok(), th(2), BASE);
    const [s0, s1, s2, s3] = f.ids as [string, string, string, string];
    const res = await recordProbeResults(t.db, [
      { serverId: s0, result: fail("first"), thresholds: th(2), nowMs: BASE + 10 },
      { serverId: s1, result: fail("refused"), thresholds: th(2), nowMs: BASE + 11 },
      { serverId: s0, result: fail("second"), thresholds: th(2), nowMs: BASE + 12 },
      { serverId: s1, result: ok(7), thresholds: th(2), nowMs: BASE + 13 },
      { serverId: s2, result: ok(7), thresholds: th(2), nowMs: BASE + 14 },
      { serverId: s2, result: fail("last"), thresholds: th(2), nowMs: BASE + 15 },
    ]);
    // Two failures in a row reach the threshold of 2; the second is the last probe.
    expect(await health(s0)).toMatchObject({ probeFailStreak: 2, probeOkStreak: 0, probeHealthy: false, lastProbeOk: false, lastProbeReason: "second", status: "probe-failing" });
    expect((await health(s0))!.updatedAt.getTime()).toBe(BASE + 12);
    expect(res.recomputed.get(s0)).toMatchObject({ status: "probe-failing", changed: true });
    expect(res.changedClusters).toEqual(new Set([f.clusterId]));
    // A failure then a success: the streak is cleared, and the status recomputed (the failure moved it).
    expect(await health(s1)).toMatchObject({ probeFailStreak: 0, probeOkStreak: 1, probeHealthy: true, lastProbeOk: true, lastProbeLatencyMs: 7, status: "healthy", statusReason: "All checks pass." });
    expect(res.recomputed.get(s1)).toMatchObject({ status: "healthy", changed: false });
    // The other way round ends on the failure.
    expect(await health(s2)).toMatchObject({ probeFailStreak: 1, probeOkStreak: 0, probeHealthy: true, lastProbeOk: false, lastProbeReason: "last", status: "healthy" });
    // The same as one call per result.
    await recordProbeResult(t.db, s3, fail("first"), th(2), BASE + 10);
    await recordProbeResult(t.db, s3, fail("second"), th(2), BASE + 12);
    const { serverId: _x, ...want } = (await health(s3))!;
    const { serverId: _y, ...got } = (await health(s0))!;
    expect(got).toEqual(want);
  });

  it("drops a disabled server's results, and those of a deleted server, and stores the others", async () => {
    const f = await fleet("off", 3);
    for (const id of f.ids) await recordProbeResult(t.db, id, ok(), th(), BASE);
    const [on, off, gone] = f.ids as [string, string, string];
    await t.db.update(servers).set({ enabled: false }).where(eq(servers.id, off));
    await t.db.delete(servers).where(eq(servers.id, gone));
    const before = await health(off);
    const res = await recordProbeResults(t.db, [
      { serverId: off, result: fail(), thresholds: th(1), nowMs: BASE + 10 },
      { serverId: gone, result: fail(), thresholds: th(1), nowMs: BASE + 10 },
      { serverId: randomUUID(), result: fail(), thresholds: th(1), nowMs: BASE + 10 },
      { serverId: on, result: fail("down"), thresholds: th(1), nowMs: BASE + 10 },
    ]);
    expect(await health(off)).toEqual(before);
    expect(await health(gone)).toBeUndefined();
    expect(await health(on)).toMatchObject({ status: "probe-failing", lastProbeReason: "down" });
    expect([...res.recomputed.keys()]).toEqual([on]);
    // A disabled server with no health row yet gets one (as one by one), and nothing else.
    const g = await fleet("off-new", 1, false);
    await t.db.update(servers).set({ enabled: false }).where(eq(servers.id, g.ids[0]!));
    expect(await recordProbeResult(t.db, g.ids[0]!, ok(), th(), BASE)).toBeNull();
    expect(await health(g.ids[0]!)).toMatchObject({ status: "pending", lastProbeAt: null, everSucceeded: false });
  });

  it("successes that change no status input skip the recompute; any other result in the fold makes it", async () => {
    const f = await fleet("skip", 5);
    for (const id of f.ids) await recordProbeResult(t.db, id, ok(), th(3), BASE + 1);
    await recordProbeResult(t.db, f.ids[4]!, fail(), th(1), BASE + 2);
    expect(await health(f.ids[4]!)).toMatchObject({ status: "probe-failing", probeHealthy: false });
    // A stored status that a recompute would correct shows whether one ran.
    await t.db.update(serverHealth).set({ status: "unavailable", statusReason: "stale" }).where(inArray(serverHealth.serverId, f.ids));
    const [quiet, twice, failedThenOk, failing, recovering] = f.ids as [string, string, string, string, string];
    const res = await recordProbeResults(t.db, [
      { serverId: quiet, result: ok(5), thresholds: th(3), nowMs: BASE + 100 },
      { serverId: twice, result: ok(5), thresholds: th(3), nowMs: BASE + 100 },
      { serverId: twice, result: ok(6), thresholds: th(3), nowMs: BASE + 101 },
      { serverId: failedThenOk, result: fail(), thresholds: th(3), nowMs: BASE + 100 },
      { serverId: failedThenOk, result: ok(), thresholds: th(3), nowMs: BASE + 101 },
      { serverId: failing, result: fail(), thresholds: th(3), nowMs: BASE + 100 },
      // The first success moves the verdict; the second alone would change nothing.
      { serverId: recovering, result: ok(), thresholds: th(3), nowMs: BASE + 100 },
      { serverId: recovering, result: ok(), thresholds: th(3), nowMs: BASE + 101 },
    ]);
    expect([...res.recomputed.keys()].sort()).toEqual([failedThenOk, failing, recovering].sort());
    expect(await health(recovering)).toMatchObject({ status: "healthy", probeHealthy: true, probeOkStreak: 2 });
    expect(await health(quiet)).toMatchObject({ status: "unavailable", statusReason: "stale", probeOkStreak: 2, lastProbeLatencyMs: 5 });
    expect(await health(twice)).toMatchObject({ status: "unavailable", statusReason: "stale", probeOkStreak: 3, lastProbeLatencyMs: 6 });
    expect(await health(failedThenOk)).toMatchObject({ status: "healthy", statusReason: "All checks pass.", probeOkStreak: 1 });
    expect(await health(failing)).toMatchObject({ status: "healthy", statusReason: "All checks pass.", probeFailStreak: 1 });
  });

  describe("ProbeResultBatcher", () => {
    /**
     * Waits until the queue is empty and the write that took its last results has ended: a
     * batch leaves the queue when its write starts, so an empty queue alone may still be writing.
     */
    async function storedAll(batcher: ProbeResultBatcher): Promise<void> {
      await expect.poll(() => batcher.size).toBe(0);
      await batcher.flush();
    }

    const item = (serverId: string, result: ProbeResultLike, nowMs: number, thresholds = th(2)): ProbeResultToRecord => ({ serverId, result: { ...result, atMs: nowMs }, thresholds, nowMs });

    it("writes after flushMs, at once when flushAt results wait, and publishes the clusters whose status changed", async () => {
      const f = await fleet("timer", 3);
      const changed: string[][] = [];
      let transactions = 0;
      const db = faultyDb(t.db, () => {
        transactions++;
        return null;
      });
      const slow = new ProbeResultBatcher({ db, flushMs: 60_000, flushAt: 3, onChanged: (c) => changed.push([...c]) });
      slow.push(item(f.ids[0]!, fail(), BASE, th(1)));
      slow.push(item(f.ids[1]!, ok(), BASE));
      // Not written on their own: the one transaction below, after the third, holds all three.
      expect(slow.size).toBe(2);
      expect(transactions).toBe(0);
      slow.push(item(f.ids[2]!, ok(), BASE));
      await expect.poll(() => slow.size).toBe(0);
      await slow.flush();
      expect(transactions).toBe(1);
      // One status changed (healthy → probe-failing): published once for the cluster.
      expect(changed).toEqual([[f.clusterId]]);
      expect(await health(f.ids[0]!)).toMatchObject({ status: "probe-failing" });
      expect(await health(f.ids[1]!)).toMatchObject({ status: "healthy", everSucceeded: true });

      const fast = new ProbeResultBatcher({ db, flushMs: 20 });
      fast.push(item(f.ids[0]!, ok(9), BASE + 10));
      fast.push(item(f.ids[0]!, ok(8), BASE + 11));
      await expect.poll(async () => (await health(f.ids[0]!))?.lastProbeLatencyMs).toBe(8);
      expect(transactions).toBe(2);
    });

    it("keeps the results while the database is down and stores them, older first, when it is back", async () => {
      const f = await fleet("outage", 2);
      for (const id of f.ids) await recordProbeResult(t.db, id, ok(), th(2), BASE);
      let down = true;
      let refusedFlushes = 0;
      const changed: string[] = [];
      const warnings: string[] = [];
      const batcher = new ProbeResultBatcher({
        db: faultyDb(t.db, () => {
          if (!down) return null;
          refusedFlushes++;
          return connectionRefused();
        }),
        flushMs: 20,
        onChanged: (c) => changed.push(...c),
        logger: { warn: (_o, m) => warnings.push(m ?? ""), error: () => {} },
      });
      const [s0, s1] = f.ids as [string, string];
      batcher.push(item(s0, fail("older"), BASE + 10));
      batcher.push(item(s1, fail("only"), BASE + 10));
      await batcher.flush();
      expect(batcher.databaseDown).toBe(true);
      expect(batcher.size).toBe(2);
      // Retried at every flush while down, then newer results queue behind the older ones.
      await vi.waitUntil(() => refusedFlushes >= 4, { timeout: 30_000 });
      expect(batcher.size).toBe(2);
      batcher.push(item(s0, fail("newer"), BASE + 20));
      expect(batcher.size).toBe(3);
      expect(await health(s0)).toMatchObject({ probeFailStreak: 0, lastProbeOk: true });
      expect(warnings.filter((w) => /database is down/.test(w))).toHaveLength(1);
      down = false;
      await storedAll(batcher);
      expect(batcher.databaseDown).toBe(false);
      // Both failures, in order: the threshold of 2 is reached, the newer one is the last probe.
      expect(await health(s0)).toMatchObject({ probeFailStreak: 2, probeHealthy: false, status: "probe-failing", lastProbeReason: "newer" });
      expect((await health(s0))!.lastProbeAt!.getTime()).toBe(BASE + 20);
      expect(await health(s1)).toMatchObject({ probeFailStreak: 1, lastProbeReason: "only" });
      expect(changed).toEqual([f.clusterId]);
    });

    it("keeps only the newest results per server while they cannot be stored", async () => {
      const f = await fleet("cap", 2);
      for (const id of f.ids) await recordProbeResult(t.db, id, ok(), th(2), BASE);
      let down = true;
      const batcher = new ProbeResultBatcher({ db: faultyDb(t.db, () => (down ? connectionRefused() : null)), flushMs: 60_000, keepPerServer: 3 });
      const [s0, s1] = f.ids as [string, string];
      batcher.push(item(s0, ok(1), BASE + 1));
      batcher.push(item(s0, ok(2), BASE + 2));
      batcher.push(item(s1, ok(1), BASE + 1));
      await batcher.flush();
      expect(batcher.size).toBe(3);
      // Requeued ahead of these; the cap drops the oldest.
      for (let k = 3; k <= 6; k++) batcher.push(item(s0, ok(k), BASE + k));
      expect(batcher.size).toBe(4);
      down = false;
      await batcher.flush();
      expect(batcher.size).toBe(0);
      // Stored okStreak 1 + the 3 newest successes (4, 5, 6); all six would make 7.
      expect(await health(s0)).toMatchObject({ probeOkStreak: 4, lastProbeLatencyMs: 6 });
      expect((await health(s0))!.lastProbeAt!.getTime()).toBe(BASE + 6);
      expect(await health(s1)).toMatchObject({ probeOkStreak: 2, lastProbeLatencyMs: 1 });
    });

    it("writes a batch that met a deadlock again at the next flush", async () => {
      const f = await fleet("deadlock", 1);
      let conflicts = 1;
      const batcher = new ProbeResultBatcher({
        db: faultyDb(t.db, () => (conflicts-- > 0 ? Object.assign(new Error("deadlock detected"), { code: "40P01" }) : null)),
        flushMs: 20,
      });
      batcher.push(item(f.ids[0]!, ok(11), BASE));
      await batcher.flush();
      expect(batcher.size).toBe(1);
      expect(batcher.databaseDown).toBe(false);
      await storedAll(batcher);
      expect(await health(f.ids[0]!)).toMatchObject({ lastProbeLatencyMs: 11 });
    });

    it("logs and drops a batch that fails for another reason; later results are stored", async () => {
      const f = await fleet("boom", 1);
      let broken = true;
      const errors: string[] = [];
      const batcher = new ProbeResultBatcher({
        db: faultyDb(t.db, () => (broken ? new Error("value out of range") : null)),
        flushMs: 60_000,
        logger: { warn: () => {}, error: (_o, m) => errors.push(m ?? "") },
      });
      batcher.push(item(f.ids[0]!, fail(), BASE));
      await batcher.flush();
      expect(batcher.size).toBe(0);
      expect(batcher.databaseDown).toBe(false);
      expect(errors).toEqual(["probe results: storing a batch failed; dropped"]);
      expect(await health(f.ids[0]!)).toMatchObject({ lastProbeAt: null, probeFailStreak: 0 });
      broken = false;
      batcher.push(item(f.ids[0]!, ok(4), BASE + 10));
      await batcher.flush();
      expect(await health(f.ids[0]!)).toMatchObject({ probeFailStreak: 0, probeOkStreak: 1, lastProbeLatencyMs: 4 });
    });

    it("stop() stores what is queued at once, in transactions of at most serversPerFlush servers", async () => {
      const f = await fleet("stop", 5);
      let transactions = 0;
      const batcher = new ProbeResultBatcher({
        db: faultyDb(t.db, () => {
          transactions++;
          return null;
        }),
        flushMs: 60_000,
        serversPerFlush: 2,
      });
      for (const [i, id] of f.ids.entries()) batcher.push(item(id, ok(i), BASE));
      batcher.push(item(f.ids[0]!, ok(10), BASE + 1));
      await batcher.stop();
      expect(batcher.size).toBe(0);
      expect(transactions).toBe(3);
      expect(await health(f.ids[0]!)).toMatchObject({ probeOkStreak: 2, lastProbeLatencyMs: 10 });
      for (const [i, id] of f.ids.entries()) if (i > 0) expect(await health(id)).toMatchObject({ probeOkStreak: 1, lastProbeLatencyMs: i });
    });
  });
});
