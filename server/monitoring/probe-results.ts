/**
 * Probe results in the database: each folded through the streak machine (probe-streak.ts),
 * then the status recomputed (status.ts), many at once in one transaction.
 */
import "server-only";
import { eq, inArray, sql } from "drizzle-orm";
import type { Db } from "@/db/client";
import { pgArray } from "@/db/pg-array";
import { serverHealth, servers } from "@/db/schema";
import { applyProbeResult, type ProbeResultLike, type ProbeStreakState } from "./probe-streak";
import { recomputeServers, type RecomputeResult } from "./status";

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export type ProbeThresholdsLike = { unhealthyThreshold: number; healthyThreshold: number };

/** One probe result to store: `nowMs` is when it was taken in (updatedAt, the status's clock). */
export interface ProbeResultToRecord {
  serverId: string;
  result: ProbeResultLike & { atMs?: number };
  thresholds: ProbeThresholdsLike;
  nowMs: number;
}

export interface RecordedProbes {
  /** Servers whose status was recomputed (absent: disabled, gone, or a success that changed no status input). */
  recomputed: Map<string, RecomputeResult>;
  /** Clusters with a server whose status changed: publish "health" for them. */
  changedClusters: Set<string>;
}

/**
 * Folds one probe result into the stored streak and recomputes the status. Returns null (and
 * stores nothing) for a disabled server, and null for a success that leaves every status
 * input as it was. A batch of one: see recordProbeResults.
 */
export async function recordProbeResult(
  db: Db,
  serverId: string,
  result: ProbeResultLike & { atMs?: number },
  thresholds: ProbeThresholdsLike,
  nowMs = Date.now(),
): Promise<RecomputeResult | null> {
  const { recomputed } = await recordProbeResults(db, [{ serverId, result, thresholds, nowMs }]);
  return recomputed.get(serverId) ?? null;
}

/**
 * Stores probe results, in order, in one transaction with a fixed number of set-based
 * statements however many there are (the prober's results are queued and flushed together by
 * ProbeResultBatcher: one transaction per result kept PGlite, which runs in the app's event
 * loop, busy for a few ms each). Per server, as one recordProbeResult after the other:
 * - its health row is created if missing; a disabled (or deleted) server's results are dropped:
 *   a probe under way when the operator disabled the server is not stored;
 * - the results are folded through the streak machine in order, and the last one is the
 *   server's last probe;
 * - the status is recomputed once, at the last result's nowMs, unless every result was a
 *   success that changed no status input (probe already healthy, no failure streak to clear):
 *   most probes are these. Statuses a server passed through within one batch are not stored
 *   (as for agent reports); with one result per server per batch, the usual case, the rows
 *   are those of recordProbeResult one by one.
 * Rows are locked in server id order, so concurrent batches cannot deadlock on them.
 */
export async function recordProbeResults(db: Db, items: readonly ProbeResultToRecord[]): Promise<RecordedProbes> {
  const out: RecordedProbes = { recomputed: new Map(), changedClusters: new Set() };
  if (items.length === 0) return out;
  const serverIds = [...new Set(items.map((i) => i.serverId))].sort(byId);
  await db.transaction(async (tx) => {
    const locked = (ids: string[]) =>
      tx
        .select({ health: serverHealth, enabled: servers.enabled })
        .from(serverHealth)
        .innerJoin(servers, eq(servers.id, serverHealth.serverId))
        .where(inArray(serverHealth.serverId, ids))
        .orderBy(serverHealth.serverId)
        .for("update", { of: serverHealth });
    const rows = await locked(serverIds);
    const found = new Set(rows.map((r) => r.health.serverId));
    const missing = serverIds.filter((id) => !found.has(id));
    if (missing.length > 0) {
      // Servers created elsewhere may lack a health row; ids of deleted servers get none.
      await tx.execute(sql`insert into ${serverHealth} (server_id) select id from ${servers} where id = any(${pgArray(missing)}::uuid[]) order by id on conflict do nothing`);
      rows.push(...(await locked(missing)));
    }
    const before = new Map(rows.filter((r) => r.enabled).map((r) => [r.health.serverId, r.health]));

    // Fold every server's results in order (pure), noting whether any of them needs the status.
    const folded = new Map<string, { state: ProbeStreakState; last: ProbeResultToRecord; recompute: boolean }>();
    for (const it of items) {
      const h = before.get(it.serverId);
      if (!h) continue;
      const f = folded.get(it.serverId);
      const prev: ProbeStreakState = f?.state ?? {
        consecutiveFailures: h.probeFailStreak,
        consecutiveSuccesses: h.probeOkStreak,
        probeHealthy: h.probeHealthy,
        everSucceeded: h.everSucceeded,
        lastResult: null,
      };
      const next = applyProbeResult(prev, it.result, it.thresholds);
      // A success on a server whose probe was already healthy, with no failure streak to clear,
      // changes no input of its status or its reason: nothing to recompute (what time changes,
      // such as a silent agent, is the sweep's).
      const unchanged = it.result.ok && prev.probeHealthy === true && next.probeHealthy === true && prev.consecutiveFailures === 0 && prev.everSucceeded === next.everSucceeded;
      folded.set(it.serverId, { state: next, last: it, recompute: (f?.recompute ?? false) || !unchanged });
    }
    if (folded.size === 0) return;

    const ids = [...folded.keys()];
    const col = <T extends string | number | boolean | null>(fn: (f: { state: ProbeStreakState; last: ProbeResultToRecord }) => T) => pgArray(ids.map((id) => fn(folded.get(id)!)));
    await tx.execute(sql`
      update ${serverHealth} as h set
        probe_fail_streak = v.fail_streak,
        probe_ok_streak = v.ok_streak,
        probe_healthy = v.healthy,
        ever_succeeded = v.ever_succeeded,
        last_probe_at = v.probe_at,
        last_probe_ok = v.ok,
        last_probe_code = v.code,
        last_probe_latency_ms = v.latency_ms,
        last_probe_reason = v.reason,
        updated_at = v.at
      from unnest(${pgArray(ids)}::uuid[], ${col((f) => f.state.consecutiveFailures)}::integer[], ${col((f) => f.state.consecutiveSuccesses)}::integer[],
        ${col((f) => f.state.probeHealthy)}::boolean[], ${col((f) => f.state.everSucceeded)}::boolean[],
        ${col((f) => new Date(f.last.result.atMs ?? f.last.nowMs).toISOString())}::timestamptz[], ${col((f) => f.last.result.ok)}::boolean[],
        ${col((f) => f.last.result.code ?? null)}::integer[], ${col((f) => f.last.result.latencyMs ?? null)}::real[],
        ${col((f) => f.last.result.reason ?? null)}::text[], ${col((f) => new Date(f.last.nowMs).toISOString())}::timestamptz[])
        as v(id, fail_streak, ok_streak, healthy, ever_succeeded, probe_at, ok, code, latency_ms, reason, at)
      where h.server_id = v.id`);

    const todo = ids.filter((id) => folded.get(id)!.recompute);
    // The first success ever (of probe and agent alike) is in this batch: leaving a down
    // status is then no recovery, and no server.up alert.
    const firstSuccess = new Set(todo.filter((id) => {
      const h = before.get(id)!;
      return !h.everSucceeded && !h.reportEverHealthy && folded.get(id)!.state.everSucceeded;
    }));
    out.recomputed = await recomputeServers(tx, todo, (id) => folded.get(id)!.last.nowMs, undefined, firstSuccess);
  });
  for (const r of out.recomputed.values()) if (r.changed) out.changedClusters.add(r.clusterId);
  return out;
}

