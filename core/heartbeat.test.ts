import { describe, expect, it } from "vitest";
import {
  balancerLoad,
  FAST_PROBE_CONFIRMATIONS,
  heartbeatLostNow,
  heartbeatPhase,
  heartbeatSilenceMs,
  isPanelBlind,
  LOAD_CURRENT_MS,
  LOAD_INTERVAL_S,
  loadsCurrent,
  lossConfirmed,
  stallGraceUntil,
  startGraceUntil,
  WATCH_TICK_MS,
} from "./heartbeat";
import { computeServerStatus, type ServerStatusInput } from "./status";

const NOW = 1_700_000_000_000;

describe("heartbeatPhase", () => {
  it("never without a heartbeat (the fast path does not apply)", () => {
    expect(heartbeatPhase(null, NOW)).toBe("never");
    expect(heartbeatPhase(Number.NaN, NOW)).toBe("never");
    expect(heartbeatSilenceMs(null, NOW)).toBeNull();
  });
  it("alive up to 1.5 intervals, late up to 3, suspect after (boundaries belong to the better phase)", () => {
    expect(heartbeatPhase(NOW, NOW)).toBe("alive"); // equal timestamps
    expect(heartbeatPhase(NOW - 3000, NOW)).toBe("alive");
    expect(heartbeatPhase(NOW - 3001, NOW)).toBe("late");
    expect(heartbeatPhase(NOW - 6000, NOW)).toBe("late");
    expect(heartbeatPhase(NOW - 6001, NOW)).toBe("suspect");
    expect(heartbeatPhase(NOW - 9001, NOW, 3)).toBe("suspect");
    expect(heartbeatPhase(NOW - 9000, NOW, 3)).toBe("late");
  });
  it("stale after the fast path's window: the slow path decides", () => {
    expect(heartbeatPhase(NOW - 60_000, NOW)).toBe("suspect");
    expect(heartbeatPhase(NOW - 60_001, NOW)).toBe("stale");
    const failedProbes = [3000, 2000, 1000].map((d) => ({ startedAtMs: NOW - d, ok: false }));
    expect(lossConfirmed(NOW - 60_001, failedProbes, NOW, false)).toBe(false);
  });
  it("clock going backwards: a heartbeat in the future counts as just now", () => {
    expect(heartbeatPhase(NOW + 60_000, NOW)).toBe("alive");
    expect(heartbeatSilenceMs(NOW + 60_000, NOW)).toBe(0);
  });
  it("a bad interval falls back to the default", () => {
    expect(heartbeatPhase(NOW - 6001, NOW, 0)).toBe("suspect");
    expect(heartbeatPhase(NOW - 6001, NOW, Number.NaN)).toBe("suspect");
  });
});

describe("isPanelBlind", () => {
  it("more than half silent at once is the panel's own problem", () => {
    expect(isPanelBlind(10, 6)).toBe(true);
    expect(isPanelBlind(10, 5)).toBe(false);
    expect(isPanelBlind(2, 1)).toBe(false); // one of two dies: still routed around
    expect(isPanelBlind(2, 2)).toBe(true); // all servers lost at once
    expect(isPanelBlind(1, 1)).toBe(true);
  });
  it("nothing heartbeating, negative or excess counts", () => {
    expect(isPanelBlind(0, 0)).toBe(false);
    expect(isPanelBlind(0, 5)).toBe(false);
    expect(isPanelBlind(4, -3)).toBe(false);
    expect(isPanelBlind(4, 99)).toBe(true);
  });
});

describe("stallGraceUntil", () => {
  it("a normal tick changes nothing", () => {
    expect(stallGraceUntil(NOW - WATCH_TICK_MS, NOW, WATCH_TICK_MS, 0)).toBe(0);
    expect(stallGraceUntil(null, NOW, WATCH_TICK_MS, 0)).toBe(0);
  });
  it("a stalled event loop gives a full suspect window of grace", () => {
    expect(stallGraceUntil(NOW - 20_000, NOW, WATCH_TICK_MS, 0)).toBe(NOW + 6000);
  });
  it("the clock going backwards is a stall too", () => {
    expect(stallGraceUntil(NOW + 1, NOW, WATCH_TICK_MS, 0)).toBe(NOW + 6000);
  });
  it("never shortens an existing grace", () => {
    expect(stallGraceUntil(NOW - 20_000, NOW, WATCH_TICK_MS, NOW + 60_000)).toBe(NOW + 60_000);
  });
});

