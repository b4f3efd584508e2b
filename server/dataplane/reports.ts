/**
 * Agent report ingestion (DESIGN §4): a report body parsed and validated (parseReport), then
 * stored with the others of its batch (applyReports, called by report-batcher.ts in one
 * transaction per batch). What a report says is stored by the capability it concerns: health
 * and metrics by server/monitoring, per-user traffic by server/usage (the traffic journal),
 * alerts by server/alerts.
 */
import "server-only";
import type { z } from "zod";
import { eq, inArray, sql } from "drizzle-orm";
import type { DbOrTx } from "@/db/client";
import { rowsOf } from "@/db/rows";
import { fromExcluded } from "@/db/upsert";
import { alertEvents, clusters, serverAgentState, serverMetrics, servers } from "@/db/schema";
import { MAX_USER_BYTES_PER_REPORT, type AgentReportAck } from "@/core/agent-wire";
import { agentReportSchema, formatZodError, type AgentReport } from "@/core/monitoring-contract";
import type { ServerStatus } from "@/core/status";
import { enqueueAlerts, recordConfigRejections } from "@/server/alerts/outbox";
import { counter } from "@/server/metrics";
import { ensureHealthRows, storeReportedHealth } from "@/server/monitoring/reported-health";
import { journalTraffic } from "@/server/usage/journal";

/**
 * Largest report body: room for MAX_REPORT_USERS traffic rows (~90 bytes each). Only read
 * after the token is known and within its rate limit, so strangers cannot make us buffer it.
 */
export const REPORT_BODY_LIMIT = 24 * 1024 * 1024;

export type ReportOutcome =
  | { httpStatus: 400; body: { error: string } }
  /** The server was deleted (its cluster too, perhaps) after its token was checked: answered as an unknown token, so the agent stops. */
  | { httpStatus: 401; body: { error: string } }
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

const implausible = counter("routeboard_agent_reports_implausible_total", "Agent reports refused: per-user bytes beyond the server's report capacity (issue 21)");

const unknownUsers = counter(
  "routeboard_agent_unknown_users_total",
  "Per-user traffic rows of agent reports naming no subscriber of the server's cluster (ignored)",
);

/** Parses an agent's JSON body with `schema`: the value, or the 400's message that names the field. */
export function parseAgentBody<T>(schema: z.ZodType<T>, rawBody: string): { value: T } | { error: string } {
  let json: unknown;
  try {
    json = JSON.parse(rawBody);
  } catch {
    return { error: "(root): body is not valid JSON" };
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) return { error: formatZodError(parsed.error) };
  return { value: parsed.data };
}

/** Parses a report body: the report, or the 400 that names the field. */
export function parseReport(rawBody: string): { report: AgentReport } | { error: string } {
  const parsed = parseAgentBody(agentReportSchema, rawBody);
  return "error" in parsed ? parsed : { report: storableReport(parsed.value) };
}

/**
 * Below this a measurement is zero. PostgreSQL refuses floats that underflow its column
 * (`real` below ~1e-38, denormal doubles), so a schema-valid `cpu: 1e-123` was a 500
 * (found by the fuzz suite); nothing real is measured that small.
 */
const FLOAT_FLOOR = 1e-30;
export const storableFloat = (v: number) => (Math.abs(v) < FLOAT_FLOOR ? 0 : v);

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

export interface AppliedReport {
  status: ServerStatus;
  statusChanged: boolean;
  /** The server's inbounds not served changed (issue 25): the balancer's choice moves as with a status change. */
  inboundsChanged: boolean;
  duplicate: boolean;
  unknownUsers: number;
  /** Why the report was refused (400, nothing stored): its per-user bytes are implausible. */
  refused?: string;
  /** Its server no longer exists (deleted while the report waited for its batch): nothing stored, 401. */
  gone?: boolean;
}

