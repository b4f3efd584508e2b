/**
 * Monitoring state in the database (DESIGN §3): agent reports, probe results and the status
 * sweep all end in `recomputeServer`, which re-reads one server's stored state under a row
 * lock, runs the pure status machine and writes only what changed. Callers publish the bus
 * events (this module does no I/O but the database).
 */
import "server-only";
import { and, eq, gt, inArray, lt, sql, type SQL } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { pgArray } from "@/db/pg-array";
import { alertEvents, clusters, meshChecks, serverAgentState, serverHealth, serverMetrics, serverMetricsHistory, servers, subscriberTraffic, subscribers, trafficJournal, trafficQuarantine } from "@/db/schema";
import { isDatabaseDown, isTransactionConflict } from "@/server/db-errors";

/** Failures that say nothing about the rows (database away, deadlock): try again later, quarantine nothing. */
const transient = (err: unknown) => isDatabaseDown(err) || isTransactionConflict(err);
import { logger } from "@/server/logger";
import { MAX_USER_BYTES_PER_REPORT, type AgentReportAck } from "@/core/agent-wire";
import { bearerToken } from "@/server/dataplane/agent-auth";
import { counter } from "@/server/metrics";
import { decayPeak, DEFAULT_PEAK_HALF_LIFE_MS } from "@/server/balancer/capacity";
import { hashAgentToken } from "@/server/domain/tokens";
import { emitSubscriberBlocked, enqueueAlerts, recordConfigRejections, recordServerTransitions, type ServerTransition } from "@/server/alerts/outbox";
import { agentReportSchema, effectiveProbeConfig, formatZodError, type AgentReport } from "@/core/monitoring-contract";
import { computeMeshVote, updateObserverLinks, type MeshStreaks, type MeshVerdict, type ObserverLinks } from "./mesh";
import { applyProbeResult, type ProbeResultLike, type ProbeStreakState } from "./probe-streak";
import { computeServerStatus, isHealthyReport, isRecovery, NO_DATA_INTERVALS, type ServerStatus, type ServerStatusResult } from "@/core/status";

/**
 * Largest report body: room for MAX_REPORT_USERS traffic rows (~90 bytes each). Only read
 * after the token is known and within its rate limit, so strangers cannot make us buffer it.
 */
export const REPORT_BODY_LIMIT = 24 * 1024 * 1024;
export const HISTORY_BUCKET_MS = 5 * 60 * 1000;
/** Servers read per statement by the status sweep. */
const SWEEP_PAGE = 250;

export interface RecomputeResult {
  serverId: string;
  clusterId: string;
  status: ServerStatus;
  changed: boolean;
}

/** What the status machine needs of one server, read the same way by recompute and sweep. */
const statusInputColumns = {
  enabled: servers.enabled,
  clusterId: servers.clusterId,
  probeOverride: servers.probeOverride,
  probeConfig: clusters.probeConfig,
  reportIntervalS: clusters.reportIntervalS,
  health: serverHealth,
  reportedAt: serverMetrics.reportedAt,
  listenerAlive: serverMetrics.listenerAlive,
  serviceRunning: serverMetrics.serviceRunning,
};

/**
 * Re-reads one server's state under a row lock, computes its status and writes status,
 * statusSince (only when the status changed), the reason and, when given, the mesh verdict.
 * Must run inside a transaction.
 */
export async function recomputeServer(
  tx: DbOrTx,
  serverId: string,
  nowMs: number,
  mesh?: Pick<MeshVerdict, "unreachable" | "reason">,
  /** The check just recorded is the server's first success ever: leaving a down status is then no recovery. */
  firstSuccess = false,
): Promise<RecomputeResult | null> {
  const [row] = await tx
    .select(statusInputColumns)
    .from(serverHealth)
    .innerJoin(servers, eq(servers.id, serverHealth.serverId))
    .innerJoin(clusters, eq(clusters.id, servers.clusterId))
    .leftJoin(serverMetrics, eq(serverMetrics.serverId, servers.id))
    .where(eq(serverHealth.serverId, serverId))
    .for("update", { of: serverHealth });
  if (!row) return null;
  const h = row.health;
  const meshUnreachable = mesh ? mesh.unreachable : h.meshUnreachable;
  const meshReason = mesh ? mesh.reason : (h.meshReason ?? "");
  const result = statusOf(row, h, { unreachable: meshUnreachable, reason: meshReason }, nowMs);
  const changed = result.status !== h.status;
  const patch: Partial<typeof serverHealth.$inferInsert> = {};
  if (changed) {
    patch.status = result.status;
    patch.statusSince = new Date(nowMs);
    patch.statusReason = result.reason;
    if (!firstSuccess && isRecovery(h.status, result.status)) patch.recoveredAt = new Date(nowMs);
  } else if (result.reason !== h.statusReason && result.status !== "no-data") {
    // no-data's reason counts the seconds of silence: rewritten only with the status
    patch.statusReason = result.reason;
  }
  if (mesh && (mesh.unreachable !== h.meshUnreachable || mesh.reason !== h.meshReason)) {
    patch.meshUnreachable = mesh.unreachable;
    patch.meshReason = mesh.reason;
  }
  if (Object.keys(patch).length > 0) {
    patch.updatedAt = new Date(nowMs);
    await tx.update(serverHealth).set(patch).where(eq(serverHealth.serverId, serverId));
  }
  if (changed) await recordServerTransitions(tx, [{ serverId, clusterId: row.clusterId, from: h.status, to: result.status, reason: result.reason, hadSucceeded: (h.everSucceeded || h.reportEverHealthy) && !firstSuccess }], nowMs);
  return { serverId, clusterId: row.clusterId, status: result.status, changed };
}

/**
 * recomputeServer for many servers at once (agent report batches): one locked read in server
 * id order, and writes only for the servers whose status or reason changed.
 */
