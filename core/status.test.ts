import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  computeServerStatus,
  DEFAULT_REPORT_INTERVAL_S,
  effectiveStatus,
  isAvailable,
  isHealthyReport,
  isRecovery,
  SERVER_STATUSES,
  STATUS_LABELS,
  type ServerStatus,
  type ServerStatusInput,
} from "./status";

const NOW = 1_700_000_000_000;
const healthy = (): ServerStatusInput => ({
  enabled: true,
  everSucceeded: true,
  lastReportAtMs: NOW - 10_000,
  reportIntervalS: 60,
  lastReport: { listenerAlive: true, serviceRunning: true },
  probeHealthy: true,
  probesEnabled: true,
  meshUnreachable: false,
});
const st = (patch: Partial<ServerStatusInput>, now = NOW) => computeServerStatus({ ...healthy(), ...patch }, now);

describe("labels", () => {
  it("has the exact labels", () => {
    expect(STATUS_LABELS).toEqual({
      disabled: "Disabled by operator",
      pending: "Waiting for first check",
      "no-data": "No data from server",
      unavailable: "Server unavailable",
      "probe-failing": "Health probe failing",
      unreachable: "Unreachable from your servers",
      healthy: "Healthy",
    });
  });
  it("only healthy is available", () => {
    for (const s of SERVER_STATUSES) expect(isAvailable(s)).toBe(s === "healthy");
  });
  it("isHealthyReport", () => {
    expect(isHealthyReport({ listenerAlive: true, serviceRunning: true })).toBe(true);
    expect(isHealthyReport({ listenerAlive: false, serviceRunning: true })).toBe(false);
    expect(isHealthyReport({ listenerAlive: true, serviceRunning: false })).toBe(false);
    expect(isHealthyReport(null)).toBe(false);
  });
});