export function reportOutcome(server: ReportingServer, a: AppliedReport): ReportOutcome {
  if (a.gone) return { httpStatus: 401, body: { error: "unknown agent token" } };
  if (a.refused !== undefined) return { httpStatus: 400, body: { error: a.refused } };
  const body: AgentReportAck = { ok: true, status: a.status };
  if (a.duplicate) body.duplicate = true;
  if (a.unknownUsers > 0) body.unknownUsers = a.unknownUsers;
  return { httpStatus: 200, body, clusterId: server.clusterId, serverId: server.serverId, statusChanged: a.statusChanged };
}

/** Stores one validated report; call inside a transaction (the batcher retries a failed batch one report at a time). See applyReports. */
export async function applyReport(tx: DbOrTx, server: ReportingServer, report: AgentReport, nowMs: number): Promise<AppliedReport> {
  return (await applyReports(tx, [{ server, report, nowMs }]))[0]!;
}

export interface ReportToApply {
  server: ReportingServer;
  report: AgentReport;
  nowMs: number;
}

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Stores validated reports, in order, inside the caller's transaction, with a fixed number
 * of set-based statements however many reports and users there are (group commit: see
 * report-batcher.ts). Its steps: check (checkReports: implausible per-user bytes refuse a
 * report; a rate above the server's report capacity is stored as the capacity), alerts (alertImplausible), then storeReports. Reports of one server are folded in order:
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
  const { refusals, gone, capped, implausible } = await checkReports(tx, items);
  await alertImplausible(tx, implausible);
  // Refused reports change nothing (but the alert), nor do those of deleted servers; the rest of the batch goes on.
  const ok = refusals.size === 0 && gone.size === 0 ? items : items.filter((it) => !refusals.has(it) && !gone.has(it));
  const applied = await storeReports(tx, capped.size === 0 ? ok : ok.map((it) => capped.get(it) ?? it));
  const byItem = new Map(ok.map((it, k) => [it, applied[k]!]));
  return items.map(
    (it) => byItem.get(it) ?? { status: "pending", statusChanged: false, inboundsChanged: false, duplicate: false, unknownUsers: 0, refused: refusals.get(it), gone: gone.has(it) || undefined },
  );
}

/**
 * Stores plausible reports: health rows, agent state (the exactly-once check), alerts for newly
 * rejected configs, the health step (server/monitoring/reported-health.ts), then the traffic
 * of the reports that are no duplicates into the journal (server/usage/journal.ts).
 */
async function storeReports(tx: DbOrTx, items: readonly ReportToApply[]): Promise<AppliedReport[]> {
  if (items.length === 0) return [];
  await ensureHealthRows(tx, [...new Set(items.map((i) => i.server.serverId))].sort(byId));
  const { duplicate, rejected, inboundsChanged } = await storeAgentState(tx, items);
  // A newly rejected config is an alert (once per distinct error, not per report).
  if (rejected.length > 0) await recordConfigRejections(tx, rejected, items.reduce((m, i) => Math.max(m, i.nowMs), 0));
  const statuses = await storeReportedHealth(tx, items);
  const traffic = await journalTraffic(tx, items.filter((_, k) => !duplicate[k]));
  if (traffic.unknownTotal > 0) unknownUsers.inc({}, traffic.unknownTotal);
  return items.map((it, k) => {
    const st = statuses.get(it.server.serverId);
    return {
      status: st?.status ?? "pending",
      statusChanged: st?.changed ?? false,
      inboundsChanged: inboundsChanged.has(it.server.serverId),
      duplicate: duplicate[k]!,
      unknownUsers: duplicate[k] ? 0 : (traffic.unknownByItem.get(it) ?? 0),
    };
  });
}

/**
 * Agent state and the exactly-once check, in order: the same instance with seq ≤ the stored
 * (or an earlier report's) seq is a duplicate, and its traffic is not added; a new instance
 * starts its own sequence. Fields a report leaves out keep their stored values. Returns which
 * reports are duplicates, the servers whose configError is new and those whose inbounds not
 * served changed (the balancer's choice moves with them: a "health" change).
 */
