import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseScenario, ScenarioError, simulate, type Scenario } from "./index";
import { buildWorkload, runPolicy } from "./engine";
import { newcomerAllocation, oraclePolicy, routeboardPolicy, type Policy } from "./policies";
import { ABLATION_NAMES, ABLATIONS, type Ablation } from "./ablations";
import { buildScenario } from "./families";
import { LOAD_INTERVAL_S } from "@/core/heartbeat";

const small = (): Record<string, unknown> => ({
  name: "small",
  seed: 3,
  durationS: 3600,
  reportIntervalS: 60,
  route: { algorithm: "least-traffic" },
  servers: [
    { id: "a", capacityMbps: 100 },
    { id: "b", capacityMbps: 300, outages: [{ fromS: 1200, toS: 1500 }] },
  ],
  users: {
    count: 150,
    arrival: { kind: "poisson", overS: 600 },
    refreshS: 600,
    sessions: { meanOnS: 900, meanOffS: 300 },
    demandMbps: { kind: "lognormal", median: 2, sigma: 0.7 },
  },
});

function problems(v: unknown): string[] {
  try {
    parseScenario(v);
  } catch (e) {
    if (e instanceof ScenarioError) return e.problems;
    throw e;
  }
  return [];
}

describe("scenario validation", () => {
  it("accepts a valid scenario", () => {
    expect(problems(small())).toEqual([]);
  });
  it("names an unknown field", () => {
    const s = small();
    (s.users as Record<string, unknown>).extra = 1;
    expect(problems(s)).toEqual(["users.extra: unknown field"]);
  });
  it("names a missing field", () => {
    const s = small();
    delete (s.users as Record<string, unknown>).refreshS;
    expect(problems(s)).toEqual(["users.refreshS: required field is missing"]);
  });
  it("names a wrong type and a bad enum value", () => {
    const s = small();
    s.seed = "3";
    ((s.users as Record<string, unknown>).arrival as Record<string, unknown>).kind = "trickle";
    expect(problems(s)).toEqual(["seed: expected an integer number", 'users.arrival.kind: expected "poisson" | "burst"']);
  });
  it("names array elements", () => {
    const s = small();
    (s.servers as Record<string, unknown>[])[1]!.capacityMbps = -1;
    expect(problems(s)).toEqual(["servers[1].capacityMbps: must be > 0"]);
  });
  it("optional fields may be left out but not mistyped", () => {
    const s = small();
    (s.route as Record<string, unknown>).hysteresis = "x";
    expect(problems(s)).toEqual(["route.hysteresis: expected a number"]);
  });
  it("loadIntervalS is optional, and a whole number of seconds from 1 when given", () => {
    expect(parseScenario(small()).loadIntervalS).toBeUndefined();
    expect(parseScenario({ ...small(), loadIntervalS: 1 }).loadIntervalS).toBe(1);
    expect(problems({ ...small(), loadIntervalS: 0 })).toEqual(["loadIntervalS: must be ≥ 1"]);
    expect(problems({ ...small(), loadIntervalS: 1.5 })).toEqual(["loadIntervalS: expected an integer number"]);
    expect(problems({ ...small(), loadIntervalS: "x" })).toEqual(["loadIntervalS: expected an integer number"]);
    expect(problems({ ...small(), loadIntervalS: 30 * 86400 + 1 })).toEqual([`loadIntervalS: must be ≤ ${30 * 86400}`]);
  });
});