describe("each row", () => {
  it("healthy when nothing applies", () => {
    expect(st({})).toEqual({ status: "healthy", label: "Healthy", reason: expect.any(String) });
  });
  it("disabled", () => {
    expect(st({ enabled: false }).status).toBe("disabled");
    expect(st({ enabled: false }).label).toBe("Disabled by operator");
  });
  it("pending while no check has finished: no probe result, no agent report", () => {
    const r = st({ everSucceeded: false, probeHealthy: null, probeFailures: 0, lastReport: null, lastReportAtMs: null });
    expect(r.status).toBe("pending");
    expect(r.label).toBe("Waiting for first check");
    expect(st({ everSucceeded: false, probeHealthy: null, lastReport: null, lastReportAtMs: null }).status).toBe("pending");
  });
  it("an agent that reports down before any success is unavailable, not pending", () => {
    const r = st({ everSucceeded: false, probeHealthy: null, lastReport: { listenerAlive: false, serviceRunning: true } });
    expect(r.status).toBe("unavailable");
    expect(r.reason).toMatch(/listener is down/);
  });
  it("no-data after more than 3 report intervals", () => {
    expect(st({ lastReportAtMs: NOW - 180_000 }).status).toBe("healthy"); // exactly 3 intervals
    const r = st({ lastReportAtMs: NOW - 180_001 });
    expect(r.status).toBe("no-data");
    expect(r.label).toBe("No data from server");
    expect(r.reason).toMatch(/3 min/);
    expect(st({ reportIntervalS: 10, lastReportAtMs: NOW - 31_000 }).status).toBe("no-data");
    expect(st({ reportIntervalS: 10, lastReportAtMs: NOW - 29_000 }).status).toBe("healthy");
  });
  it("waiting for the first check (not no-data) while the agent never reported although probes pass", () => {
    const r = st({ lastReportAtMs: null, lastReport: null });
    expect(r.status).toBe("pending");
    expect(r.label).toBe("Waiting for first check");
    expect(r.reason).toMatch(/waiting for the agent's first report/);
  });
  it("unavailable when the agent reports listener or service down", () => {
    for (const lr of [
      { listenerAlive: false, serviceRunning: true },
      { listenerAlive: true, serviceRunning: false },
      { listenerAlive: false, serviceRunning: false },
    ]) {
      const r = st({ lastReport: lr });
      expect(r.status).toBe("unavailable");
      expect(r.label).toBe("Server unavailable");
    }
    expect(st({ lastReport: { listenerAlive: false, serviceRunning: false } }).reason).toMatch(
      /listener is down and VPN service is not running/,
    );
  });
  it("probe-failing only when probes are enabled and the verdict is false", () => {
    expect(st({ probeHealthy: false }).status).toBe("probe-failing");
    expect(st({ probeHealthy: false }).label).toBe("Health probe failing");
    expect(st({ probeHealthy: false, probeReason: "status 503 not in 200-399" }).reason).toMatch(/503/);
    expect(st({ probeHealthy: false, probesEnabled: false }).status).toBe("healthy");
    expect(st({ probeHealthy: null }).status).toBe("healthy");
  });
  it("unreachable from the mesh vote", () => {
    const r = st({ meshUnreachable: true, meshReason: "2 of 3 usable observers failed" });
    expect(r.status).toBe("unreachable");
    expect(r.label).toBe("Unreachable from your servers");
    expect(r.reason).toBe("2 of 3 usable observers failed");
  });
});

describe("probes failing before any success", () => {
  const never: Partial<ServerStatusInput> = { everSucceeded: false, probeHealthy: null, lastReport: null, lastReportAtMs: null };
  it("one failure below the threshold is already probe-failing, with the count and the last error", () => {
    const r = st({ ...never, probeFailures: 1, probeReason: "connection refused" });
    expect(r.status).toBe("probe-failing");
    expect(r.label).toBe("Health probe failing");
    expect(r.reason).toBe("Health probe has never passed (1 failure in a row); last error: connection refused.");
  });
  it("at and beyond the threshold (streak verdict false) it stays probe-failing and counts on", () => {
    const r = st({ ...never, probeHealthy: false, probeFailures: 3, probeReason: "timed out after 5 s" });
    expect(r.status).toBe("probe-failing");
    expect(r.reason).toMatch(/\(3 failures in a row\); last error: timed out after 5 s/);
    expect(st({ ...never, probeHealthy: false, probeFailures: 18 }).reason).toBe("Health probe has never passed (18 failures in a row).");
  });
  it("a verdict without a count or an error still says the probe fails", () => {
    expect(st({ ...never, probeHealthy: false }).reason).toBe("Health probe has never passed.");
    expect(st({ ...never, probeHealthy: false, probeFailures: Number.NaN }).status).toBe("probe-failing");
  });
  it("failed probes do not count while probes are turned off", () => {
    expect(st({ ...never, probesEnabled: false, probeHealthy: false, probeFailures: 5 }).status).toBe("pending");
  });
  it("the agent's own word comes first: a stale report is no-data, a fresh 'down' is unavailable", () => {
    const down = { listenerAlive: true, serviceRunning: false };
    expect(st({ ...never, probeFailures: 4, lastReport: down, lastReportAtMs: NOW - 600_000 }).status).toBe("no-data");
    expect(st({ ...never, probeFailures: 4, lastReport: down, lastReportAtMs: NOW - 1000 }).status).toBe("unavailable");
  });
  it("a just-enrolled server shows what the agent dialog says, from the first second to its first report", () => {
    // Added, no probe result, no report: the dialog's "Waiting for first check".
    expect(st(never).label).toBe("Waiting for first check");
    // The agent started its core, the probe passed, its first report is on its way: still waiting.
    expect(st({ ...never, everSucceeded: true, probeHealthy: true }).label).toBe("Waiting for first check");
    // Nothing answers on the inbound's port yet: the dialog's other case.
    expect(st({ ...never, probeHealthy: false, probeFailures: 1 }).label).toBe("Health probe failing");
    // The first report (sent as the agent starts) says the core is not up yet, then that it is.
    expect(st({ ...never, lastReportAtMs: NOW - 100, lastReport: { listenerAlive: false, serviceRunning: false } }).status).toBe("unavailable");
    expect(st({ everSucceeded: true, lastReportAtMs: NOW - 100, lastReport: { listenerAlive: true, serviceRunning: true } }).status).toBe("healthy");
  });
  it("a server never seen working is not no-data just because its agent never reported", () => {
    expect(st({ ...never, probeFailures: 2 }).status).toBe("probe-failing");
  });
  it("clock going backwards: a 'down' report from the future counts as fresh, failures still show", () => {
    const down = { listenerAlive: false, serviceRunning: false };
    expect(st({ ...never, probeFailures: 2, lastReport: down, lastReportAtMs: NOW + 3_600_000 }).status).toBe("unavailable");
    for (let now = NOW; now > NOW - 3_600_000; now -= 600_000) {
      expect(st({ ...never, probeFailures: 2 }, now).status).toBe("probe-failing");
    }
  });
  it("once a check succeeded, failures below the threshold do not count (the streak verdict decides)", () => {
    expect(st({ probeHealthy: true, probeFailures: 2 }).status).toBe("healthy");
    expect(st({ probeHealthy: false, probeFailures: 3, probeReason: "HTTP 503" }).reason).toBe(
      "Active health probe failing (3 failures in a row); last error: HTTP 503.",
    );
  });
});

describe("precedence", () => {
  const all: Partial<ServerStatusInput> = {
    enabled: false,
    everSucceeded: false,
    lastReportAtMs: NOW - 10 * 60_000,
    lastReport: { listenerAlive: false, serviceRunning: false },
    probeHealthy: false,
    meshUnreachable: true,
  };
  const order: [ServerStatus, Partial<ServerStatusInput>][] = [
    ["disabled", { enabled: true }],
    ["no-data", { everSucceeded: true }],
    ["no-data", { lastReportAtMs: NOW - 1000 }],
    ["unavailable", { lastReport: { listenerAlive: true, serviceRunning: true } }],
    ["probe-failing", { probeHealthy: true }],
    ["unreachable", { meshUnreachable: false }],
  ];
  it("pending comes right after disabled, while nothing has finished", () => {
    expect(computeServerStatus({ ...healthy(), ...all }, NOW).status).toBe("disabled");
    const fresh = { ...healthy(), ...all, enabled: true, lastReportAtMs: null, lastReport: null, probeHealthy: null, meshUnreachable: true };
    expect(computeServerStatus(fresh, NOW).status).toBe("pending");
  });
  it("the first applicable row wins, peeling one condition at a time", () => {
    let input = { ...healthy(), ...all };
    for (const [expected, fix] of order) {
      expect(computeServerStatus(input, NOW).status).toBe(expected);
      input = { ...input, ...fix };
    }
    expect(computeServerStatus(input, NOW).status).toBe("healthy");
  });

  it("property: the result is the first row whose condition holds", () => {
    fc.assert(
      fc.property(
        fc.record({
          enabled: fc.boolean(),
          everSucceeded: fc.boolean(),
          age: fc.option(fc.integer({ min: -600_000, max: 600_000 }), { nil: null }),
          listenerAlive: fc.boolean(),
          serviceRunning: fc.boolean(),
          hasReport: fc.boolean(),
          probeHealthy: fc.constantFrom(true, false, null),
          probeFailures: fc.integer({ min: 0, max: 5 }),
          probesEnabled: fc.boolean(),
          meshUnreachable: fc.boolean(),
        }),
        (g) => {
          const input: ServerStatusInput = {
            enabled: g.enabled,
            everSucceeded: g.everSucceeded,
            lastReportAtMs: g.age === null ? null : NOW - g.age,
            reportIntervalS: 60,
            lastReport: g.hasReport ? { listenerAlive: g.listenerAlive, serviceRunning: g.serviceRunning } : null,
            probeHealthy: g.probeHealthy,
            probesEnabled: g.probesEnabled,
            meshUnreachable: g.meshUnreachable,
            probeFailures: g.probeFailures,
          };
          const fresh = g.age !== null && g.age <= 180_000;
          const report = g.hasReport && g.age !== null;
          const down = report && !(g.listenerAlive && g.serviceRunning);
          const probeFailed = g.probesEnabled && (g.probeFailures > 0 || g.probeHealthy === false);
          const neverSucceeded: ServerStatus =
            g.age === null && !probeFailed
              ? "pending"
              : g.age !== null && !fresh
                ? "no-data"
                : down
                  ? "unavailable"
                  : probeFailed
                    ? "probe-failing"
                    : "pending";
          const expected: ServerStatus = !g.enabled
            ? "disabled"
            : !g.everSucceeded
              ? neverSucceeded
              : g.age === null
                ? "pending"
                : !fresh
                  ? "no-data"
                : g.hasReport && !(g.listenerAlive && g.serviceRunning)
                  ? "unavailable"
                  : g.probesEnabled && g.probeHealthy === false
                    ? "probe-failing"
                    : g.meshUnreachable
                      ? "unreachable"
                      : "healthy";
          const r = computeServerStatus(input, NOW);
          expect(r.status).toBe(expected);
          expect(r.label).toBe(STATUS_LABELS[expected]);
          expect(r.reason.length).toBeGreaterThan(0);
        },
      ),
    );
  });
});

describe("clock and odd inputs", () => {
  it("clock going backwards (report in the future) counts as fresh, does not throw", () => {
    expect(st({ lastReportAtMs: NOW + 3_600_000 }).status).toBe("healthy");
    expect(st({ lastReportAtMs: NOW + 1 }).status).toBe("healthy");
    expect(st({ lastReportAtMs: NOW + 3_600_000, lastReport: { listenerAlive: false, serviceRunning: true } }).status).toBe(
      "unavailable",
    );
  });
  it("a healthy server stays healthy as now moves backwards step by step", () => {
    for (let now = NOW; now > NOW - 3_600_000; now -= 60_000) {
      expect(st({ lastReportAtMs: NOW - 10_000 }, now).status).toBe("healthy");
    }
  });
  it("non-finite now does not throw or flip to no-data", () => {
    expect(st({}, NaN).status).toBe("healthy");
    expect(st({}, Infinity).status).toBe("healthy");
  });
  it("bad report interval falls back to the default", () => {
    const limit = 3 * DEFAULT_REPORT_INTERVAL_S * 1000;
    expect(st({ reportIntervalS: 0, lastReportAtMs: NOW - limit }).status).toBe("healthy");
    expect(st({ reportIntervalS: NaN, lastReportAtMs: NOW - limit - 1 }).status).toBe("no-data");
    expect(st({ reportIntervalS: -5, lastReportAtMs: NOW - limit - 1 }).status).toBe("no-data");
  });
  it("a stale report saying 'down' is no-data, not unavailable", () => {
    expect(st({ lastReportAtMs: NOW - 600_000, lastReport: { listenerAlive: false, serviceRunning: true } }).status).toBe(
      "no-data",
    );
  });
});

describe("isRecovery", () => {
  it("is a return to healthy from a status that means down", () => {
    for (const from of ["no-data", "unavailable", "probe-failing", "unreachable"]) expect(isRecovery(from, "healthy")).toBe(true);
  });
  it("is not a first success, a re-enabling, a status that stays, or a change to anything but healthy", () => {
    expect(isRecovery("pending", "healthy")).toBe(false);
    expect(isRecovery("disabled", "healthy")).toBe(false);
    expect(isRecovery("healthy", "healthy")).toBe(false);
    expect(isRecovery("no-data", "probe-failing")).toBe(false);
    expect(isRecovery("unknown-status", "healthy")).toBe(false);
  });
});

describe("effectiveStatus", () => {
  it("is disabled whatever the stored status when the operator disabled the server", () => {
    expect(effectiveStatus(false, "healthy")).toBe("disabled");
    expect(effectiveStatus(false, null)).toBe("disabled");
  });
  it("is the stored status, or pending without a health row", () => {
    expect(effectiveStatus(true, "probe-failing")).toBe("probe-failing");
    expect(effectiveStatus(true, null)).toBe("pending");
    expect(effectiveStatus(true, undefined)).toBe("pending");
  });
  it("is pending when the operator enabled it again and the row still says disabled", () => {
    expect(effectiveStatus(true, "disabled")).toBe("pending");
  });
  it("treats an unknown stored value as pending", () => {
    expect(effectiveStatus(true, "exploded")).toBe("pending");
  });
});
