/**
 * The server status machine of DESIGN §3. Pure: `(input, nowMs) → status`.
 *
 * A server's status is the first row that applies; only `healthy` is available:
 *   disabled → pending → no-data → unavailable → probe-failing → unreachable → healthy
 *
 * Decisions (documented for whoever persists the inputs):
 * - A "check" is an active probe or an agent report. A successful one is a passing probe or a
 *   report saying both the listener is alive and the VPN service is running
 *   (`isHealthyReport`); `everSucceeded` is sticky (persisted) once any check succeeded.
 * - `pending` means no check has finished yet: no probe has failed and the agent has never
 *   reported. Once a check has finished and failed, a server that never succeeded goes
 *   straight to the row its failure names: `no-data` (its only report went stale),
 *   `unavailable` (its agent reports down) or `probe-failing` (from the first failed probe:
 *   the probe's unhealthy threshold protects a server known to work from a blip, and a
 *   server never seen working has no such state to protect). The reason carries the failure
 *   count and the last error.
 * - `no-data` when the agent has not reported for more than 3 report intervals. A server whose
 *   probes pass but whose agent has NEVER reported stays `pending` (waiting for the agent's
 *   first check): without a report we know neither the listener/service state nor the load,
 *   and the balancer would score an idle-looking server as the best one.
 * - Clock going backwards (report timestamp in the future): the report's age is taken as 0,
 *   i.e. the report counts as fresh; nothing throws. Non-finite / non-positive
 *   reportIntervalS falls back to DEFAULT_REPORT_INTERVAL_S.
 * - The `unavailable` row uses the latest report only while it is fresh (stale reports are
 *   already `no-data`, which comes first).
 * - Heartbeat loss (core/heartbeat.ts): a server that once succeeded is `no-data` while the
 *   panel's confirmed loss (heartbeatLostAtMs) is later than its last heartbeat; never applies
 *   to a server that never sent one. Equal timestamps: the heartbeat wins.
 * - `probe-failing` for a server that once succeeded only when probes are enabled and the
 *   streak machine says `false` (null = no verdict yet does not count).
 */

import { plural } from "./plural";
import { FAST_PROBE_CONFIRMATIONS, HEARTBEAT_INTERVAL_S, heartbeatLostNow, heartbeatSilenceMs } from "./heartbeat";

export const SERVER_STATUSES = [
  "disabled",
  "pending",
  "no-data",
  "unavailable",
  "probe-failing",
  "unreachable",
  "healthy",
] as const;
export type ServerStatus = (typeof SERVER_STATUSES)[number];

export const STATUS_LABELS: Readonly<Record<ServerStatus, string>> = Object.freeze({
  disabled: "Disabled by operator",
  pending: "Waiting for first check",
  "no-data": "No data from server",
  unavailable: "Server unavailable",
  "probe-failing": "Health probe failing",
  unreachable: "Unreachable from your servers",
  healthy: "Healthy",
});

/** A report older than this many intervals means `no-data`. */
export const NO_DATA_INTERVALS = 3;
export const DEFAULT_REPORT_INTERVAL_S = 60;

export interface ReportFlags {
  listenerAlive: boolean;
  serviceRunning: boolean;
}

export interface ServerStatusInput {
  enabled: boolean;
  /** Sticky: any successful probe or healthy agent report ever (see isHealthyReport). */
  everSucceeded: boolean;
  /** When the latest agent report was received (server clock), null if never. */
  lastReportAtMs: number | null;
  /** The agent's report interval in seconds. */
  reportIntervalS: number;
  lastReport: ReportFlags | null;
  /** From the probe streak machine; null = no verdict yet. */
  probeHealthy: boolean | null;
  probesEnabled: boolean;
  /** From the mesh vote. */
  meshUnreachable: boolean;
  /** Optional detail for the `unreachable` reason (e.g. the mesh verdict's reason). */
  meshReason?: string;
  /** Optional detail for the `probe-failing` reason (e.g. the last probe's reason). */
  probeReason?: string;
  /** Failed probes in a row (the streak machine's consecutiveFailures); 0 or missing = none. */
  probeFailures?: number;
  /** When the agent's last heartbeat arrived (core/heartbeat.ts); null/missing = never (the fast path does not apply). */
  lastHeartbeatAtMs?: number | null;
  /** When the panel confirmed the heartbeat lost (suspect + failed fast probes); a later heartbeat clears it. */
  heartbeatLostAtMs?: number | null;
}

export interface ServerStatusResult {
  status: ServerStatus;
  label: string;
  reason: string;
}

/** Whether an agent report counts as a successful check. */
/** Statuses of a server that was checked and found down (not new, not disabled). */
export const DOWN_STATUSES: ReadonlySet<ServerStatus> = new Set(["no-data", "unavailable", "probe-failing", "unreachable"]);

/** A change that brings a server back from an outage (a first success or re-enabling is not one). */
export function isRecovery(from: string, to: string): boolean {
  return to === "healthy" && DOWN_STATUSES.has(from as ServerStatus);
}