describe("startGraceUntil", () => {
  it("a watcher that starts is blind for one suspect window", () => {
    expect(startGraceUntil(NOW)).toBe(NOW + 6000);
    expect(startGraceUntil(Number.NaN)).toBe(6000);
  });
});

describe("lossConfirmed", () => {
  const last = NOW - 7000; // suspect
  const failed = (atMs: number) => ({ startedAtMs: atMs, ok: false });
  const three = [failed(NOW - 3000), failed(NOW - 2000), failed(NOW - 1000)];
  it("suspect + the last three fast probes after the heartbeat failed", () => {
    expect(FAST_PROBE_CONFIRMATIONS).toBe(3);
    expect(lossConfirmed(last, three, NOW, false)).toBe(true);
  });
  it("fewer failed probes are not enough (timeouts on a healthy server)", () => {
    expect(lossConfirmed(last, [failed(NOW - 1000)], NOW, false)).toBe(false);
    expect(lossConfirmed(last, [failed(NOW - 2000), failed(NOW - 1000)], NOW, false)).toBe(false);
  });
  it("a passing probe among the last three (a busy machine with late heartbeats) is not a loss", () => {
    expect(lossConfirmed(last, [...three.slice(0, 2), { startedAtMs: NOW - 500, ok: true }], NOW, false)).toBe(false);
    expect(lossConfirmed(last, [{ startedAtMs: NOW - 4000, ok: true }, ...three], NOW, false)).toBe(true);
  });
  it("order of the records does not matter", () => {
    expect(lossConfirmed(last, [{ startedAtMs: NOW - 500, ok: true }, ...three], NOW, false)).toBe(false);
    expect(lossConfirmed(last, [...three].reverse(), NOW, false)).toBe(true);
  });
  it("probes from before the last heartbeat, or at its very millisecond, do not count", () => {
    expect(lossConfirmed(last, [failed(last - 1), failed(last), failed(last + 1), failed(last + 2)], NOW, false)).toBe(false);
    expect(lossConfirmed(last, [failed(last + 1), failed(last + 2), failed(last + 3)], NOW, false)).toBe(true);
  });
  it("probes sent before the panel's last blind window ended do not count (its network may already have been failing)", () => {
    const blindEnded = NOW - 2500;
    expect(lossConfirmed(last, three, NOW, false, undefined, blindEnded)).toBe(false);
    expect(lossConfirmed(last, [failed(blindEnded + 1), failed(blindEnded + 2), failed(blindEnded + 3)], NOW, false, undefined, blindEnded)).toBe(true);
    expect(lossConfirmed(last, [failed(blindEnded), failed(blindEnded + 2), failed(blindEnded + 3)], NOW, false, undefined, blindEnded)).toBe(false); // equal: no
    expect(lossConfirmed(last, three, NOW, false, undefined, Number.NaN)).toBe(true);
  });
  it("not before the suspect window, never without heartbeats, never while blind", () => {
    expect(lossConfirmed(NOW - 5000, three, NOW, false)).toBe(false);
    expect(lossConfirmed(null, three, NOW, false)).toBe(false);
    expect(lossConfirmed(last, three, NOW, true)).toBe(false);
  });
  it("clock going backwards: a future heartbeat is alive, nothing is confirmed", () => {
    expect(lossConfirmed(NOW + 10_000, [failed(NOW + 11_000), failed(NOW + 12_000), failed(NOW + 13_000)], NOW, false)).toBe(false);
  });
});