export async function recomputeServers(
  tx: DbOrTx,
  serverIds: readonly string[],
  nowOf: (serverId: string) => number,
  meshOf?: (serverId: string) => { unreachable: boolean; reason: string } | undefined,
  /** Servers whose first success ever is in this batch: leaving a down status is then no recovery. */
  firstSuccess: ReadonlySet<string> = new Set(),
): Promise<Map<string, RecomputeResult>> {
  const out = new Map<string, RecomputeResult>();
  if (serverIds.length === 0) return out;
  const rows = await tx
    .select({ id: serverHealth.serverId, ...statusInputColumns })
    .from(serverHealth)
    .innerJoin(servers, eq(servers.id, serverHealth.serverId))
    .innerJoin(clusters, eq(clusters.id, servers.clusterId))
    .leftJoin(serverMetrics, eq(serverMetrics.serverId, servers.id))
    .where(inArray(serverHealth.serverId, [...serverIds]))
    .orderBy(serverHealth.serverId)
    .for("update", { of: serverHealth });
  // One UPDATE for every server whose status or reason moved (status_since only with the status).
  const upd = {
    id: [] as string[],
    status: [] as string[],
    changed: [] as boolean[],
    recovered: [] as boolean[],
    reason: [] as Array<string | null>,
    meshUnreachable: [] as boolean[],
    meshReason: [] as Array<string | null>,
    at: [] as string[],
  };
  const transitions: ServerTransition[] = [];
  let latestMs = 0;
  for (const row of rows) {
    const nowMs = nowOf(row.id);
    const h = row.health;
    const mesh = meshOf?.(row.id);
    const result = statusOf(row, h, mesh ?? { unreachable: h.meshUnreachable, reason: h.meshReason ?? "" }, nowMs);
    const changed = result.status !== h.status;
    if (changed) {
      transitions.push({ serverId: row.id, clusterId: row.clusterId, from: h.status, to: result.status, reason: result.reason, hadSucceeded: (h.everSucceeded || h.reportEverHealthy) && !firstSuccess.has(row.id) });
      latestMs = Math.max(latestMs, nowMs);
    }
    // As recomputeServer: no-data's reason counts the seconds of silence, rewritten only with the status.
    const reasonMoved = changed || (result.reason !== h.statusReason && result.status !== "no-data");
    const meshMoved = mesh !== undefined && (mesh.unreachable !== h.meshUnreachable || mesh.reason !== h.meshReason);
    if (reasonMoved || meshMoved) {
      upd.id.push(row.id);
      upd.status.push(result.status);
      upd.changed.push(changed);
      upd.recovered.push(changed && !firstSuccess.has(row.id) && isRecovery(h.status, result.status));
      upd.reason.push(reasonMoved ? result.reason : h.statusReason);
      upd.meshUnreachable.push(meshMoved ? mesh.unreachable : h.meshUnreachable);
      upd.meshReason.push(meshMoved ? mesh.reason : h.meshReason);
      upd.at.push(new Date(nowMs).toISOString());
    }
    out.set(row.id, { serverId: row.id, clusterId: row.clusterId, status: result.status, changed });
  }
  if (upd.id.length > 0) {
    await tx.execute(sql`
      update ${serverHealth} as h set
        status = v.status,
        status_since = case when v.changed then v.at else h.status_since end,
        recovered_at = case when v.recovered then v.at else h.recovered_at end,
        status_reason = v.reason,
        mesh_unreachable = v.mesh_unreachable,
        mesh_reason = v.mesh_reason,
        updated_at = v.at
      from unnest(${pgArray(upd.id)}::uuid[], ${pgArray(upd.status)}::text[], ${pgArray(upd.changed)}::boolean[],
        ${pgArray(upd.recovered)}::boolean[], ${pgArray(upd.reason)}::text[], ${pgArray(upd.meshUnreachable)}::boolean[],
        ${pgArray(upd.meshReason)}::text[], ${pgArray(upd.at)}::timestamptz[]) as v(id, status, changed, recovered, reason, mesh_unreachable, mesh_reason, at)
      where h.server_id = v.id`);
  }
  // Alerts for the changes, in this transaction (server/alerts/outbox.ts).
  await recordServerTransitions(tx, transitions, latestMs);
  return out;
}

// ---------------------------------------------------------------------------
// Agent reports
// ---------------------------------------------------------------------------

export type ReportOutcome =
  | { httpStatus: 401 | 400 | 413; body: { error: string } }
  | {
      httpStatus: 200;
      body: AgentReportAck;
      clusterId: string;
      serverId: string;
      statusChanged: boolean;
    };

export interface ReportingServer {
  serverId: string;
  clusterId: string;
}

const quarantined = counter("routeboard_traffic_quarantined_total", "Traffic journal rows a fold could not apply, moved to traffic_quarantine (issue 21)");

const implausible = counter("routeboard_agent_reports_implausible_total", "Agent reports refused: per-user bytes beyond the server's report capacity (issue 21)");

const unknownUsers = counter(
  "routeboard_agent_unknown_users_total",
  "Per-user traffic rows of agent reports naming no subscriber of the server's cluster (ignored)",
);

/** The server a bearer token belongs to (one query; the HTTP route uses a cache instead). */
async function serverOfToken(db: Db, authorization: string | undefined): Promise<ReportingServer | null> {
  const token = bearerToken(authorization);
  if (!token) return null;
  const [server] = await db
    .select({ serverId: servers.id, clusterId: servers.clusterId })
    .from(servers)
    .where(eq(servers.agentTokenHash, hashAgentToken(token)));
  return server ?? null;
}

/** Parses a report body: the report, or the 400 that names the field. */
export function parseReport(rawBody: string): { report: AgentReport } | { error: string } {
  let json: unknown;
  try {
    json = JSON.parse(rawBody);
  } catch {
    return { error: "(root): body is not valid JSON" };
  }
  const parsed = agentReportSchema.safeParse(json);
  if (!parsed.success) return { error: formatZodError(parsed.error) };
  return { report: storableReport(parsed.data) };
}

/**
 * Below this a measurement is zero. PostgreSQL refuses floats that underflow its column
 * (`real` below ~1e-38, denormal doubles), so a schema-valid `cpu: 1e-123` was a 500
 * (found by the fuzz suite); nothing real is measured that small.
 */
const FLOAT_FLOOR = 1e-30;
const storableFloat = (v: number) => (Math.abs(v) < FLOAT_FLOOR ? 0 : v);

function storableReport(r: AgentReport): AgentReport {
  return {
    ...r,
    rxBps: storableFloat(r.rxBps),
    txBps: storableFloat(r.txBps),
    cpu: storableFloat(r.cpu),
    memory: storableFloat(r.memory),
    neighbours: r.neighbours.map((n) => (n.rttMs === null ? n : { ...n, rttMs: storableFloat(n.rttMs) })),
  };
}

/**
 * Validates and stores one agent report. Nothing is written on 401/400. On success, in one
 * transaction: see applyReport.
 */
export async function ingestAgentReport(
  db: Db,
  authorization: string | undefined,
  rawBody: string,
  nowMs = Date.now(),
): Promise<ReportOutcome> {
  if (!bearerToken(authorization)) return { httpStatus: 401, body: { error: "missing bearer token: send Authorization: Bearer <agent token>" } };
  const server = await serverOfToken(db, authorization);
  if (!server) return { httpStatus: 401, body: { error: "unknown agent token" } };
  const parsed = parseReport(rawBody);
  if ("error" in parsed) return { httpStatus: 400, body: { error: parsed.error } };
  const applied = await db.transaction((tx) => applyReport(tx, server, parsed.report, nowMs));
  return reportOutcome(server, applied);
}

export interface AppliedReport {
  status: ServerStatus;
  statusChanged: boolean;
  duplicate: boolean;
  unknownUsers: number;
  /** Why the report was refused (400, nothing stored): its per-user bytes are implausible. */
  refused?: string;
}

export function reportOutcome(server: ReportingServer, a: AppliedReport): ReportOutcome {
  if (a.refused !== undefined) return { httpStatus: 400, body: { error: a.refused } };
  const body: AgentReportAck = { ok: true, status: a.status };
  if (a.duplicate) body.duplicate = true;
  if (a.unknownUsers > 0) body.unknownUsers = a.unknownUsers;
  return { httpStatus: 200, body, clusterId: server.clusterId, serverId: server.serverId, statusChanged: a.statusChanged };
}

/** Stores one validated report; call inside a transaction. See applyReports. */
export async function applyReport(tx: DbOrTx, server: ReportingServer, report: AgentReport, nowMs: number): Promise<AppliedReport> {
  return (await applyReports(tx, [{ server, report, nowMs }]))[0]!;
}

export interface ReportToApply {
  server: ReportingServer;
  report: AgentReport;
  nowMs: number;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** UTC day of a timestamp, as the date column stores it. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}