export function isHealthyReport(report: ReportFlags | null | undefined): boolean {
  return !!report && report.listenerAlive && report.serviceRunning;
}

/** Only `healthy` servers are available to the balancer. */
export function isAvailable(status: string | null | undefined): boolean {
  return status === "healthy";
}

/**
 * The status a server shows: `disabled` whatever its health row says (the sweep may not have
 * run since the operator disabled it), and `pending` while it has no health row yet or the
 * row still says `disabled` from before the operator enabled it again.
 */
export function effectiveStatus(enabled: boolean, stored: string | null | undefined): ServerStatus {
  if (!enabled) return "disabled";
  if (!stored || stored === "disabled" || !(SERVER_STATUSES as readonly string[]).includes(stored)) return "pending";
  return stored as ServerStatus;
}

function effectiveIntervalS(s: number): number {
  return Number.isFinite(s) && s > 0 ? s : DEFAULT_REPORT_INTERVAL_S;
}

function fmtDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 120) return `${m} min`;
  const h = Math.round(m / 60);
  if (h < 48) return `${h} h`;
  return `${Math.round(h / 24)} days`;
}

function downParts(r: ReportFlags): string {
  const parts: string[] = [];
  if (!r.listenerAlive) parts.push("traffic listener is down");
  if (!r.serviceRunning) parts.push("VPN service is not running");
  return parts.join(" and ");
}

/** Age of the latest report in ms (≥ 0; a future timestamp counts as age 0), or null. */
export function reportAgeMs(lastReportAtMs: number | null, nowMs: number): number | null {
  if (lastReportAtMs === null || !Number.isFinite(lastReportAtMs)) return null;
  if (!Number.isFinite(nowMs)) return 0;
  return Math.max(0, nowMs - lastReportAtMs);
}

function make(status: ServerStatus, reason: string): ServerStatusResult {
  return { status, label: STATUS_LABELS[status], reason };
}

export function computeServerStatus(input: ServerStatusInput, nowMs: number): ServerStatusResult {
  if (!input.enabled) return make("disabled", "The operator disabled this server; it gets no new users.");

  const intervalS = effectiveIntervalS(input.reportIntervalS);
  const age = reportAgeMs(input.lastReportAtMs, nowMs);
  const fresh = age !== null && age <= NO_DATA_INTERVALS * intervalS * 1000;

  const failures = Number.isFinite(input.probeFailures) ? Math.max(0, Math.floor(input.probeFailures!)) : 0;
  const probeFailureReason = (prefix: string) =>
    `${prefix}${failures > 0 ? ` (${plural(failures, "failure")} in a row)` : ""}${input.probeReason ? `; last error: ${input.probeReason}` : ""}.`;

  if (!input.everSucceeded) {
    const probeFailed = input.probesEnabled && (failures > 0 || input.probeHealthy === false);
    if (age === null && !probeFailed) {
      return make("pending", "No check has finished yet: no probe result and no agent report.");
    }
    if (age !== null && !fresh) {
      return make("no-data", `No agent report for ${fmtDuration(age)}, and no check has succeeded yet.`);
    }
    if (fresh && input.lastReport && !isHealthyReport(input.lastReport)) {
      return make("unavailable", `The agent reports its ${downParts(input.lastReport)}; no check has succeeded yet.`);
    }
    if (probeFailed) return make("probe-failing", probeFailureReason("Health probe has never passed"));
    return make("pending", "No successful check yet.");
  }

  // Fast path (issue 24): a confirmed heartbeat loss outranks an older report or probe.
  if (heartbeatLostNow(input.lastHeartbeatAtMs, input.heartbeatLostAtMs)) {
    const silence = heartbeatSilenceMs(input.lastHeartbeatAtMs!, nowMs) ?? 0;
    return make(
      "no-data",
      `No heartbeat for ${fmtDuration(silence)} (expected every ${HEARTBEAT_INTERVAL_S} s) and ${FAST_PROBE_CONFIRMATIONS} fast probes in a row failed: out of rotation until a heartbeat arrives.`,
    );
  }

  if (age === null) {
    // A new server whose probe passed before its agent ever reported (the agent not started
    // yet) is still waiting for its first check, as the agent dialog says: "No data from
    // server" would read as an agent that went silent. Out of rotation either way.
    return make("pending", "The health probe passes; waiting for the agent's first report (probes alone do not give load or service state).");
  }
  if (!fresh) {
    return make(
      "no-data",
      `No agent report for ${fmtDuration(age)} (expected every ${fmtDuration(intervalS * 1000)}; limit is ${NO_DATA_INTERVALS} intervals).`,
    );
  }

  if (input.lastReport && !isHealthyReport(input.lastReport)) {
    return make("unavailable", `The agent reports its ${downParts(input.lastReport)}.`);
  }

  if (input.probesEnabled && input.probeHealthy === false) {
    return make("probe-failing", probeFailureReason("Active health probe failing"));
  }

  if (input.meshUnreachable) {
    return make("unreachable", input.meshReason ?? "Other servers of the cluster cannot reach it.");
  }

  return make("healthy", "All checks pass.");
}
