import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { applyProbeResult, initialProbeStreak, INITIAL_PROBE_STREAK, type ProbeStreakState } from "./probe-streak";

const OK = { ok: true, reason: "ok" };
const FAIL = { ok: false, reason: "connection refused" };

function run(seq: string, t = { unhealthyThreshold: 3, healthyThreshold: 1 }, from?: ProbeStreakState) {
  let s: ProbeStreakState = from ?? initialProbeStreak();
  const trace: (boolean | null)[] = [];
  for (const c of seq) {
    s = applyProbeResult(s, c === "+" ? OK : FAIL, t);
    trace.push(s.probeHealthy);
  }
  return { s, trace };
}

describe("probe streak machine", () => {
  it("starts with no verdict", () => {
    expect(initialProbeStreak()).toEqual({
      consecutiveFailures: 0,
      consecutiveSuccesses: 0,
      probeHealthy: null,
      everSucceeded: false,
      lastResult: null,
    });
    expect(Object.isFrozen(INITIAL_PROBE_STREAK)).toBe(true);
  });

  it("does not mutate its input", () => {
    const s = initialProbeStreak();
    const copy = { ...s };
    applyProbeResult(s, FAIL, { unhealthyThreshold: 1, healthyThreshold: 1 });
    expect(s).toEqual(copy);
  });

  it("accepts a null state as the initial state", () => {
    expect(applyProbeResult(null, OK, { unhealthyThreshold: 3, healthyThreshold: 1 }).probeHealthy).toBe(true);
  });

  it("first success is a successful check even with healthyThreshold > 1", () => {
    const { s } = run("+", { unhealthyThreshold: 3, healthyThreshold: 3 });
    expect(s.everSucceeded).toBe(true);
    expect(s.probeHealthy).toBe(true);
    expect(s.lastResult).toEqual(OK);
  });

  it("failures before any success stay 'no verdict' until the threshold, then false", () => {
    const { s, trace } = run("---");
    expect(trace).toEqual([null, null, false]);
    expect(s.everSucceeded).toBe(false);
    expect(s.consecutiveFailures).toBe(3);
  });

  it("unhealthy after exactly unhealthyThreshold failures in a row (threshold 3)", () => {
    expect(run("+--").trace).toEqual([true, true, true]);
    expect(run("+---").trace).toEqual([true, true, true, false]);
  });

  it("a success in between resets the failure streak", () => {
    expect(run("+--+--").trace.every((h) => h === true)).toBe(true);
    expect(run("+--+---").s.probeHealthy).toBe(false);
  });

  it("threshold 1: one failure makes it unhealthy, one success heals", () => {
    const t = { unhealthyThreshold: 1, healthyThreshold: 1 };
    expect(run("+-+-", t).trace).toEqual([true, false, true, false]);
    expect(run("-", t).trace).toEqual([false]);
  });

  it("recovery needs healthyThreshold successes in a row", () => {
    const t = { unhealthyThreshold: 2, healthyThreshold: 3 };
    expect(run("+--++-+++", t).trace).toEqual([true, true, false, false, false, false, false, false, true]);
  });

  it("never-succeeded then failing then succeeding: first success heals at once (it is the first check)", () => {
    const t = { unhealthyThreshold: 2, healthyThreshold: 3 };
    const { trace, s } = run("---+", t);
    expect(trace).toEqual([null, false, false, false]);
    // probeHealthy was false already (threshold failures); recovery then needs 3 successes
    expect(s.probeHealthy).toBe(false);
    expect(s.everSucceeded).toBe(true);
    expect(run("---+++", t).s.probeHealthy).toBe(true);
  });

  it("counts streaks", () => {
    const { s } = run("++-+++");
    expect(s.consecutiveSuccesses).toBe(3);
    expect(s.consecutiveFailures).toBe(0);
    const f = run("++--").s;
    expect(f.consecutiveSuccesses).toBe(0);
    expect(f.consecutiveFailures).toBe(2);
  });

  it("bad thresholds are treated as 1", () => {
    expect(run("+-", { unhealthyThreshold: 0, healthyThreshold: NaN }).s.probeHealthy).toBe(false);
  });

  it("lowering the threshold takes effect on the next result", () => {
    const a = run("+--").s; // healthy, 2 failures
    expect(applyProbeResult(a, FAIL, { unhealthyThreshold: 5, healthyThreshold: 1 }).probeHealthy).toBe(true);
    expect(applyProbeResult(a, FAIL, { unhealthyThreshold: 2, healthyThreshold: 1 }).probeHealthy).toBe(false);
  });

  it("property: healthy===false iff a failure streak reached the threshold since the last recovery", () => {
    fc.assert(
      fc.property(
        fc.array(fc.boolean(), { maxLength: 60 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 5 }),
        (seq, u, h) => {
          let s = initialProbeStreak();
          // reference model
          let healthy: boolean | null = null;
          let f = 0;
          let k = 0;
          for (const ok of seq) {
            s = applyProbeResult(s, { ok }, { unhealthyThreshold: u, healthyThreshold: h });
            if (ok) {
              k++;
              f = 0;
              if (healthy === null || (healthy === false && k >= h)) healthy = true;
            } else {
              f++;
              k = 0;
              if (f >= u) healthy = false;
            }
            expect(s.probeHealthy).toBe(healthy);
            expect(s.consecutiveFailures).toBe(f);
            expect(s.consecutiveSuccesses).toBe(k);
          }
          expect(s.everSucceeded).toBe(seq.includes(true));
        },
      ),
    );
  });
});