async function storeAgentState(
  tx: DbOrTx,
  items: readonly ReportToApply[],
): Promise<{ duplicate: boolean[]; rejected: Array<{ serverId: string; clusterId: string; error: string }>; inboundsChanged: ReadonlySet<string> }> {
  const serverIds = [...new Set(items.map((i) => i.server.serverId))].sort(byId);
  const stateRows = await tx.select().from(serverAgentState).where(inArray(serverAgentState.serverId, serverIds)).orderBy(serverAgentState.serverId).for("update");
  const state = new Map(stateRows.map((r) => [r.serverId, { ...r }]));
  const stateChanged = new Set<string>();
  const rejected = new Map<string, { serverId: string; clusterId: string; error: string }>();
  const inboundsChanged = new Set<string>();
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
    if (r.unservedInbounds !== undefined || r.listenersDown !== undefined) {
      const inbounds = notServed(next.unservedInbounds, r);
      if (!sameNotServed(inbounds, next.unservedInbounds)) inboundsChanged.add(id);
      next.unservedInbounds = inbounds;
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
        set: fromExcluded(s, ["instance", "seq", "configVersion", "configError", "configErrorAt", "unservedInbounds", "coreKind", "coreVersion", "agentVersion", "updatedAt"]),
      });
  }
  return { duplicate, rejected: [...rejected.values()], inboundsChanged };
}

type NotServed = (typeof serverAgentState.$inferSelect)["unservedInbounds"];

/**
 * The inbounds of a server that are not served now, with why (issue 25): what its config
 * leaves out (`unservedInbounds`) and the served ones whose port failed the listener check
 * (`listenersDown`, marked `listener`). A field the report leaves out keeps its stored rows.
 */
export function notServed(stored: NotServed, r: Pick<AgentReport, "unservedInbounds" | "listenersDown">): NotServed {
  const config = r.unservedInbounds ?? stored.filter((u) => !u.listener);
  const listed = new Set(config.map((u) => u.inboundId));
  const listeners =
    r.listenersDown === undefined
      ? stored.filter((u) => u.listener)
      : r.listenersDown.map((d) => ({ inboundId: d.inboundId, reason: `port ${d.port} does not accept connections (${d.error})`, listener: true as const }));
  return [...config.map((u) => ({ inboundId: u.inboundId, reason: u.reason })), ...listeners.filter((u) => !listed.has(u.inboundId))];
}

