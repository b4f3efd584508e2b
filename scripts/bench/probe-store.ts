/**
 * CPU cost of storing active-probe results on PGlite (which runs in the app's event loop):
 * one transaction per result against batches (recordProbeResults), side by side in one run.
 *
 *   node --conditions=react-server --import tsx scripts/bench/probe-store.ts [results] [servers]
 *
 * Each method gets its own fleet of `servers` (default 500) healthy, reporting servers and
 * stores `results` (default 2,000) results over them, round after round in a shuffled order:
 * - "one transaction each (before batching)": the previous recordProbeResult, kept here to
 *   compare against;
 * - "recordProbeResult": today's one-result form (a batch of one);
 * - "batches of N": recordProbeResults over N results at a time.
 * Two workloads: every probe succeeds (an idle fleet, as in `npm run bench`), and 10 % fail.
 * Prints CPU ms per result (process.cpuUsage: user + system) and wall ms per result.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { eq } from "drizzle-orm";
import { openDatabase, type Db } from "@/db/client";
import { clusters, serverHealth, servers } from "@/db/schema";
import { hashAgentToken } from "@/server/auth/tokens";
import { mulberry32 } from "@/scripts/simulator/prng";
import { applyReports } from "@/server/dataplane/reports";
import { recomputeServer, type RecomputeResult } from "@/server/monitoring/status";
import { recordProbeResult, recordProbeResults, type ProbeResultToRecord } from "@/server/monitoring/probe-results";
import { applyProbeResult, type ProbeResultLike } from "@/server/monitoring/probe-streak";

const RESULTS = Number(process.argv[2] ?? 2000);
const SERVERS = Number(process.argv[3] ?? 500);
const TH = { unhealthyThreshold: 3, healthyThreshold: 1 };

/** recordProbeResult as it was before batching: one transaction and four statements per result. */
async function legacyRecordProbeResult(db: Db, serverId: string, result: ProbeResultLike & { atMs?: number }, thresholds: typeof TH, nowMs: number): Promise<RecomputeResult | null> {
  return db.transaction(async (tx) => {
    const locked = async () =>
      (await tx.select({ health: serverHealth, enabled: servers.enabled }).from(serverHealth).innerJoin(servers, eq(servers.id, serverHealth.serverId)).where(eq(serverHealth.serverId, serverId)).for("update", { of: serverHealth }))[0];
    let row = await locked();
    if (!row) {
      await tx.insert(serverHealth).values({ serverId }).onConflictDoNothing();
      row = await locked();
    }
    if (!row || !row.enabled) return null;
    const h = row.health;
    const next = applyProbeResult({ consecutiveFailures: h.probeFailStreak, consecutiveSuccesses: h.probeOkStreak, probeHealthy: h.probeHealthy, everSucceeded: h.everSucceeded, lastResult: null }, result, thresholds);
    await tx
      .update(serverHealth)
      .set({
        probeFailStreak: next.consecutiveFailures,
        probeOkStreak: next.consecutiveSuccesses,
        probeHealthy: next.probeHealthy,
        everSucceeded: next.everSucceeded,
        lastProbeAt: new Date(result.atMs ?? nowMs),
        lastProbeOk: result.ok,
        lastProbeCode: result.code ?? null,
        lastProbeLatencyMs: result.latencyMs ?? null,
        lastProbeReason: result.reason ?? null,
        updatedAt: new Date(nowMs),
      })
      .where(eq(serverHealth.serverId, serverId));
    if (result.ok && h.probeHealthy === true && next.probeHealthy === true && h.probeFailStreak === 0 && h.everSucceeded === next.everSucceeded) return null;
    return recomputeServer(tx, serverId, nowMs, undefined, !h.everSucceeded && !h.reportEverHealthy && next.everSucceeded);
  });
}


/** A fleet of healthy servers: each has reported and passed one probe. */
async function seedFleet(db: Db, name: string, n: number, nowMs: number): Promise<string[]> {
  const [c] = await db.insert(clusters).values({ name, reportIntervalS: 3600 }).returning();
  const rows = await db
    .insert(servers)
    .values(Array.from({ length: n }, (_, i) => ({ clusterId: c!.id, name: `${name}-${i}`, address: "127.0.0.1", agentTokenHash: hashAgentToken(`${name}-${i}`) })))
    .returning({ id: servers.id });
  const ids = rows.map((r) => r.id);
  const report = { listenerAlive: true, serviceRunning: true, usersOnline: 1, rxBps: 1000, txBps: 1000, cpu: 1, memory: 1, neighbours: [] };
  for (let k = 0; k < ids.length; k += 50) {
    await db.transaction((tx) => applyReports(tx, ids.slice(k, k + 50).map((serverId) => ({ server: { serverId, clusterId: c!.id }, report, nowMs }))));
  }
  await recordProbeResults(db, ids.map((serverId) => ({ serverId, result: { ok: true, code: 200, latencyMs: 2, reason: "status 200" }, thresholds: TH, nowMs })));
  return ids;
}