describe("heartbeatLostNow and the status rule", () => {
  const base = (): ServerStatusInput => ({
    enabled: true,
    everSucceeded: true,
    lastReportAtMs: NOW - 10_000,
    reportIntervalS: 60,
    lastReport: { listenerAlive: true, serviceRunning: true },
    probeHealthy: true,
    probesEnabled: true,
    meshUnreachable: false,
  });
  it("a confirmed loss later than the last heartbeat holds; a later heartbeat clears it; ties go to the heartbeat", () => {
    expect(heartbeatLostNow(NOW - 8000, NOW - 1000)).toBe(true);
    expect(heartbeatLostNow(NOW, NOW - 1000)).toBe(false);
    expect(heartbeatLostNow(NOW, NOW)).toBe(false);
    expect(heartbeatLostNow(null, NOW)).toBe(false);
    expect(heartbeatLostNow(NOW, null)).toBe(false);
    expect(heartbeatLostNow(undefined, undefined)).toBe(false);
  });
  it("takes a healthy server out of rotation as no-data, although its report and probes are still fresh", () => {
    const r = computeServerStatus({ ...base(), lastHeartbeatAtMs: NOW - 8000, heartbeatLostAtMs: NOW - 500 }, NOW);
    expect(r.status).toBe("no-data");
    expect(r.reason).toMatch(/No heartbeat for 8 s.*3 fast probes/);
  });
  it("a heartbeat after the loss brings it back at once", () => {
    expect(computeServerStatus({ ...base(), lastHeartbeatAtMs: NOW, heartbeatLostAtMs: NOW - 500 }, NOW).status).toBe("healthy");
  });
  it("a server that never sent a heartbeat keeps today's behaviour", () => {
    expect(computeServerStatus({ ...base(), lastHeartbeatAtMs: null, heartbeatLostAtMs: NOW }, NOW).status).toBe("healthy");
    expect(computeServerStatus(base(), NOW).status).toBe("healthy");
  });
  it("disabled and never-succeeded rows come first", () => {
    expect(computeServerStatus({ ...base(), enabled: false, lastHeartbeatAtMs: NOW - 8000, heartbeatLostAtMs: NOW }, NOW).status).toBe("disabled");
    expect(
      computeServerStatus({ ...base(), everSucceeded: false, probeHealthy: null, lastReport: null, lastReportAtMs: null, lastHeartbeatAtMs: NOW - 8000, heartbeatLostAtMs: NOW }, NOW).status,
    ).toBe("pending");
  });
  it("clock going backwards after the loss: the reason says 0 s, nothing throws", () => {
    const r = computeServerStatus({ ...base(), lastHeartbeatAtMs: NOW - 8000, heartbeatLostAtMs: NOW - 500 }, NOW - 60_000);
    expect(r.status).toBe("no-data");
    expect(r.reason).toMatch(/No heartbeat for 0 s/);
  });
});

describe("balancerLoad: loads while they are current, else the report", () => {
  const report = { atMs: NOW, users: 300, trafficBps: 600e6 };
  const load = (ageMs: number) => ({ atMs: NOW - ageMs, users: 120, trafficBps: 700e6 });
  it("a load up to LOAD_CURRENT_MS older than the report is the figure", () => {
    expect(balancerLoad(report, load(0))).toEqual(load(0));
    expect(balancerLoad(report, load(LOAD_CURRENT_MS))).toEqual(load(LOAD_CURRENT_MS));
    expect(balancerLoad(report, { ...report, atMs: NOW + 5_000, users: 7 }).users).toBe(7);
  });
  it("loads that stopped before the report, or never came, give the report", () => {
    expect(balancerLoad(report, load(LOAD_CURRENT_MS + 1))).toBe(report);
    expect(balancerLoad(report, null)).toBe(report);
    expect(balancerLoad(report, { ...load(0), atMs: Number.NaN })).toBe(report);
  });
  it("loadsCurrent: null and non-finite times are not current; the clock going backwards is", () => {
    expect(loadsCurrent(null, NOW)).toBe(false);
    expect(loadsCurrent(Number.NEGATIVE_INFINITY, NOW)).toBe(false);
    expect(loadsCurrent(NOW, NOW - 3_600_000)).toBe(true);
    expect(LOAD_CURRENT_MS).toBe(3 * LOAD_INTERVAL_S * 1000);
  });
});