const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Stores validated reports, in order, inside the caller's transaction, with a fixed number
 * of set-based statements however many reports and users there are (group commit: see
 * server/dataplane/report-batcher.ts). Reports of one server are folded in order:
 * - agent state and the exactly-once check: the same instance with seq ≤ the stored (or an
 *   earlier report's) seq is a duplicate, and its traffic is not added; a new instance starts
 *   its own sequence. Fields a report leaves out keep their stored values;
 * - latest metrics (+ learned peak), the 5-minute history bucket, the mesh links,
 *   reportEverHealthy, then the status once per server;
 * - per-user traffic: one traffic_journal row for the batch, summed per subscriber and per
 *   (subscriber, server, UTC day), committed with the seq above (exactly once, durable before
 *   the ack); foldTrafficTotals and foldTrafficDays apply it. Emails that are no subscriber of
 *   the server's cluster are ignored and counted.
 * Rows are locked in server id order, so concurrent batches (other instances) cannot deadlock
 * on them.
 */
export async function applyReports(tx: DbOrTx, items: readonly ReportToApply[]): Promise<AppliedReport[]> {
  if (items.length === 0) return [];
  const refusals = await implausibleReports(tx, items);
  if (refusals.size === 0) return applyPlausible(tx, items);
  // Refused reports change nothing (but the alert); the rest of the batch goes on.
  const ok = items.filter((it) => !refusals.has(it));
  const applied = await applyPlausible(tx, ok);
  const byItem = new Map(ok.map((it, k) => [it, applied[k]!]));
  return items.map((it) => byItem.get(it) ?? { status: "pending", statusChanged: false, duplicate: false, unknownUsers: 0, refused: refusals.get(it) });
}

/**
 * Per-user bytes a report may carry (issue 21): what the server's report capacity moves in the
 * time since its previous accepted report (traffic an agent kept while the panel was away
 * comes in one report, so the window is the real gap), plus one report interval of slack for
 * clocks and jitter; never above the schema's absolute MAX_USER_BYTES_PER_REPORT. Each of up
 * and down is checked (links are full duplex).
 */
export function reportByteBound(capacityMbps: number, elapsedMs: number, reportIntervalS: number): number {
  const windowS = Math.max(0, elapsedMs) / 1000 + reportIntervalS;
  return Math.min(MAX_USER_BYTES_PER_REPORT, Math.floor(((capacityMbps * 1e6) / 8) * windowS));
}

/**
 * The reports of a batch whose per-user bytes exceed reportByteBound, with the 400's text
 * naming the row; raises server.report_implausible for their servers (at most once per server
 * per report interval), in the batch's transaction.
 */
async function implausibleReports(tx: DbOrTx, items: readonly ReportToApply[]): Promise<Map<ReportToApply, string>> {
  const out = new Map<ReportToApply, string>();
  const withUsers = items.filter((it) => (it.report.users?.length ?? 0) > 0);
  if (withUsers.length === 0) return out;
  const ids = [...new Set(withUsers.map((i) => i.server.serverId))];
  const rows = await tx
    .select({
      id: servers.id,
      name: servers.name,
      address: servers.address,
      clusterId: servers.clusterId,
      capacityMbps: servers.reportCapacityMbps,
      createdAt: servers.createdAt,
      reportedAt: serverMetrics.reportedAt,
      intervalS: clusters.reportIntervalS,
      instance: serverAgentState.instance,
      seq: serverAgentState.seq,
    })
    .from(servers)
    .innerJoin(clusters, eq(clusters.id, servers.clusterId))
    .leftJoin(serverMetrics, eq(serverMetrics.serverId, servers.id))
    .leftJoin(serverAgentState, eq(serverAgentState.serverId, servers.id))
    .where(inArray(servers.id, ids));
  const info = new Map(rows.map((r) => [r.id, r]));
  const lastMs = new Map(rows.map((r) => [r.id, (r.reportedAt ?? r.createdAt).getTime()]));
  const alerts = new Map<string, { row: (typeof rows)[number]; k: number; bytes: number; bound: number; nowMs: number }>();
  for (const it of items) {
    const r = info.get(it.server.serverId);
    if (!r) continue;
    const users = it.report.users;
    // A report already counted (same instance, seq not newer: a resend whose ack was lost) adds
    // nothing, so its amounts are not judged against the time since its own first delivery.
    const dup = it.report.instance !== undefined && it.report.seq !== undefined && r.instance === it.report.instance && r.seq !== null && it.report.seq <= r.seq;
    if (users && users.length > 0 && !dup) {
      const bound = reportByteBound(r.capacityMbps, it.nowMs - lastMs.get(r.id)!, r.intervalS);
      let bad = -1;
      for (let k = 0; k < users.length; k++) {
        if (users[k]!.up > bound || users[k]!.down > bound) {
          bad = k;
          break;
        }
      }
      if (bad >= 0) {
        const u = users[bad]!;
        const field = u.up > bound ? "up" : "down";
        const bytes = u[field];
        const windowS = Math.round((it.nowMs - lastMs.get(r.id)!) / 1000 + r.intervalS);
        out.set(
          it,
          `users[${bad}].${field}: ${bytes} bytes is more than this server's report capacity (${r.capacityMbps} Mbit/s) moves in ${windowS} s since its previous report (at most ${bound} bytes): report refused, nothing stored`,
        );
        if (!alerts.has(r.id)) alerts.set(r.id, { row: r, k: bad, bytes, bound, nowMs: it.nowMs });
        continue;
      }
    }
    lastMs.set(r.id, it.nowMs);
  }
  for (const a of alerts.values()) {
    implausible.inc();
    // At most once per server per report interval (across instances: the outbox is the record).
    const since = new Date(a.nowMs - a.row.intervalS * 1000).toISOString();
    const recent = rowsOf<{ n: number }>(
      await tx.execute(sql`select count(*)::int as n from ${alertEvents} where type = 'server.report_implausible' and occurred_at > ${since}::timestamptz and data->'server'->>'id' = ${a.row.id}`),
    )[0];
    if ((recent?.n ?? 0) > 0) continue;
    await enqueueAlerts(
      tx,
      [
        {
          type: "server.report_implausible",
          clusterId: a.row.clusterId,
          data: { server: { id: a.row.id, name: a.row.name, address: a.row.address }, row: a.k, bytes: a.bytes, boundBytes: a.bound, capacityMbps: a.row.capacityMbps },
        },
      ],
      a.nowMs,
    );
  }
  return out;
}

async function applyPlausible(tx: DbOrTx, items: readonly ReportToApply[]): Promise<AppliedReport[]> {
  if (items.length === 0) return [];
  const serverIds = [...new Set(items.map((i) => i.server.serverId))].sort(byId);
  const clusterOf = new Map(items.map((i) => [i.server.serverId, i.server.clusterId]));
  const ids = pgArray(serverIds);

  await tx.execute(sql`insert into ${serverHealth} (server_id) select unnest(${ids}::uuid[]) on conflict do nothing`);

  // --- agent state and exactly-once ------------------------------------------------------
  const stateRows = await tx.select().from(serverAgentState).where(inArray(serverAgentState.serverId, serverIds)).orderBy(serverAgentState.serverId).for("update");
  const state = new Map(stateRows.map((r) => [r.serverId, { ...r }]));
  const stateChanged = new Set<string>();
  const rejected = new Map<string, { serverId: string; clusterId: string; error: string }>();
  const duplicate: boolean[] = [];
  for (const { server, report: r, nowMs } of items) {
    const id = server.serverId;
    const prev = state.get(id);
    const dup = r.instance !== undefined && r.seq !== undefined && prev?.instance === r.instance && prev.seq !== null && r.seq <= prev.seq;
    duplicate.push(dup);
    const next: typeof serverAgentState.$inferSelect = prev ?? {
      serverId: id,
      instance: null,
      seq: null,
      configVersion: null,
      configError: null,
      configErrorAt: null,
      unservedInbounds: [],
      coreKind: null,
      coreVersion: null,
      agentVersion: null,
      updatedAt: new Date(nowMs),
    };
    let changed = false;
    if (r.instance !== undefined && r.seq !== undefined && !dup) {
      next.instance = r.instance;
      next.seq = r.seq;
      changed = true;
    }
    if (r.configVersion !== undefined) {
      next.configVersion = r.configVersion;
      changed = true;
    }
    if (r.configError !== undefined && r.configError !== next.configError) {
      next.configError = r.configError;
      next.configErrorAt = r.configError === null ? null : new Date(nowMs);
      changed = true;
      if (r.configError === null) rejected.delete(id);
      else rejected.set(id, { serverId: id, clusterId: server.clusterId, error: r.configError });
    }
    if (r.unservedInbounds !== undefined) {
      next.unservedInbounds = r.unservedInbounds;
      changed = true;
    }
    if (r.core !== undefined) {
      next.coreKind = r.core.kind;
      next.coreVersion = r.core.version;
      changed = true;
    }
    if (r.agentVersion !== undefined) {
      next.agentVersion = r.agentVersion;
      changed = true;
    }
    if (changed) {
      next.updatedAt = new Date(nowMs);
      stateChanged.add(id);
    }
    state.set(id, next);
  }
  if (stateChanged.size > 0) {
    const s = serverAgentState;
    await tx
      .insert(s)
      .values([...stateChanged].sort(byId).map((id) => state.get(id)!))
      .onConflictDoUpdate({
        target: s.serverId,
        set: {
          instance: sql`excluded.instance`,
          seq: sql`excluded.seq`,
          configVersion: sql`excluded.config_version`,
          configError: sql`excluded.config_error`,
          configErrorAt: sql`excluded.config_error_at`,
          unservedInbounds: sql`excluded.unserved_inbounds`,
          coreKind: sql`excluded.core_kind`,
          coreVersion: sql`excluded.core_version`,
          agentVersion: sql`excluded.agent_version`,
          updatedAt: sql`excluded.updated_at`,
        },
      });
  }
  // A newly rejected config is an alert (once per distinct error, not per report).
  if (rejected.size > 0) await recordConfigRejections(tx, [...rejected.values()], items.reduce((m, i) => Math.max(m, i.nowMs), 0));

  // --- metrics, history, everHealthy -----------------------------------------------------
  const prevMetrics = new Map(
    (await tx.select({ serverId: serverMetrics.serverId, peakBps: serverMetrics.peakBps, reportedAt: serverMetrics.reportedAt }).from(serverMetrics).where(inArray(serverMetrics.serverId, serverIds))).map(
      (m) => [m.serverId, { peakBps: m.peakBps, atMs: m.reportedAt.getTime() }],
    ),
  );
  const latest = new Map<string, typeof serverMetrics.$inferInsert>();
  const buckets = new Map<string, { serverId: string; bucketStart: Date; samples: number; users: number; trafficMax: number; trafficSum: number; rxSum: number; txSum: number; cpu: number }>();
  const everHealthy = new Set<string>();
  for (const { server, report: r, nowMs } of items) {
    const id = server.serverId;
    const traffic = Math.max(r.rxBps, r.txBps);
    const prev = prevMetrics.get(id);
    const peak = prev ? Math.max(traffic, decayPeak(prev.peakBps, nowMs - prev.atMs, DEFAULT_PEAK_HALF_LIFE_MS)) : traffic;
    prevMetrics.set(id, { peakBps: peak, atMs: nowMs });
    latest.set(id, {
      serverId: id,
      reportedAt: new Date(nowMs),
      listenerAlive: r.listenerAlive,
      serviceRunning: r.serviceRunning,
      usersOnline: r.usersOnline,
      rxBps: r.rxBps,
      txBps: r.txBps,
      cpu: r.cpu,
      memory: r.memory,
      peakBps: peak,
    });
    const bucketMs = Math.floor(nowMs / HISTORY_BUCKET_MS) * HISTORY_BUCKET_MS;
    const key = `${id}|${bucketMs}`;
    const b = buckets.get(key) ?? { serverId: id, bucketStart: new Date(bucketMs), samples: 0, users: 0, trafficMax: 0, trafficSum: 0, rxSum: 0, txSum: 0, cpu: 0 };
    b.samples++;
    b.users += r.usersOnline;
    b.trafficMax = Math.max(b.trafficMax, traffic);
    b.trafficSum += traffic;
    b.rxSum += r.rxBps;
    b.txSum += r.txBps;
    b.cpu += r.cpu;
    buckets.set(key, b);
    if (isHealthyReport(r)) everHealthy.add(id);
  }
  await tx
    .insert(serverMetrics)
    .values([...latest.values()])
    .onConflictDoUpdate({
      target: serverMetrics.serverId,
      set: {
        reportedAt: sql`excluded.reported_at`,
        listenerAlive: sql`excluded.listener_alive`,
        serviceRunning: sql`excluded.service_running`,
        usersOnline: sql`excluded.users_online`,
        rxBps: sql`excluded.rx_bps`,
        txBps: sql`excluded.tx_bps`,
        cpu: sql`excluded.cpu`,
        memory: sql`excluded.memory`,
        peakBps: sql`excluded.peak_bps`,
      },
    });
  const h = serverMetricsHistory;
  await tx
    .insert(h)
    .values(
      [...buckets.values()].map((b) => ({
        serverId: b.serverId,
        bucketStart: b.bucketStart,
        samples: b.samples,
        usersOnlineAvg: b.users / b.samples,
        trafficBpsMax: b.trafficMax,
        trafficBpsAvg: b.trafficSum / b.samples,
        rxBpsAvg: b.rxSum / b.samples,
        txBpsAvg: b.txSum / b.samples,
        cpuAvg: b.cpu / b.samples,
      })),
    )
    .onConflictDoUpdate({
      target: [h.serverId, h.bucketStart],
      set: {
        samples: sql`${h.samples} + excluded.samples`,
        usersOnlineAvg: sql`(${h.usersOnlineAvg} * ${h.samples} + excluded.users_online_avg * excluded.samples) / (${h.samples} + excluded.samples)`,
        trafficBpsMax: sql`greatest(${h.trafficBpsMax}, excluded.traffic_bps_max)`,
        trafficBpsAvg: sql`(${h.trafficBpsAvg} * ${h.samples} + excluded.traffic_bps_avg * excluded.samples) / (${h.samples} + excluded.samples)`,
        rxBpsAvg: sql`(${h.rxBpsAvg} * ${h.samples} + excluded.rx_bps_avg * excluded.samples) / (${h.samples} + excluded.samples)`,
        txBpsAvg: sql`(${h.txBpsAvg} * ${h.samples} + excluded.tx_bps_avg * excluded.samples) / (${h.samples} + excluded.samples)`,
        cpuAvg: sql`(${h.cpuAvg} * ${h.samples} + excluded.cpu_avg * excluded.samples) / (${h.samples} + excluded.samples)`,
      },
    });
  const firstSuccess = new Set<string>();
  if (everHealthy.size > 0) {
    const flipped = await tx
      .update(serverHealth)
      .set({ reportEverHealthy: true })
      .where(and(inArray(serverHealth.serverId, [...everHealthy]), eq(serverHealth.reportEverHealthy, false)))
      .returning({ id: serverHealth.serverId, everSucceeded: serverHealth.everSucceeded });
    for (const f of flipped) if (!f.everSucceeded) firstSuccess.add(f.id);
  }

  // --- mesh links --------------------------------------------------------------------------
  await storeMeshLinksBatch(tx, items, serverIds);

  // --- status, once per server ---------------------------------------------------------------
  const lastNow = new Map(items.map((i) => [i.server.serverId, i.nowMs]));
  const statuses = await recomputeServers(tx, serverIds, (id) => lastNow.get(id)!, undefined, firstSuccess);

  // --- per-user traffic ------------------------------------------------------------------------
  const traffic = await storeTrafficBatch(
    tx,
    items.filter((_, k) => !duplicate[k]),
    clusterOf,
  );
  if (traffic.unknownTotal > 0) unknownUsers.inc({}, traffic.unknownTotal);

  return items.map((it, k) => {
    const st = statuses.get(it.server.serverId);
    return {
      status: st?.status ?? "pending",
      statusChanged: st?.changed ?? false,
      duplicate: duplicate[k]!,
      unknownUsers: duplicate[k] ? 0 : (traffic.unknownByItem.get(it) ?? 0),
    };
  });
}

/** Mesh links of every observer in the batch: read once, folded in order, written once. */
async function storeMeshLinksBatch(tx: DbOrTx, items: readonly ReportToApply[], serverIds: string[]): Promise<void> {
  const prevRows = await tx.select().from(meshChecks).where(inArray(meshChecks.observerId, serverIds));
  const withChecks = items.filter((i) => i.report.neighbours.length > 0);
  if (prevRows.length === 0 && withChecks.length === 0) return;
  // Only servers of the same cluster are valid targets (unknown ids are ignored, not errors).
  const wanted = [...new Set(withChecks.flatMap((i) => i.report.neighbours.map((n) => n.serverId)))];
  const targetCluster = new Map<string, string>();
  for (let k = 0; k < wanted.length; k += 10_000) {
    const rows = await tx.select({ id: servers.id, clusterId: servers.clusterId }).from(servers).where(inArray(servers.id, wanted.slice(k, k + 10_000)));
    for (const r of rows) targetCluster.set(r.id, r.clusterId);
  }
  const links = new Map<string, ObserverLinks>();
  for (const p of prevRows) {
    const o = links.get(p.observerId) ?? {};
    Object.defineProperty(o, p.targetId, { value: { failStreak: p.failStreak, lastOk: p.lastOk }, enumerable: true, writable: true, configurable: true });
    links.set(p.observerId, o);
  }
  const rtt = new Map<string, Map<string, number | null>>();
  const checkedAt = new Map<string, number>();
  const touched = new Set<string>();
  for (const { server, report, nowMs } of items) {
    const id = server.serverId;
    const checks = report.neighbours.filter((n) => n.serverId !== id && targetCluster.get(n.serverId) === server.clusterId);
    links.set(id, updateObserverLinks(links.get(id), id, checks));
    rtt.set(id, new Map(checks.map((c) => [c.serverId, c.rttMs])));
    checkedAt.set(id, nowMs);
    touched.add(id);
  }
  const observers = [...touched].sort(byId);
  await tx.delete(meshChecks).where(inArray(meshChecks.observerId, observers));
  const obs: string[] = [];
  const tgt: string[] = [];
  const ok: boolean[] = [];
  const streak: number[] = [];
  const rtts: Array<number | null> = [];
  const at: string[] = [];
  for (const o of observers) {
    const l = links.get(o) ?? {};
    for (const t of Object.keys(l).sort(byId)) {
      obs.push(o);
      tgt.push(t);
      ok.push(l[t]!.lastOk);
      streak.push(l[t]!.failStreak);
      rtts.push(rtt.get(o)?.get(t) ?? null);
      at.push(new Date(checkedAt.get(o)!).toISOString());
    }
  }
  if (obs.length === 0) return;
  await tx.execute(sql`
    insert into ${meshChecks} (observer_id, target_id, last_ok, fail_streak, rtt_ms, checked_at)
    select * from unnest(${pgArray(obs)}::uuid[], ${pgArray(tgt)}::uuid[], ${pgArray(ok)}::boolean[], ${pgArray(streak)}::integer[],
      ${pgArray(rtts)}::real[], ${pgArray(at)}::timestamptz[])`);
}

/**
 * Journals the traffic of the (non-duplicate) reports of a batch: one traffic_journal row,
 * summed in memory per subscriber (totals) and per (subscriber, server, UTC day), written as
 * parallel arrays. Emails that are no subscriber of the server's cluster are counted per report.
 * Two statements for the whole batch: the subscriber lookup and the journal insert. The
 * subscribers' totals and subscriber_traffic follow at the folds (foldTrafficTotals,
 * foldTrafficDays), within a second for the totals.
 */
async function storeTrafficBatch(
  tx: DbOrTx,
  items: readonly ReportToApply[],
  clusterOfServer: ReadonlyMap<string, string>,
): Promise<{ unknownTotal: number; unknownByItem: Map<ReportToApply, number> }> {
  const unknownByItem = new Map<ReportToApply, number>();
  let unknownTotal = 0;
  const emails = new Set<string>();
  for (const it of items) {
    const users = it.report.users;
    if (users) for (let k = 0; k < users.length; k++) emails.add(users[k]!.email.toLowerCase());
  }
  if (emails.size === 0) return { unknownTotal, unknownByItem };
  const clusterOfSub = new Map<string, string>();
  const list = [...emails].filter((e) => UUID_RE.test(e));
  for (let k = 0; k < list.length; k += 10_000) {
    const rows = await tx.execute<{ id: string; cluster_id: string }>(
      sql`select id, cluster_id from ${subscribers} where id = any(${pgArray(list.slice(k, k + 10_000))}::uuid[])`,
    );
    for (const r of rowsOf<{ id: string; cluster_id: string }>(rows)) clusterOfSub.set(r.id, r.cluster_id);
  }
  // subscriber → bytes; (subscriber, server, day) → bytes, as parallel arrays
  const perSub = new Map<string, { up: number; down: number }>();
  const perDay = new Map<string, number>();
  const ent = { sub: [] as string[], srv: [] as string[], day: [] as string[], up: [] as number[], down: [] as number[] };
  let seenMs = 0;
  for (const it of items) {
    const users = it.report.users;
    if (!users) continue;
    let unknown = 0;
    const srv = it.server.serverId;
    const cluster = clusterOfServer.get(srv);
    const day = utcDay(it.nowMs);
    for (let k = 0; k < users.length; k++) {
      const u = users[k]!;
      const sub = u.email.toLowerCase();
      if (clusterOfSub.get(sub) !== cluster) {
        unknown++;
        continue;
      }
      if (u.up + u.down === 0) continue;
      seenMs = Math.max(seenMs, it.nowMs);
      const s = perSub.get(sub);
      if (s) {
        s.up += u.up;
        s.down += u.down;
      } else perSub.set(sub, { up: u.up, down: u.down });
      const key = `${sub}|${srv}|${day}`;
      const at = perDay.get(key);
      if (at !== undefined) {
        ent.up[at]! += u.up;
        ent.down[at]! += u.down;
      } else {
        perDay.set(key, ent.sub.length);
        ent.sub.push(sub);
        ent.srv.push(srv);
        ent.day.push(day);
        ent.up.push(u.up);
        ent.down.push(u.down);
      }
    }
    if (unknown > 0) unknownByItem.set(it, unknown);
    unknownTotal += unknown;
  }
  if (perSub.size === 0) return { unknownTotal, unknownByItem };
  const subs = [...perSub.keys()];
  await tx.execute(sql`
    insert into ${trafficJournal} (sub_ids, sub_up, sub_down, seen_at, ent_sub, ent_srv, ent_day, ent_up, ent_down)
    values (${pgArray(subs)}::uuid[], ${pgArray(subs.map((id) => perSub.get(id)!.up))}::bigint[], ${pgArray(subs.map((id) => perSub.get(id)!.down))}::bigint[],
      ${new Date(seenMs).toISOString()}::timestamptz, ${pgArray(ent.sub)}::uuid[], ${pgArray(ent.srv)}::uuid[], ${pgArray(ent.day)}::date[],
      ${pgArray(ent.up)}::bigint[], ${pgArray(ent.down)}::bigint[])`);
  return { unknownTotal, unknownByItem };
}

/**
 * One totals fold at a time across instances (two updating the same subscribers could
 * deadlock), and one per-day fold. The two kinds touch disjoint journal rows and run side by
 * side, so a long per-day fold never delays the totals.
 */
const TOTALS_FOLD_LOCK_KEY = 0x5242_4a4e; // "RBJN"
const DAYS_FOLD_LOCK_KEY = 0x5242_4a44; // "RBJD"
/** Both fold locks, in the order to take them (a writer that must not interleave with folds). */
export const TRAFFIC_FOLD_LOCKS = [TOTALS_FOLD_LOCK_KEY, DAYS_FOLD_LOCK_KEY] as const;

/**
 * Folds the whole journal inside the caller's transaction (which holds TRAFFIC_FOLD_LOCKS),
 * in a savepoint: if a row cannot be folded, nothing of it is applied here and the batcher's
 * folds quarantine the culprit. Returns what the totals fold did.
 */
export async function foldJournalIn(tx: DbOrTx): Promise<TotalsFold> {
  try {
    return await tx.transaction(async (sp) => {
      const t = await foldTotalsStep(sp, sql`not totals_folded`);
      await foldDaysStep(sp, sql`totals_folded`);
      return t;
    });
  } catch (err) {
    if (isDatabaseDown(err)) throw err;
    return { folded: 0, movedClusters: [], crossedClusters: [], startedClusters: [] };
  }
}

/** What one totals fold did: journal rows applied, clusters whose totals moved or crossed a limit. */
export interface TotalsFold {
  folded: number;
  movedClusters: string[];
  crossedClusters: string[];
  /** Clusters where a subscriber on hold connected for the first time (its expiry is now set). */
  startedClusters: string[];
}

/**
 * Adds the per-subscriber totals of journal rows not yet applied (at most `maxRows`, oldest
 * first) to subscribers' totals and last_seen_at, and marks those rows, in one statement, so
 * each row's totals are added exactly once even across crashes and instances. Returns the
 * clusters whose totals moved, those where a subscriber reached its traffic limit, and those
 * where a subscriber on hold connected first (its expiry is set now). The caller publishes
 * "traffic" and "subscribers": the config hub then drops the limited and times the expiries.
 */
export async function foldTrafficTotals(db: Db, maxRows = 1000): Promise<TotalsFold> {
  try {
    return await db.transaction((tx) => foldTotalsStep(tx, sql`id in (select id from ${trafficJournal} where not totals_folded order by id limit ${maxRows})`));
  } catch (err) {
    if (transient(err)) throw err;
    // Some row of the step cannot be folded: fold them one by one and quarantine the culprit
    // (issue 21), so one bad batch never holds up anyone else's traffic.
    const out: TotalsFold = { folded: 0, movedClusters: [], crossedClusters: [], startedClusters: [] };
    await foldOneByOne(db, "totals", maxRows, async (id) => {
      const t = await db.transaction((tx) => foldTotalsStep(tx, sql`id = ${id} and not totals_folded`));
      out.folded += t.folded;
      for (const k of ["movedClusters", "crossedClusters", "startedClusters"] as const) for (const c of t[k]) if (!out[k].includes(c)) out[k].push(c);
      return t.folded;
    });
    return out;
  }
}

/**
 * Largest value a byte counter takes (2^62 − 1): sums are clamped there instead of failing,
 * and up + down (traffic_used_bytes) still fits a bigint. Only a forged report could get
 * near it (reports are bounded by the server's report capacity), but an error here used to
 * fail every later fold (issue 21).
 */
export const BYTES_CAP = 4_611_686_018_427_387_903n;
const CAP = sql.raw(`${BYTES_CAP}::numeric`);

async function foldTotalsStep(tx: DbOrTx, which: SQL): Promise<TotalsFold> {
  const lock = rowsOf<{ ok: boolean }>(await tx.execute(sql`select pg_try_advisory_xact_lock(${TOTALS_FOLD_LOCK_KEY}) as ok`))[0];
  if (!lock?.ok) return { folded: 0, movedClusters: [], crossedClusters: [], startedClusters: [] };
  // Sums are numeric (never overflow) and clamped to BYTES_CAP when stored.
  const res = await tx.execute<{ folded: number; moved: string[] | null; crossed: string[] | null }>(sql`
    with j as (
      update ${trafficJournal} set totals_folded = true
      where ${which}
      returning sub_ids, sub_up, sub_down, seen_at
    ),
    agg as (
      select u.sub, sum(u.up) as up, sum(u.down) as down, min(j.seen_at) as first_seen, max(j.seen_at) as seen
      from j, unnest(j.sub_ids, j.sub_up, j.sub_down) as u(sub, up, down)
      group by u.sub
    ),
    -- Read before the update (one snapshot for the whole statement): whose hold starts now.
    held as (
      select s.id from ${subscribers} s join agg a on a.sub = s.id where s.hold_days is not null and a.up + a.down > 0
    ),
    upd as (
      -- On hold (hold_days set): the first traffic starts the subscription, expiry = first
      -- use + hold_days (holdExpiry in server/domain/subscriber-limits.ts).
      update ${subscribers} as s set
        traffic_up_bytes = least(s.traffic_up_bytes + a.up, ${CAP})::bigint,
        traffic_down_bytes = least(s.traffic_down_bytes + a.down, ${CAP})::bigint,
        traffic_used_bytes = least(s.traffic_up_bytes + a.up, ${CAP})::bigint + least(s.traffic_down_bytes + a.down, ${CAP})::bigint,
        last_seen_at = greatest(s.last_seen_at, a.seen),
        expires_at = case when s.hold_days is not null and a.up + a.down > 0 then a.first_seen + s.hold_days * interval '1 day' else s.expires_at end,
        hold_days = case when a.up + a.down > 0 then null else s.hold_days end
      from agg as a
      where s.id = a.sub
      -- crossedLimit (server/domain/subscriber-limits.ts): under the limit before, at or over it now.
      returning s.id, s.cluster_id, (s.traffic_limit_bytes is not null
        and s.traffic_used_bytes >= s.traffic_limit_bytes
        and s.traffic_used_bytes - a.up - a.down < s.traffic_limit_bytes) as crossed
    )
    select (select count(*) from j)::int as folded,
      array(select distinct cluster_id::text from upd) as moved,
      array(select distinct cluster_id::text from upd where crossed) as crossed,
      array(select distinct u.cluster_id::text from upd u join held h on h.id = u.id) as started,
      array(select id::text from upd where crossed) as crossed_ids`);
  const row = rowsOf<{ folded: number; moved: string[] | null; crossed: string[] | null; started: string[] | null; crossed_ids: string[] | null }>(res)[0];
  // Subscriber limited alerts, in this transaction (server/alerts/outbox.ts).
  await emitSubscriberBlocked(tx, row?.crossed_ids ?? [], Date.now());
  return { folded: Number(row?.folded ?? 0), movedClusters: row?.moved ?? [], crossedClusters: row?.crossed ?? [], startedClusters: row?.started ?? [] };
}

/**
 * Moves the per-(subscriber, server, day) entries of journal rows whose totals are applied
 * (at most `maxRows`, oldest first) into subscriber_traffic, summed, and deletes those rows, in
 * one statement. Entries of deleted subscribers or servers are dropped. Returns the number of
 * journal rows folded. A row that cannot be folded is quarantined (see foldOneByOne).
 */
export async function foldTrafficDays(db: Db, maxRows = 1000): Promise<number> {
  try {
    return await db.transaction((tx) => foldDaysStep(tx, sql`id in (select id from ${trafficJournal} where totals_folded order by id limit ${maxRows})`));
  } catch (err) {
    if (transient(err)) throw err;
    let folded = 0;
    await foldOneByOne(db, "days", maxRows, async (id) => {
      const n = await db.transaction((tx) => foldDaysStep(tx, sql`id = ${id} and totals_folded`));
      folded += n;
      return n;
    });
    return folded;
  }
}

async function foldDaysStep(tx: DbOrTx, which: SQL): Promise<number> {
  const lock = rowsOf<{ ok: boolean }>(await tx.execute(sql`select pg_try_advisory_xact_lock(${DAYS_FOLD_LOCK_KEY}) as ok`))[0];
  if (!lock?.ok) return 0;
  const res = await tx.execute<{ folded: number }>(sql`
    with j as (
      delete from ${trafficJournal}
      where ${which}
      returning ent_sub, ent_srv, ent_day, ent_up, ent_down
    ),
    agg as (
      select e.sub, e.srv, e.day, least(sum(e.up), ${CAP})::bigint as up, least(sum(e.down), ${CAP})::bigint as down
      from j, unnest(j.ent_sub, j.ent_srv, j.ent_day, j.ent_up, j.ent_down) as e(sub, srv, day, up, down)
      where exists (select 1 from ${subscribers} s where s.id = e.sub) and exists (select 1 from ${servers} v where v.id = e.srv)
      group by e.sub, e.srv, e.day
    ),
    ins as (
      insert into ${subscriberTraffic} (subscriber_id, server_id, day, up_bytes, down_bytes)
      select sub, srv, day, up, down from agg order by sub, srv, day
      on conflict (subscriber_id, server_id, day) do update set
        up_bytes = least(${subscriberTraffic}.up_bytes::numeric + excluded.up_bytes, ${CAP})::bigint,
        down_bytes = least(${subscriberTraffic}.down_bytes::numeric + excluded.down_bytes, ${CAP})::bigint
      returning 1
    )
    select (select count(*) from j)::int as folded, (select count(*) from ins)::int as rows`);
  return Number(rowsOf<{ folded: number }>(res)[0]?.folded ?? 0);
}

/** The database's own words for why a statement failed (drizzle wraps them in "Failed query"). */
function failureReason(err: unknown): string {
  let e = err as { message?: unknown; cause?: unknown } | null;
  let msg = "";
  for (let depth = 0; e && typeof e === "object" && depth < 5; depth++) {
    if (typeof e.message === "string" && e.message) msg = e.message;
    e = e.cause as typeof e;
  }
  return (msg || String(err)).replace(/\s+/g, " ").slice(0, 500);
}

/**
 * After a fold step failed: folds the next `maxRows` journal rows of the stage one at a time.
 * A row that fails alone is split into one row per server (a batch mixes servers, and the
 * honest ones' traffic must go on); a one-server row that still fails is quarantined
 * (traffic_quarantine, with the server and the database's reason) and leaves the journal.
 */
async function foldOneByOne(db: Db, stage: "totals" | "days", maxRows: number, fold: (id: number) => Promise<number>): Promise<void> {
  const ids = (
    await db
      .select({ id: trafficJournal.id })
      .from(trafficJournal)
      .where(eq(trafficJournal.totalsFolded, stage === "days"))
      .orderBy(trafficJournal.id)
      .limit(maxRows)
  ).map((r) => r.id);
  for (let guard = 0; ids.length > 0 && guard < maxRows * 4 + 100; guard++) {
    const id = ids.shift()!;
    try {
      await fold(id);
    } catch (err) {
      if (transient(err)) throw err;
      ids.push(...(await isolateJournalRow(db, id, stage, failureReason(err))));
    }
  }
}

/** Splits a failing journal row per server (returns the new rows' ids) or quarantines it (returns []). */
async function isolateJournalRow(db: Db, id: number, stage: "totals" | "days", reason: string): Promise<number[]> {
  try {
    const split = await db.transaction(async (tx) => {
      const servers = rowsOf<{ n: number }>(await tx.execute(sql`select count(distinct x)::int as n from ${trafficJournal} j, unnest(j.ent_srv) as x where j.id = ${id}`))[0];
      if (!servers || servers.n <= 1) return null;
      const res = await tx.execute<{ id: number }>(sql`
        with r as (select * from ${trafficJournal} where id = ${id} for update),
        e as (select e.* from r, unnest(r.ent_sub, r.ent_srv, r.ent_day, r.ent_up, r.ent_down) as e(sub, srv, day, up, down)),
        s as (select srv, sub, least(sum(up), ${CAP})::bigint as up, least(sum(down), ${CAP})::bigint as down from e group by srv, sub),
        ins as (
          insert into ${trafficJournal} (sub_ids, sub_up, sub_down, seen_at, totals_folded, ent_sub, ent_srv, ent_day, ent_up, ent_down)
          select
            array(select s.sub from s where s.srv = g.srv order by s.sub),
            array(select s.up from s where s.srv = g.srv order by s.sub),
            array(select s.down from s where s.srv = g.srv order by s.sub),
            r.seen_at, r.totals_folded,
            array(select e.sub from e where e.srv = g.srv order by e.sub, e.day),
            array(select e.srv from e where e.srv = g.srv order by e.sub, e.day),
            array(select e.day from e where e.srv = g.srv order by e.sub, e.day),
            array(select e.up from e where e.srv = g.srv order by e.sub, e.day),
            array(select e.down from e where e.srv = g.srv order by e.sub, e.day)
          from r, (select distinct srv from e where srv is not null) g
          returning id
        ),
        del as (delete from ${trafficJournal} where id in (select id from r))
        select id from ins`);
      return rowsOf<{ id: number }>(res).map((r) => Number(r.id));
    });
    if (split) return split;
  } catch (err) {
    if (isDatabaseDown(err)) throw err;
    // Could not even be split: quarantined whole below.
  }
  await db.execute(sql`
    with r as (delete from ${trafficJournal} where id = ${id} returning *),
    one as (select r.id, case when (select count(distinct x) from unnest(r.ent_srv) as x) = 1 then r.ent_srv[1] end as srv from r)
    insert into ${trafficQuarantine} (journal_id, server_id, cluster_id, stage, reason, seen_at, sub_ids, sub_up, sub_down, ent_sub, ent_srv, ent_day, ent_up, ent_down)
    select r.id, v.id, v.cluster_id, ${stage}, ${reason}, r.seen_at, r.sub_ids, r.sub_up, r.sub_down, r.ent_sub, r.ent_srv, r.ent_day, r.ent_up, r.ent_down
    from r join one on one.id = r.id left join ${servers} v on v.id = one.srv`);
  quarantined.inc({ stage });
  logger().warn({ journalId: id, stage, reason }, "a traffic journal row could not be folded: quarantined");
  return [];
}

/**
 * Folds the whole journal: totals, then per-day entries, until nothing is left (tests, shut
 * down). Returns the journal rows whose totals were applied and the clusters concerned.
 */
export async function foldTrafficJournal(db: Db): Promise<TotalsFold & { daysFolded: number }> {
  const out: TotalsFold & { daysFolded: number } = { folded: 0, movedClusters: [], crossedClusters: [], startedClusters: [], daysFolded: 0 };
  for (;;) {
    const t = await foldTrafficTotals(db);
    out.folded += t.folded;
    out.movedClusters.push(...t.movedClusters.filter((c) => !out.movedClusters.includes(c)));
    out.crossedClusters.push(...t.crossedClusters.filter((c) => !out.crossedClusters.includes(c)));
    out.startedClusters.push(...t.startedClusters.filter((c) => !out.startedClusters.includes(c)));
    const d = await foldTrafficDays(db);
    out.daysFolded += d;
    if (t.folded === 0 && d === 0) return out;
  }
}

/** Rows of tx.execute on either driver (node-postgres: { rows }, PGlite: { rows } too). */
export function rowsOf<T>(r: unknown): T[] {
  return (Array.isArray(r) ? r : ((r as { rows?: T[] }).rows ?? [])) as T[];
}

// ---------------------------------------------------------------------------
// Probe results
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Sweep
// ---------------------------------------------------------------------------

/**
 * Recomputes every server's status from stored state (silence → no-data, mesh votes) and
 * writes only the changes. Returns the clusters whose statuses changed.
 */
export async function sweepStatuses(db: Db, nowMs = Date.now()): Promise<{ changedClusters: Set<string>; changedServers: number }> {
  // Read in pages (by id): one statement over thousands of servers blocks PGlite, which runs
  // in the app's event loop, for a few hundred ms; pages let other requests in between.
  const page = (after: string | null) =>
    db
      .select({ id: servers.id, ...statusInputColumns })
      .from(servers)
      .innerJoin(clusters, eq(clusters.id, servers.clusterId))
      .leftJoin(serverHealth, eq(serverHealth.serverId, servers.id))
      .leftJoin(serverMetrics, eq(serverMetrics.serverId, servers.id))
      .where(after === null ? undefined : gt(servers.id, after))
      .orderBy(servers.id)
      .limit(SWEEP_PAGE);
  const rows = await page(null);
  for (let last = rows.length === SWEEP_PAGE ? rows[rows.length - 1]!.id : null; last !== null; ) {
    const more = await page(last);
    rows.push(...more);
    last = more.length === SWEEP_PAGE ? more[more.length - 1]!.id : null;
  }
  const links = await db.select().from(meshChecks);

  const byCluster = new Map<string, typeof rows>();
  for (const r of rows) {
    const list = byCluster.get(r.clusterId) ?? [];
    list.push(r);
    byCluster.set(r.clusterId, list);
  }
  const clusterOf = new Map(rows.map((r) => [r.id, r.clusterId]));
  const streaksByCluster = new Map<string, MeshStreaks>();
  for (const l of links) {
    const c = clusterOf.get(l.observerId);
    if (!c || clusterOf.get(l.targetId) !== c) continue;
    const streaks = streaksByCluster.get(c) ?? {};
    (streaks[l.observerId] ??= {})[l.targetId] = { failStreak: l.failStreak, lastOk: l.lastOk };
    streaksByCluster.set(c, streaks);
  }

  const changedClusters = new Set<string>();
  let changedServers = 0;
  const todo = new Map<string, { unreachable: boolean; reason: string }>();
  for (const [clusterId, list] of byCluster) {
    const intervalMs = (list[0]?.reportIntervalS ?? 60) * 1000;
    const fresh = (r: (typeof list)[number]) =>
      r.enabled && r.reportedAt !== null && nowMs - r.reportedAt.getTime() <= NO_DATA_INTERVALS * intervalMs;
    const active = new Set(list.filter(fresh).map((r) => r.id));
    const votes = computeMeshVote(streaksByCluster.get(clusterId) ?? {}, {
      activeObservers: active,
      extraTargets: list.map((r) => r.id),
    });
    for (const r of list) {
      const verdict = votes[r.id];
      const mesh = verdict ? { unreachable: verdict.unreachable, reason: verdict.reason } : { unreachable: false, reason: "no usable observers" };
      const h = r.health;
      // Cheap pre-check without locks; the real decision is made under the row lock.
      const probe = h ? statusOf(r, h, mesh, nowMs) : null;
      const needs =
        !h ||
        !probe ||
        probe.status !== h.status ||
        mesh.unreachable !== h.meshUnreachable ||
        mesh.reason !== h.meshReason ||
        (probe.reason !== h.statusReason && probe.status !== "no-data");
      if (!needs) continue;
      todo.set(r.id, mesh);
    }
  }
  // Set-based, SWEEP_PAGE servers per transaction: when many servers change at once (a fleet
  // falling silent), one transaction per server kept PGlite busy for seconds.
  const ids = [...todo.keys()].sort(byId);
  for (let k = 0; k < ids.length; k += SWEEP_PAGE) {
    const chunk = ids.slice(k, k + SWEEP_PAGE);
    const results = await db.transaction(async (tx) => {
      await tx.execute(sql`insert into ${serverHealth} (server_id) select unnest(${pgArray(chunk)}::uuid[]) on conflict do nothing`);
      return recomputeServers(tx, chunk, () => nowMs, (id) => todo.get(id));
    });
    for (const res of results.values()) {
      if (res.changed) {
        changedClusters.add(res.clusterId);
        changedServers++;
      }
    }
  }
  return { changedClusters, changedServers };
}

/** The pure status machine fed from stored rows. */
function statusOf(
  r: {
    enabled: boolean;
    probeConfig: unknown;
    probeOverride: unknown;
    reportIntervalS: number;
    reportedAt: Date | null;
    listenerAlive: boolean | null;
    serviceRunning: boolean | null;
  },
  h: typeof serverHealth.$inferSelect,
  mesh: { unreachable: boolean; reason: string },
  nowMs: number,
): ServerStatusResult {
  const cfg = effectiveProbeConfig(r.probeConfig, r.probeOverride);
  return computeServerStatus(
    {
      enabled: r.enabled,
      everSucceeded: h.everSucceeded || h.reportEverHealthy,
      lastReportAtMs: r.reportedAt ? r.reportedAt.getTime() : null,
      reportIntervalS: r.reportIntervalS,
      lastReport: r.reportedAt ? { listenerAlive: !!r.listenerAlive, serviceRunning: !!r.serviceRunning } : null,
      probeHealthy: h.probeHealthy,
      probesEnabled: cfg.enabled,
      meshUnreachable: mesh.unreachable,
      meshReason: mesh.reason ? `Unreachable from your servers: ${mesh.reason}.` : undefined,
      probeReason: h.lastProbeReason ?? undefined,
      probeFailures: h.probeFailStreak,
      lastHeartbeatAtMs: h.heartbeatAt ? h.heartbeatAt.getTime() : null,
      heartbeatLostAtMs: h.heartbeatLostAt ? h.heartbeatLostAt.getTime() : null,
    },
    nowMs,
  );
}

/** How long the 5-minute history buckets are kept: the health page charts 24 h; a week leaves room to look back. */
export const HISTORY_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** Deletes history buckets that started before `nowMs - retentionMs`; returns how many went. */
export async function pruneMetricsHistory(db: DbOrTx, nowMs: number, retentionMs = HISTORY_RETENTION_MS): Promise<number> {
  const gone = await db
    .delete(serverMetricsHistory)
    .where(lt(serverMetricsHistory.bucketStart, new Date(nowMs - retentionMs)))
    .returning({ id: serverMetricsHistory.id });
  return gone.length;
}
