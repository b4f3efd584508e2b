/**
 * Health of the servers (DESIGN §3) as the health page shows it, and the probe configuration
 * and report interval of a cluster.
 */
import { TRPCError } from "@trpc/server";
import { asc, eq, inArray } from "drizzle-orm";
import type { z } from "zod";
import type { Db, DbOrTx } from "@/db/client";
import { clusters, inbounds, meshChecks, routes, serverAgentState, serverHealth, serverMetrics, servers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import type { OperatorRole } from "@/server/auth/sessions";
import { written, type Actor, type Written } from "@/server/changes";
import { computeMonitoringWarnings } from "@/core/config-warnings";
import { effectiveProbeConfig, PROBE_DEFAULTS, safeMergeProbeConfig, type probeOverrideSchema, type ProbeConfig } from "@/core/monitoring-contract";
import { isUnreliableWitness, type ObserverLinks } from "@/server/monitoring/mesh";
import { effectiveStatus, STATUS_LABELS } from "@/core/status";
import { heartbeatLostNow, heartbeatPhase, heartbeatSilenceMs, loadsCurrent } from "@/core/heartbeat";
import { probeConfigAsSeenBy } from "@/server/secrets";
import { fieldError } from "@/server/db-errors";
import { quarantinedTraffic } from "@/server/usage/reported-usage";

/**
 * Probe fields that choose what the prober sends to a server or reads back from it (issue
 * 21, point 6): with them a probe of any address becomes a request forger or a yes/no oracle
 * on a local page. Only an admin signed in to the dashboard sets them; an API token, whatever
 * its scopes, may leave them as stored but not set or change them.
 */
const SESSION_ONLY_PROBE_FIELDS = {
  method: "methods other than GET",
  headers: "request headers",
  payload: "request payloads",
  headerMatch: "response header checks",
  bodyContains: "response body checks",
} as const;
type SessionOnlyField = keyof typeof SESSION_ONLY_PROBE_FIELDS;

function isCustom(field: SessionOnlyField, v: unknown): boolean {
  if (v === undefined || v === null) return false;
  if (field === "method") return v !== PROBE_DEFAULTS.method;
  if (field === "headers" || field === "headerMatch") return Object.keys(v as Record<string, string>).length > 0;
  return true;
}

/** JSON with sorted keys, so two header records with the same entries compare equal. */
function canonical(v: unknown): string {
  if (v === undefined) return "undefined";
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  return `{${Object.keys(v as object)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
    .join(",")}}`;
}

/** The FORBIDDEN an API token gets for setting a session-only probe field, naming it (`path.field`). */
function refuseTokenProbeFields(path: "config" | "override", next: Record<string, unknown> | null, stored: Record<string, unknown> | null): void {
  for (const field of Object.keys(SESSION_ONLY_PROBE_FIELDS) as SessionOnlyField[]) {
    const v = next?.[field];
    if (!isCustom(field, v) || canonical(v) === canonical(stored?.[field])) continue;
    throw fieldError(
      "FORBIDDEN",
      `${path}.${field}`,
      `${path}.${field}: probe ${SESSION_ONLY_PROBE_FIELDS[field]} need an admin signed in to the dashboard; API tokens cannot set them, whatever their scopes`,
    );
  }
}

/** How a probe write arrived: an API token may not set the session-only fields. */
export interface ProbeWriteOptions {
  viaApiToken?: boolean;
}

/** The cluster row, or NOT_FOUND. */
export async function clusterOr404(db: DbOrTx, clusterId: string) {
  const [c] = await db.select().from(clusters).where(eq(clusters.id, clusterId));
  if (!c) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
  return c;
}

/** Everything the health page shows, in one read; probe secrets as `role` may see them. */
export async function clusterHealth(db: Db, clusterId: string, role: OperatorRole) {
  const cluster = await clusterOr404(db, clusterId);
  const [rows, ibs, routeRows, quarantine] = await Promise.all([
    db
      .select({ server: servers, health: serverHealth, metrics: serverMetrics, agent: serverAgentState })
      .from(servers)
      .leftJoin(serverHealth, eq(serverHealth.serverId, servers.id))
      .leftJoin(serverMetrics, eq(serverMetrics.serverId, servers.id))
      .leftJoin(serverAgentState, eq(serverAgentState.serverId, servers.id))
      .where(eq(servers.clusterId, clusterId))
      .orderBy(asc(servers.name)),
    db
      .select({ id: inbounds.id, name: inbounds.name, serverId: inbounds.serverId, routeId: inbounds.routeId, isFallback: inbounds.isFallback, port: inbounds.port, createdAt: inbounds.createdAt })
      .from(inbounds)
      .where(eq(inbounds.clusterId, clusterId))
      .orderBy(asc(inbounds.createdAt), asc(inbounds.port)),
    db.select({ id: routes.id, name: routes.name }).from(routes).where(eq(routes.clusterId, clusterId)).orderBy(asc(routes.position)),
    quarantinedTraffic(db, clusterId),
  ]);
  const ids = rows.map((r) => r.server.id);
  const links = ids.length === 0 ? [] : await db.select().from(meshChecks).where(inArray(meshChecks.observerId, ids));
  const clusterCfg = effectiveProbeConfig(cluster.probeConfig, null);
  const firstPort = new Map<string, number>();
  for (const ib of ibs) if (!firstPort.has(ib.serverId)) firstPort.set(ib.serverId, ib.port);
  const byObserver = new Map<string, ObserverLinks>();
  for (const l of links) {
    const o = byObserver.get(l.observerId) ?? {};
    o[l.targetId] = { failStreak: l.failStreak, lastOk: l.lastOk };
    byObserver.set(l.observerId, o);
  }
  const inboundName = new Map(ibs.map((i) => [i.id, i.name]));
  const shown = <T extends { headers?: Record<string, string> } | null>(c: T) => probeConfigAsSeenBy(role, c);
  const nowMs = Date.now();
  const serversOut = rows.map(({ server: s, health: h, metrics: m, agent: a }) => {
    const status = effectiveStatus(s.enabled, h?.status);
    const cfg = effectiveProbeConfig(cluster.probeConfig, s.probeOverride);
    return {
      id: s.id,
      name: s.name,
      address: s.address,
      enabled: s.enabled,
      /** The link capacity the operator set (Mbit/s): the balancer uses it instead of the learned peak. */
      capacityMbps: s.capacityMbps,
      status,
      label: STATUS_LABELS[status] ?? status,
      since: h?.statusSince ?? null,
      reason: s.enabled ? (h?.statusReason ?? null) : "The operator disabled this server; it gets no new users.",
      report: m
        ? {
            at: m.reportedAt,
            listenerAlive: m.listenerAlive,
            serviceRunning: m.serviceRunning,
            usersOnline: m.usersOnline,
            rxBps: m.rxBps,
            txBps: m.txBps,
            cpu: m.cpu,
            memory: m.memory,
            peakBps: m.peakBps,
            /** When a report last showed the link full (its users held back); null: never. */
            heldBackAt: m.heldBackAt,
            /** What the link carried at that report (null: not known). */
            heldBackBps: m.heldBackBps,
            /**
             * The last load the agent sent in a heartbeat (core/heartbeat.ts); `current`: loads
             * still arrived at the last report, so the balancer places users on it rather than on
             * the report (balancerLoad). Null: this agent never sent one (an older agent).
             */
            load:
              m.loadAt !== null
                ? { at: m.loadAt, usersOnline: m.loadUsers ?? 0, trafficBps: m.loadBps ?? 0, current: loadsCurrent(m.loadAt.getTime(), m.reportedAt.getTime()) }
                : null,
          }
        : null,
      heartbeat: heartbeatView(h?.heartbeatAt ?? null, h?.heartbeatLostAt ?? null, nowMs),
      probe: h?.lastProbeAt
        ? {
            at: h.lastProbeAt,
            ok: h.lastProbeOk,
            code: h.lastProbeCode,
            latencyMs: h.lastProbeLatencyMs,
            reason: h.lastProbeReason,
          }
        : null,
      probeHealthy: h?.probeHealthy ?? null,
      failStreak: h?.probeFailStreak ?? 0,
      okStreak: h?.probeOkStreak ?? 0,
      meshUnreachable: h?.meshUnreachable ?? false,
      meshReason: h?.meshReason ?? null,
      probesEnabled: cfg.enabled,
      probeTarget: cfg.port ?? firstPort.get(s.id) ?? null,
      override: shown((s.probeOverride ?? null) as z.infer<typeof probeOverrideSchema> | null),
      unreliableWitness: isUnreliableWitness(byObserver.get(s.id) ?? {}),
      /** What the server's agent said about its core (DESIGN §6); null before its first report. */
      agent: a
        ? {
            configVersion: a.configVersion,
            configError: a.configError,
            configErrorAt: a.configErrorAt,
            unservedInbounds: a.unservedInbounds.map((u) => ({ ...u, name: inboundName.get(u.inboundId) ?? null })),
            core: a.coreKind ? { kind: a.coreKind, version: a.coreVersion } : null,
            agentVersion: a.agentVersion,
          }
        : null,
    };
  });
  return {
    cluster: { id: cluster.id, name: cluster.name, reportIntervalS: cluster.reportIntervalS, probeConfig: shown(clusterCfg) },
    servers: serversOut,
    /** Traffic batches the folds could not apply (issue 21): kept aside, not counted. */
    quarantine,
    mesh: links.map((l) => ({ observerId: l.observerId, targetId: l.targetId, lastOk: l.lastOk, failStreak: l.failStreak, rttMs: l.rttMs, checkedAt: l.checkedAt })),
    warnings: computeMonitoringWarnings({
      clusterProbesEnabled: clusterCfg.enabled,
      servers: serversOut.map((s) => ({ id: s.id, name: s.name, status: s.status, enabled: s.enabled, probesEnabled: s.probesEnabled, neverReported: s.report === null && s.agent === null })),
      inbounds: ibs,
      routes: routeRows,
    }),
  };
}

/**
 * The fast failover path (core/heartbeat.ts) for one server as of `nowMs`, the answer's time:
 * its heartbeats' phase, how long they have been silent, and whether the panel confirmed them
 * lost. The page reads the silence as of its last refresh, not its own clock: the two clocks
 * may differ, and a heartbeat arrives every 2 s while the page refreshes every 10.
 */
function heartbeatView(at: Date | null, lostAt: Date | null, nowMs: number) {
  const atMs = at?.getTime() ?? null;
  return {
    at,
    phase: heartbeatPhase(atMs, nowMs),
    silenceMs: heartbeatSilenceMs(atMs, nowMs),
    lost: heartbeatLostNow(atMs, lostAt?.getTime() ?? null),
  };
}

/** The cluster's probe configuration and each server's override, as `role` may see them. */
export async function probeSettings(db: Db, clusterId: string, role: OperatorRole) {
  const cluster = await clusterOr404(db, clusterId);
  const rows = await db
    .select({ id: servers.id, name: servers.name, override: servers.probeOverride })
    .from(servers)
    .where(eq(servers.clusterId, clusterId))
    .orderBy(asc(servers.name));
  const shown = <T extends { headers?: Record<string, string> } | null>(c: T) => probeConfigAsSeenBy(role, c);
  return {
    config: shown(effectiveProbeConfig(cluster.probeConfig, null)),
    overrides: rows.map((r) => ({ serverId: r.id, name: r.name, override: shown((r.override ?? null) as z.infer<typeof probeOverrideSchema> | null) })),
  };
}

export async function setProbeConfig(db: Db, actor: Actor, input: { clusterId: string; config: ProbeConfig }, opts: ProbeWriteOptions = {}): Promise<Written<{ config: ProbeConfig }>> {
  await db.transaction(async (tx) => {
    const before = await clusterOr404(tx, input.clusterId);
    if (opts.viaApiToken) refuseTokenProbeFields("config", input.config, effectiveProbeConfig(before.probeConfig, null));
    await tx.update(clusters).set({ probeConfig: input.config, updatedAt: new Date() }).where(eq(clusters.id, input.clusterId));
    await recordAudit(tx, actor, {
      clusterId: input.clusterId,
      action: "probe.config",
      entityType: "cluster",
      entityId: input.clusterId,
      summary: `Changed the health probe of ${before.name}`,
      before: before.probeConfig,
      after: input.config,
    });
  });
  return written({ config: input.config }, { kind: "settings", clusterId: input.clusterId });
}

type ProbeOverride = z.infer<typeof probeOverrideSchema>;

export async function setServerProbeOverride(
  db: Db,
  actor: Actor,
  input: { serverId: string; override: ProbeOverride | null },
  opts: ProbeWriteOptions = {},
): Promise<Written<{ serverId: string; override: ProbeOverride | null }>> {
  // An empty override means "inherit everything": stored as null.
  const override = input.override && Object.values(input.override).some((v) => v !== undefined) ? input.override : null;
  const clusterId = await db.transaction(async (tx) => {
    const [s] = await tx.select().from(servers).where(eq(servers.id, input.serverId));
    if (!s) throw new TRPCError({ code: "NOT_FOUND", message: "No such server" });
    if (opts.viaApiToken) refuseTokenProbeFields("override", override, (s.probeOverride ?? null) as Record<string, unknown> | null);
    const [c] = await tx.select().from(clusters).where(eq(clusters.id, s.clusterId));
    // The merged config must be valid too (e.g. an override cannot make it inconsistent).
    const merged = safeMergeProbeConfig(effectiveProbeConfig(c?.probeConfig, null), override);
    if (!merged.success) throw new TRPCError({ code: "BAD_REQUEST", message: merged.error.issues[0]?.message ?? "invalid override", cause: merged.error });
    await tx.update(servers).set({ probeOverride: override, updatedAt: new Date() }).where(eq(servers.id, s.id));
    await recordAudit(tx, actor, {
      clusterId: s.clusterId,
      action: "probe.override",
      entityType: "server",
      entityId: s.id,
      summary: override ? `Set a health probe override on ${s.name}` : `Removed the health probe override of ${s.name}`,
      before: s.probeOverride,
      after: override,
    });
    return s.clusterId;
  });
  return written({ serverId: input.serverId, override }, { kind: "settings", clusterId });
}

export async function setReportInterval(db: Db, actor: Actor, input: { clusterId: string; seconds: number }): Promise<Written<{ clusterId: string; seconds: number }>> {
  await db.transaction(async (tx) => {
    const before = await clusterOr404(tx, input.clusterId);
    await tx.update(clusters).set({ reportIntervalS: input.seconds, updatedAt: new Date() }).where(eq(clusters.id, input.clusterId));
    await recordAudit(tx, actor, {
      clusterId: input.clusterId,
      action: "cluster.reportInterval",
      entityType: "cluster",
      entityId: input.clusterId,
      summary: `Set the agent report interval of ${before.name} to ${input.seconds} s`,
      before: { reportIntervalS: before.reportIntervalS },
      after: { reportIntervalS: input.seconds },
    });
  });
  return written({ clusterId: input.clusterId, seconds: input.seconds }, { kind: "settings", clusterId: input.clusterId });
}