function sameNotServed(a: NotServed, b: NotServed): boolean {
  return a.length === b.length && a.every((u, k) => u.inboundId === b[k]!.inboundId && u.reason === b[k]!.reason && !!u.listener === !!b[k]!.listener);
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

/** A server whose report was refused as implausible: what its alert says. */
type RateField = "rxBps" | "txBps" | "load.rxBps" | "load.txBps";

interface ImplausibleReport {
  row: { id: string; name: string; address: string; clusterId: string; capacityMbps: number; intervalS: number };
  /** A user's bytes above reportByteBound: its row, bytes and the bound. */
  user?: { k: number; bytes: number; bound: number };
  /** The server's rate above its report capacity: a report's rxBps or txBps, or a heartbeat's load. */
  rate?: { field: RateField; bps: number };
  nowMs: number;
}

/**
 * The check step: the reports of a batch whose per-user bytes exceed reportByteBound, with the
 * 400's text naming the row; the reports whose rxBps or txBps exceeds the server's report
 * capacity, with those rates capped to it; per server one such report for its alert (a refusal
 * first, since it loses the report).
 */
async function checkReports(
  tx: DbOrTx,
  items: readonly ReportToApply[],
): Promise<{ refusals: Map<ReportToApply, string>; gone: Set<ReportToApply>; capped: Map<ReportToApply, ReportToApply>; implausible: ImplausibleReport[] }> {
  const out = new Map<ReportToApply, string>();
  const gone = new Set<ReportToApply>();
  const capped = new Map<ReportToApply, ReportToApply>();
  if (items.length === 0) return { refusals: out, gone, capped, implausible: [] };
  const ids = [...new Set(items.map((i) => i.server.serverId))];
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
  const alerts = new Map<string, ImplausibleReport>();
  for (const it of items) {
    const r = info.get(it.server.serverId);
    if (!r) {
      // Deleted after its token was checked (the report waited for its batch): storing it would
      // break the foreign keys and answer 500; the agent is told its token is unknown instead.
      gone.add(it);
      continue;
    }
    // The server's rate feeds its learned peak, which draws new users: a rate above what its
    // link carries would make one agent token a sink for its cluster's users. It is stored as
    // the capacity, not refused: an honest agent's rate over a short window (a backlog sent
    // report after report) can overshoot, and refusing would drop its users' traffic.
    const capBps = r.capacityMbps * 1e6;
    const rateField = it.report.rxBps > capBps ? "rxBps" : it.report.txBps > capBps ? "txBps" : null;
    if (rateField) {
      capped.set(it, { ...it, report: { ...it.report, rxBps: Math.min(it.report.rxBps, capBps), txBps: Math.min(it.report.txBps, capBps) } });
      if (!alerts.has(r.id)) alerts.set(r.id, { row: r, rate: { field: rateField, bps: it.report[rateField] }, nowMs: it.nowMs });
    }
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
        if (!alerts.get(r.id)?.user) alerts.set(r.id, { row: r, user: { k: bad, bytes, bound }, nowMs: it.nowMs });
        continue;
      }
    }
    lastMs.set(r.id, it.nowMs);
  }
  return { refusals: out, gone, capped, implausible: [...alerts.values()] };
}

/** A heartbeat's load above its server's report capacity, stored as the capacity (heartbeat-http.ts). */
export interface LoadAboveCapacity {
  serverId: string;
  capacityMbps: number;
  intervalS: number;
  field: "load.rxBps" | "load.txBps";
  bps: number;
  nowMs: number;
}

/**
 * The same alert as a report's rate above the capacity (server.report_implausible, at most once
 * per server per report interval, whichever of the two raised it): a capped load is as much a
 * sign as a capped report that a token claims a link its server does not have, or that a link
 * outgrew its setting. A server deleted meanwhile has no row and raises nothing.
 */
export async function alertLoadsAboveCapacity(tx: DbOrTx, loads: readonly LoadAboveCapacity[]): Promise<void> {
  if (loads.length === 0) return;
  const rows = await tx
    .select({ id: servers.id, name: servers.name, address: servers.address, clusterId: servers.clusterId })
    .from(servers)
    .where(inArray(servers.id, loads.map((l) => l.serverId)));
  const byServer = new Map(rows.map((r) => [r.id, r]));
  await alertImplausible(
    tx,
    loads.flatMap((l) => {
      const r = byServer.get(l.serverId);
      return r ? [{ row: { ...r, capacityMbps: l.capacityMbps, intervalS: l.intervalS }, rate: { field: l.field, bps: l.bps }, nowMs: l.nowMs }] : [];
    }),
  );
}

/**
 * The alerts step for refused reports: server.report_implausible, at most once per server per
 * report interval, in the batch's transaction.
 */
async function alertImplausible(tx: DbOrTx, implausibleReports: readonly ImplausibleReport[]): Promise<void> {
  for (const a of implausibleReports) {
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
          data: {
            server: { id: a.row.id, name: a.row.name, address: a.row.address },
            capacityMbps: a.row.capacityMbps,
            ...(a.user ? { row: a.user.k, bytes: a.user.bytes, boundBytes: a.user.bound } : {}),
            ...(a.rate ? { field: a.rate.field, rateBps: a.rate.bps } : {}),
          },
        },
      ],
      a.nowMs,
    );
  }
}