/** `count` results, round after round over the fleet in a shuffled order. */
function workload(ids: string[], count: number, failRate: number, seed: number, nowMs: number): ProbeResultToRecord[] {
  const random = mulberry32(seed);
  const out: ProbeResultToRecord[] = [];
  while (out.length < count) {
    const round = [...ids];
    for (let i = round.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [round[i], round[j]] = [round[j]!, round[i]!];
    }
    for (const serverId of round) {
      if (out.length >= count) break;
      const t = nowMs + out.length;
      const ok = random() >= failRate;
      out.push({ serverId, result: ok ? { ok, code: 200, latencyMs: 1 + random() * 20, reason: "status 200", atMs: t } : { ok, latencyMs: 0, reason: "connection refused", atMs: t }, thresholds: TH, nowMs: t });
    }
  }
  return out;
}

interface Method {
  name: string;
  run: (db: Db, items: ProbeResultToRecord[]) => Promise<void>;
}

const oneByOne = (name: string, fn: typeof legacyRecordProbeResult): Method => ({
  name,
  run: async (db, items) => {
    for (const it of items) await fn(db, it.serverId, it.result, it.thresholds, it.nowMs);
  },
});
const batches = (n: number): Method => ({
  name: `batches of ${n}`,
  run: async (db, items) => {
    for (let k = 0; k < items.length; k += n) await recordProbeResults(db, items.slice(k, k + n));
  },
});

const METHODS: Method[] = [oneByOne("one transaction each (before batching)", legacyRecordProbeResult), oneByOne("recordProbeResult (a batch of one)", recordProbeResult), batches(16), batches(65)];

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rb-bench-probe-"));
  const database = await openDatabase({ dataDir: dir });
  const db = database.db;
  const t0 = Date.now();
  try {
    const fleets = new Map<string, string[]>();
    for (const [k, m] of METHODS.entries()) fleets.set(m.name, await seedFleet(db, `bench-${k}`, SERVERS, t0));
    // Warm up every path (JIT, PGlite caches) on a fleet of its own.
    const warm = await seedFleet(db, "warm-up", 100, t0);
    for (const m of METHODS) await m.run(db, workload(warm, 200, 0.1, 7, t0 + 1));

    const table: Array<{ workload: string; method: string; cpuMsPerResult: number; wallMsPerResult: number }> = [];
    let clock = t0 + 10_000;
    for (const [label, failRate] of [
      ["all succeed", 0],
      ["10 % fail", 0.1],
    ] as const) {
      for (const m of METHODS) {
        const items = workload(fleets.get(m.name)!, RESULTS, failRate, 42, clock);
        const cpu0 = process.cpuUsage();
        const w0 = performance.now();
        await m.run(db, items);
        const wall = performance.now() - w0;
        const cpu = process.cpuUsage(cpu0);
        table.push({ workload: label, method: m.name, cpuMsPerResult: (cpu.user + cpu.system) / 1000 / RESULTS, wallMsPerResult: wall / RESULTS });
      }
      clock += RESULTS + 10_000;
    }
    const fmt = (x: number) => x.toFixed(3).padStart(8);
    console.log(`${RESULTS} probe results over ${SERVERS} servers per method, PGlite, node ${process.version}`);
    console.log(`${"workload".padEnd(12)} ${"method".padEnd(40)} ${"CPU ms/res".padStart(10)} ${"wall ms/res".padStart(11)} ${"CPU vs before".padStart(13)}`);
    for (const r of table) {
      const before = table.find((x) => x.workload === r.workload && x.method === METHODS[0]!.name)!;
      console.log(`${r.workload.padEnd(12)} ${r.method.padEnd(40)} ${fmt(r.cpuMsPerResult)}   ${fmt(r.wallMsPerResult)}   ${(before.cpuMsPerResult / r.cpuMsPerResult).toFixed(1).padStart(9)}×`);
    }
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