describe("simulate", () => {
  const sc = parseScenario(small()) as Scenario;
  it("is deterministic for a seed (timing aside)", () => {
    const strip = (o: ReturnType<typeof simulate>) =>
      Object.fromEntries(Object.entries(o.results).map(([k, v]) => [k, { ...v, decisionsPerSecond: 0 }]));
    expect(strip(simulate(sc))).toEqual(strip(simulate(sc)));
    const other = simulate({ ...sc, seed: 4 });
    expect(strip(other)).not.toEqual(strip(simulate(sc)));
  });
  it("scores every policy; oracle ≥ random; nobody sits on a known-down server", () => {
    const out = simulate(sc);
    expect(out.scenario).toBe("small");
    expect(Object.keys(out.results)).toEqual(["routeboard", "random", "cyclic", "fewestUsers", "oracle"]);
    expect(out.results.oracle.jain).toBeGreaterThanOrEqual(out.results.random.jain);
    for (const r of Object.values(out.results)) {
      expect(r.jain).toBeGreaterThan(0);
      expect(r.jain).toBeLessThanOrEqual(1);
      expect(r.onDownUserSeconds).toBe(0);
      expect(r.decisionsPerSecond).toBeGreaterThan(0);
    }
    expect(out.results.routeboard.churn).toBeLessThan(out.results.random.churn);
  });
  /** 200 users arriving within one second onto links a and b (Mbit/s). */
  const burstOnto = (a: number, b: number) =>
    parseScenario({
      ...small(),
      durationS: 60,
      servers: [
        { id: "a", capacityMbps: a },
        { id: "b", capacityMbps: b },
      ],
      users: { ...(small().users as object), count: 200, arrival: { kind: "burst", overS: 1 } },
    });
  /** Where a policy played on the scenario put each user's first fetch, per server. */
  const firstPicks = (sc: Scenario, policy: Policy) => {
    const placed = [0, 0];
    const spy: Policy = {
      name: policy.name,
      assign(u, prev, t, view) {
        const s = policy.assign(u, prev, t, view);
        if (prev < 0) placed[s] = (placed[s] as number) + 1;
        return s;
      },
      onReport: (s, r) => policy.onReport?.(s, r),
    };
    runPolicy(sc, buildWorkload(sc), spy, () => 0);
    return placed;
  };
  it("the oracle sees users placed earlier in the same second (a burst is not herded onto one server)", () => {
    // 200 users arrive within one second onto two equal links: each fetch must see the ones
    // placed before it, so the oracle splits them evenly (a view refreshed once a second
    // sent them all to the first link and moved them back at their refreshes).
    const burst = burstOnto(100, 100);
    const placed = firstPicks(burst, oraclePolicy(burst));
    expect(placed[0]! + placed[1]!).toBe(200);
    expect(Math.abs(placed[0]! - placed[1]!)).toBeLessThanOrEqual(20);
  });
  it("the links-set reading gives routeboard every link's capacity, as an operator enters it", () => {
    // Links of 100 and 900 Mbit/s: learning knows neither and splits evenly (nothing reported
    // yet); given the links it splits by what each carries.
    const burst = burstOnto(100, 900);
    const learning = firstPicks(burst, routeboardPolicy(burst));
    expect(Math.abs(learning[0]! - learning[1]!)).toBeLessThanOrEqual(2);
    const given = firstPicks(burst, routeboardPolicy(burst, undefined, { linksSet: true }));
    expect(given[0]! + given[1]!).toBe(200);
    expect(given[1]!).toBeGreaterThanOrEqual(8 * given[0]!);
    expect(simulate(burst).linksSet).toBeUndefined();
    expect(simulate(burst, { linksSet: true }).linksSet?.jain).toBeGreaterThan(simulate(burst).results.routeboard.jain);
  });
  it("each ablation is routeboard played again with its rule off, on the same users", () => {
    // Each reading equals routeboard played with the ablation's options and scenario. On this
    // scenario (a 300 Mbit/s link down for 5 minutes, refreshes every 10) turning off the even
    // split, the margin, rule 1b or the dwell changes routeboard's figures, so a reading that
    // ignored its options would differ from the one it is compared with.
    const sc = parseScenario(small());
    const now = () => 0;
    expect(simulate(sc, { now }).ablations).toBeUndefined();
    const out = simulate(sc, { now, ablations: true });
    expect(Object.keys(out.ablations ?? {}).sort()).toEqual([...ABLATION_NAMES].sort());
    for (const name of ABLATION_NAMES) {
      const a: Ablation = ABLATIONS[name];
      const played = a.scenario ? a.scenario(sc) : sc;
      expect(out.ablations?.[name]).toEqual(runPolicy(played, buildWorkload(sc), routeboardPolicy(played, a.options), now));
    }
    for (const name of ["evenWhileBlind", "margin", "fairShareWhenFull", "failBackDwell"] as const) expect(out.ablations?.[name]).not.toEqual(out.results.routeboard);
    expect(out.ablations?.margin.churn).toBeGreaterThan(out.results.routeboard.churn);
    expect(ABLATIONS.margin.scenario(sc).route.hysteresis).toBe(0);
  });
  it("a load observation counts the users online at any moment since the last one, as an agent does", () => {
    // An agent's usersOnline is the users who moved traffic in the window (agent.ts), not
    // the users online at its end. Sessions of about 20 s on and off: nearly every user is
    // online at some moment of a 300 s window, about half of them at its end. Load every
    // 300 s (none in heartbeats), so the window is long enough to tell the two apart.
    const sc = parseScenario({
      ...small(),
      durationS: 1800,
      reportIntervalS: 300,
      loadIntervalS: 300,
      servers: [{ id: "a", capacityMbps: 10_000 }],
      users: { ...(small().users as object), count: 200, arrival: { kind: "burst", overS: 1 }, refreshS: 3600, sessions: { meanOnS: 20, meanOffS: 20 } },
    });
    const reported: number[] = [];
    const onlineAtReport: number[] = [];
    let view: Parameters<Policy["assign"]>[3] | undefined;
    const spy: Policy = {
      name: "spy",
      assign(_u, _prev, _t, v) {
        view = v;
        return 0;
      },
      onReport(_s, r) {
        if (r.atMs === 0 || !view) return; // the first report comes before anyone arrived
        reported.push(r.users);
        onlineAtReport.push(view.online.reduce((n, o) => n + o, 0));
      },
    };
    runPolicy(sc, buildWorkload(sc), spy, () => 0);
    expect(reported.length).toBeGreaterThanOrEqual(4);
    for (let i = 0; i < reported.length; i++) {
      expect(reported[i]).toBeGreaterThanOrEqual(190);
      expect(onlineAtReport[i]).toBeLessThan(150);
    }
  });
  it("the balancer sees each server's load every min(reportIntervalS, loadIntervalS) s, LOAD_INTERVAL_S when absent, phases staggered", () => {
    /** The seconds of each server's observations over the first 10 minutes. */
    const seconds = (over: Record<string, unknown>) => {
      const sc = parseScenario({ ...small(), durationS: 600, servers: [{ id: "a", capacityMbps: 100 }, { id: "b", capacityMbps: 300 }], ...over });
      const at: number[][] = [[], []];
      const spy: Policy = { name: "spy", assign: () => 0, onReport: (s, r) => at[s]!.push(r.atMs / 1000) };
      runPolicy(sc, buildWorkload(sc), spy, () => 0);
      return at;
    };
    const every = (step: number, from: number) => Array.from({ length: Math.ceil((600 - from) / step) }, (_, i) => from + i * step);
    // Load in heartbeats (the default): every LOAD_INTERVAL_S (10 s), the second server half
    // an interval after the first.
    expect(seconds({ reportIntervalS: 60 })).toEqual([every(LOAD_INTERVAL_S, 0), every(LOAD_INTERVAL_S, Math.floor(LOAD_INTERVAL_S / 2))]);
    expect(seconds({ reportIntervalS: 60, loadIntervalS: 30 })).toEqual([every(30, 0), every(30, 15)]);
    // No load in heartbeats: the reports' interval, as before; never slower than the reports.
    expect(seconds({ reportIntervalS: 60, loadIntervalS: 60 })).toEqual([every(60, 0), every(60, 30)]);
    expect(seconds({ reportIntervalS: 60, loadIntervalS: 120 })).toEqual([every(60, 0), every(60, 30)]);
    expect(seconds({ reportIntervalS: 4 })).toEqual([every(4, 0), every(4, 2)]);
  });
  it("max-min allocation for a newcomer", () => {
    const sorted = Float64Array.from([1, 2, 10]);
    expect(newcomerAllocation(sorted, 3, 100, false)).toBe(3);
    expect(newcomerAllocation(sorted, 10, 13, false)).toBe(5); // 1 + 2 + 5 + 5
    expect(newcomerAllocation(sorted, 10, 13, true)).toBeCloseTo(10); // already there: 1+2+10 = 13
  });
});

