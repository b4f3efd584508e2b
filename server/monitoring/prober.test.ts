import { afterEach, describe, expect, it, vi } from "vitest";
import net from "node:net";
import { Prober, type ProbeTarget, type ProberResult } from "./prober";
import type { ProbeOutcome } from "./probe";

const target = (serverId: string, intervalS = 10, extra: Partial<ProbeTarget["probe"]> = {}): ProbeTarget => ({
  serverId,
  host: "127.0.0.1",
  port: 443,
  probe: { protocol: "tcp", timeoutS: 5, intervalS, ...extra },
});

afterEach(() => {
  vi.useRealTimers();
});

function setup(targets: ProbeTarget[], probeMs = 0, opts: { random?: () => number } = {}) {
  let list = targets;
  const results: { serverId: string; result: ProberResult; t: number }[] = [];
  let concurrent = 0;
  const maxConcurrent = new Map<string, number>();
  const active = new Map<string, number>();
  const signals: AbortSignal[] = [];
  const runProbe = vi.fn(
    (_cfg: unknown, _host: string, port: number, o?: { signal?: AbortSignal }): Promise<ProbeOutcome> => {
      const id = String(port);
      active.set(id, (active.get(id) ?? 0) + 1);
      maxConcurrent.set(id, Math.max(maxConcurrent.get(id) ?? 0, active.get(id)!));
      concurrent++;
      if (o?.signal) signals.push(o.signal);
      return new Promise((resolve) => {
        const done = (r: ProbeOutcome) => {
          active.set(id, active.get(id)! - 1);
          concurrent--;
          resolve(r);
        };
        if (probeMs === 0) return done({ ok: true, latencyMs: 0, reason: "connected" });
        const t = setTimeout(() => done({ ok: true, latencyMs: probeMs, reason: "connected" }), probeMs);
        o?.signal?.addEventListener("abort", () => {
          clearTimeout(t);
          done({ ok: false, latencyMs: 0, reason: "aborted" });
        });
      });
    },
  );
  const prober = new Prober({
    listTargets: async () => list,
    onResult: async (serverId, result) => {
      results.push({ serverId, result, t: Date.now() });
    },
    runProbe,
    random: opts.random ?? (() => 0.5),
    refreshMs: 1000,
  });
  return {
    prober,
    results,
    runProbe,
    signals,
    maxConcurrent,
    setTargets: (t: ProbeTarget[]) => {
      list = t;
    },
    get concurrent() {
      return concurrent;
    },
  };
}