const run = (args: string[]) =>
  spawnSync(process.execPath, ["--import", "tsx", "scripts/simulate.ts", ...args], { encoding: "utf8", timeout: 60_000 });

describe("CLI", () => {
  it("exits 2 with the field path on stderr and nothing on stdout", () => {
    const dir = mkdtempSync(join(tmpdir(), "rb-sim-"));
    const s = small();
    ((s.users as Record<string, unknown>).arrival as Record<string, unknown>).kind = "x";
    writeFileSync(join(dir, "bad.json"), JSON.stringify(s));
    const r = run(["--scenario", join(dir, "bad.json")]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain('scenario error: users.arrival.kind: expected "poisson" | "burst"');
  });
  it("prints one JSON object for a valid scenario", () => {
    const dir = mkdtempSync(join(tmpdir(), "rb-sim-"));
    writeFileSync(join(dir, "ok.json"), JSON.stringify(small()));
    const r = run(["--scenario", join(dir, "ok.json")]);
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as { scenario: string; results: Record<string, unknown> };
    expect(out.scenario).toBe("small");
    expect(Object.keys(out.results)).toHaveLength(5);
  });
});

describe("CLI --seed", () => {
  it("plays the scenario with the given seed instead of its own", () => {
    const dir = mkdtempSync(join(tmpdir(), "rb-sim-"));
    writeFileSync(join(dir, "ok.json"), JSON.stringify(small()));
    const strip = (stdout: string) => {
      const o = JSON.parse(stdout) as { results: Record<string, { decisionsPerSecond?: number }> };
      for (const r of Object.values(o.results)) delete r.decisionsPerSecond;
      return o;
    };
    const own = run(["--scenario", join(dir, "ok.json")]);
    const seeded = run(["--scenario", join(dir, "ok.json"), "--seed", "4"]);
    expect(seeded.status).toBe(0);
    expect(strip(seeded.stdout)).toEqual(strip(JSON.stringify(simulate({ ...parseScenario(small()), seed: 4 }))));
    expect(strip(seeded.stdout)).not.toEqual(strip(own.stdout));
  });
  it("refuses a seed that is not an integer in range, naming --seed", () => {
    for (const bad of ["x", "-1", "1.5", "4294967296", ""]) {
      const r = run(["--all", "--seed", bad]);
      expect(r.status).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain("--seed: expected an integer from 0 to 4294967295");
    }
  });
});

describe("CLI --all", () => {
  it("refuses --all together with --scenario", () => {
    const r = run(["--all", "--scenario", "x.json"]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("usage: npm run simulate -- --scenario FILE | --all");
  });
});

describe("CLI families", () => {
  it("--family NAME --seed N --emit prints that draw's scenario", () => {
    const r = run(["--family", "flash-crowd", "--seed", "4", "--emit"]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(buildScenario("flash-crowd", 4));
  });
  it("--params plays given parameters: a fixture without name and seed is its family's draw", () => {
    const dir = mkdtempSync(join(tmpdir(), "rb-sim-"));
    const { name: _n, seed: _s, ...params } = small();
    writeFileSync(join(dir, "p.json"), JSON.stringify(params));
    const r = run(["--family", "steady-mixed", "--seed", "3", "--params", join(dir, "p.json"), "--emit"]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ ...parseScenario(small()), name: "steady-mixed" });
  });
  it("refuses bad parameters, an unknown family and bad --seeds, naming each", () => {
    const dir = mkdtempSync(join(tmpdir(), "rb-sim-"));
    const { name: _n, seed: _s, ...params } = small();
    (params.users as Record<string, unknown>).count = 0;
    writeFileSync(join(dir, "p.json"), JSON.stringify(params));
    const bad = run(["--family", "steady-mixed", "--params", join(dir, "p.json")]);
    expect(bad.status).toBe(2);
    expect(bad.stdout).toBe("");
    expect(bad.stderr).toContain("scenario error: params.users.count: must be ≥ 1");
    const unknown = run(["--family", "tidal-wave"]);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('family: unknown family "tidal-wave"');
    for (const v of ["0", "x", "1001"]) {
      const r = run(["--families", "--seeds", v]);
      expect(r.status).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain("--seeds: expected an integer from 1 to 1000");
    }
    expect(run(["--all", "--seeds", "3"]).stderr).toContain("--seeds goes with --families");
    expect(run(["--all", "--jobs", "2"]).stderr).toContain("--jobs goes with --families");
    expect(run(["--all", "--links-set"]).stderr).toContain("--links-set goes with --families");
    expect(run(["--family", "steady-mixed", "--ablations"]).stderr).toContain("--ablations goes with --families");
    expect(run(["--families", "--jobs", "0"]).stderr).toContain("--jobs: expected an integer from 1 to 64");
    expect(run(["--families", "--seed", "3"]).stderr).toContain("use --seeds N");
  });
});