describe("Prober", () => {
  it("probes each target every intervalS after a jittered start", async () => {
    vi.useFakeTimers({ now: 0 });
    const s = setup([target("a", 10), target("b", 20)]);
    await s.prober.start();
    await vi.advanceTimersByTimeAsync(4_999);
    expect(s.results).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1); // a at 5 s (jitter 0.5 × 10 s)
    expect(s.results.map((r) => r.serverId)).toEqual(["a"]);
    await vi.advanceTimersByTimeAsync(10_000); // a at 15 s, b at 10 s
    expect(s.results.map((r) => r.serverId).sort()).toEqual(["a", "a", "b"]);
    await vi.advanceTimersByTimeAsync(55_000);
    const a = s.results.filter((r) => r.serverId === "a").map((r) => r.t);
    expect(a.slice(0, 4)).toEqual([5_000, 15_000, 25_000, 35_000]);
    expect(s.results.filter((r) => r.serverId === "b")).toHaveLength(4); // 10, 30, 50, 70
    expect(s.results[0]!.result).toMatchObject({ ok: true, atMs: 5_000 });
    await s.prober.stop();
  });

  it("jitter spreads first probes over one interval", async () => {
    vi.useFakeTimers({ now: 0 });
    const rs = [0, 0.25, 0.75];
    let i = 0;
    const s = setup([target("a", 8), target("b", 8), target("c", 8)], 0, { random: () => rs[i++ % 3]! });
    await s.prober.start();
    await vi.advanceTimersByTimeAsync(7_000);
    expect(s.results.map((r) => r.t)).toEqual([0, 2_000, 6_000]);
    await s.prober.stop();
  });

  it("never overlaps probes of one target when a probe outlasts the interval", async () => {
    vi.useFakeTimers({ now: 0 });
    const t = { ...target("a", 5), port: 1 };
    const s = setup([t], 12_000);
    await s.prober.start();
    await vi.advanceTimersByTimeAsync(100_000);
    expect(s.maxConcurrent.get("1")).toBe(1);
    // each probe takes 12 s, next starts right after: 2.5, 14.5, 26.5, ...
    expect(s.results.length).toBeGreaterThanOrEqual(7);
    expect(s.results.length).toBeLessThanOrEqual(9);
    await s.prober.stop();
  });

  it("keeps the cadence: probe time counts towards the interval", async () => {
    vi.useFakeTimers({ now: 0 });
    const s = setup([target("a", 10)], 3_000, { random: () => 0 });
    await s.prober.start();
    await vi.advanceTimersByTimeAsync(35_000);
    expect(s.results.map((r) => r.result.atMs)).toEqual([0, 10_000, 20_000, 30_000]);
    await s.prober.stop();
  });

  it("stop is prompt: clears every timer and aborts the probe in flight", async () => {
    vi.useFakeTimers({ now: 0 });
    const s = setup([target("a", 10), target("b", 10)], 60_000, { random: () => 0 });
    await s.prober.start();
    await vi.advanceTimersByTimeAsync(10);
    expect(s.concurrent).toBe(2);
    await s.prober.stop();
    expect(s.signals.every((sig) => sig.aborted)).toBe(true);
    expect(s.concurrent).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    expect(s.results).toHaveLength(0); // aborted results are not reported
    expect(s.prober.isRunning).toBe(false);
    await vi.advanceTimersByTimeAsync(100_000);
    expect(s.runProbe).toHaveBeenCalledTimes(2);
  });

  it("can be restarted after stop, and start/stop are idempotent", async () => {
    vi.useFakeTimers({ now: 0 });
    const s = setup([target("a", 10)], 0, { random: () => 0 });
    await s.prober.start();
    await s.prober.start();
    await vi.advanceTimersByTimeAsync(1);
    await s.prober.stop();
    await s.prober.stop();
    await s.prober.start();
    await vi.advanceTimersByTimeAsync(1);
    expect(s.results).toHaveLength(2);
    await s.prober.stop();
  });

  it("picks up added, removed, disabled and re-configured targets on refresh", async () => {
    vi.useFakeTimers({ now: 0 });
    const s = setup([target("a", 10)], 0, { random: () => 0 });
    await s.prober.start();
    await vi.advanceTimersByTimeAsync(1);
    s.setTargets([target("a", 10), target("b", 10)]);
    await s.prober.refresh();
    await vi.advanceTimersByTimeAsync(1);
    expect(s.results.map((r) => r.serverId)).toEqual(["a", "b"]);
    s.setTargets([target("b", 10), target("c", 10, { enabled: false })]);
    await s.prober.refresh();
    expect(s.prober.snapshot().map((x) => x.serverId)).toEqual(["b"]);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(s.results.filter((r) => r.serverId === "a")).toHaveLength(1);
    expect(s.results.filter((r) => r.serverId === "c")).toHaveLength(0);
    // interval change: takes effect within one new interval
    s.setTargets([target("b", 60)]);
    await s.prober.refresh();
    const before = s.results.length;
    await vi.advanceTimersByTimeAsync(119_000); // rescheduled at once (random 0), then every 60 s
    expect(s.results.length - before).toBe(2);
    await s.prober.stop();
  });

  it("refreshes the target list periodically", async () => {
    vi.useFakeTimers({ now: 0 });
    const s = setup([], 0, { random: () => 0 });
    await s.prober.start();
    s.setTargets([target("late", 10)]);
    await vi.advanceTimersByTimeAsync(1_001);
    expect(s.results.map((r) => r.serverId)).toEqual(["late"]);
    await s.prober.stop();
  });

  it("survives onResult and listTargets failures", async () => {
    vi.useFakeTimers({ now: 0 });
    const warn = vi.fn();
    const error = vi.fn();
    let calls = 0;
    let failList = false;
    const prober = new Prober({
      listTargets: async () => {
        if (failList) throw new Error("db down");
        return [target("a", 10)];
      },
      onResult: async () => {
        calls++;
        throw new Error("write failed");
      },
      runProbe: async () => ({ ok: true, latencyMs: 1, reason: "connected" }),
      random: () => 0,
      logger: { warn, error },
      refreshMs: 1000,
    });
    await prober.start();
    failList = true;
    await vi.advanceTimersByTimeAsync(30_001);
    expect(calls).toBe(4);
    expect(error).toHaveBeenCalled();
    expect(warn).toHaveBeenCalled();
    await prober.stop();
  });

  it("reports a crashing probe function as a failed result", async () => {
    vi.useFakeTimers({ now: 0 });
    const results: ProberResult[] = [];
    const prober = new Prober({
      listTargets: async () => [target("a", 10)],
      onResult: async (_id, r) => void results.push(r),
      runProbe: async () => {
        throw new Error("kaboom");
      },
      random: () => 0,
    });
    await prober.start();
    await vi.advanceTimersByTimeAsync(1);
    expect(results[0]).toMatchObject({ ok: false, reason: "probe crashed: kaboom" });
    await prober.stop();
  });

  it("integration: real TCP probes with real timers", async () => {
    const server = net.createServer((s) => s.end());
    const port = await new Promise<number>((r) =>
      server.listen(0, "127.0.0.1", () => r((server.address() as net.AddressInfo).port)),
    );
    const results: ProberResult[] = [];
    const prober = new Prober({
      listTargets: async () => [
        { serverId: "s1", host: "127.0.0.1", port, probe: { protocol: "tcp", timeoutS: 1, intervalS: 0.05 } },
      ],
      onResult: async (_id, r) => void results.push(r),
    });
    await prober.start();
    await vi.waitUntil(() => results.length >= 3, { timeout: 10_000 });
    await prober.stop();
    server.close();
    expect(results.length).toBeGreaterThanOrEqual(3);
    expect(results.every((r) => r.ok)).toBe(true);
  });
});
