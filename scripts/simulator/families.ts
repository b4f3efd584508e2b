/**
 * Scenario families: generators with parameters, not files.
 *
 * A family draws a scenario's parameters from its seed: fleet size, the servers' capacities
 * (how far apart they are), the user mix (how many, their demand and sessions, how hard they
 * load the fleet), how they arrive (spread out, or in a burst), outages (how many, how long)
 * and, for cooling-peaks, a server that is away long enough for its learned peak to cool.
 * `drawParams(family, seed)` gives one draw; `buildScenario(family, seed, params)` turns
 * parameters into a scenario (the draw's, or any given ones: every fixture of the repo is
 * one, see FIXTURE_DRAWS). The scenario's own seed (users' demand and timing) is the same
 * seed, so (family, seed) names one scenario.
 *
 * The ranges are meant to be plausible for a VPN fleet, not what the balancer passes: links
 * from 50 Mbit/s to 10 Gbit/s, fleets of 2 to 10 servers, offered load from well under
 * capacity to about twice it, outages from 10 minutes to 40 hours.
 */
import { mulberry32, subSeed, type Rng } from "./prng";
import { parseScenario, ScenarioError, type Scenario } from "./scenario";

/** A scenario without its name and seed: what a family's draw decides. */
export type FamilyParams = Omit<Scenario, "name" | "seed">;

export const FAMILY_NAMES = ["steady-mixed", "cooling-peaks", "launch-burst", "flash-crowd", "rolling-outages", "capacity-skewed"] as const;
export type FamilyName = (typeof FAMILY_NAMES)[number];

/** Usual link sizes (Mbit/s); capacities are drawn log-uniformly and snapped to these. */
const LINKS = [50, 100, 200, 300, 500, 1000, 2000, 2500, 5000, 10000] as const;
const H = 3600;

// ---- draws ----
const uniform = (rng: Rng, lo: number, hi: number) => lo + (hi - lo) * rng();
const int = (rng: Rng, lo: number, hi: number) => lo + Math.floor((hi - lo + 1) * rng());
const logUniform = (rng: Rng, lo: number, hi: number) => Math.exp(uniform(rng, Math.log(lo), Math.log(hi)));
const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)] as T;
const round = (x: number, step: number) => Number((Math.round(x / step) * step).toFixed(6));
function link(rng: Rng, lo: number, hi: number): number {
  const x = logUniform(rng, lo, hi);
  let best: number = LINKS[0];
  for (const l of LINKS) if (Math.abs(Math.log(l / x)) < Math.abs(Math.log(best / x))) best = l;
  return best;
}

/** Capacities of `n` servers: the smallest from [minLo, minHi], spread up to `maxSpread`× above it. */
function fleet(rng: Rng, n: number, minLo: number, minHi: number, maxSpread: number): number[] {
  const lo = link(rng, minLo, minHi);
  const spread = logUniform(rng, 1, maxSpread);
  const caps = Array.from({ length: n }, () => link(rng, lo, lo * spread));
  return caps.sort((a, b) => a - b);
}

interface UserMix {
  /** Users: as many as the offered load asks for, within these bounds. */
  count: [number, number];
  /** Offered load: online users' mean demand ÷ the fleet's capacity. */
  load: [number, number];
  /** Median demand (Mbit/s) drawn first; moved only when the user count hits its bounds. */
  median: [number, number];
  onMin: [number, number];
  offMin: [number, number];
  refreshH: readonly number[];
  sigma: [number, number];
}

/**
 * The user mix: sessions and demand drawn, then as many users as make the online ones want
 * `load` × the fleet's capacity on average (online share meanOn / (meanOn + meanOff), log-normal
 * mean median·e^(σ²/2)). When that count falls outside the bounds the count is clamped and the
 * median demand moved instead (kept within 0.3–30 Mbit/s).
 */
function users(rng: Rng, caps: readonly number[], mix: UserMix, arrival: Scenario["users"]["arrival"]): Scenario["users"] {
  const meanOnS = round(uniform(rng, mix.onMin[0], mix.onMin[1]) * 60, 60);
  const meanOffS = round(uniform(rng, mix.offMin[0], mix.offMin[1]) * 60, 60);
  const sigma = round(uniform(rng, mix.sigma[0], mix.sigma[1]), 0.05);
  const load = uniform(rng, mix.load[0], mix.load[1]);
  let median = logUniform(rng, mix.median[0], mix.median[1]);
  const total = caps.reduce((a, b) => a + b, 0);
  const perUser = (meanOnS / (meanOnS + meanOffS)) * Math.exp((sigma * sigma) / 2);
  let count = round((load * total) / (perUser * median), 50);
  if (count < mix.count[0] || count > mix.count[1]) {
    count = Math.min(mix.count[1], Math.max(mix.count[0], count));
    median = Math.min(30, Math.max(0.3, (load * total) / (perUser * count)));
  }
  return {
    count,
    arrival,
    refreshS: pick(rng, mix.refreshH) * H,
    sessions: { meanOnS, meanOffS },
    demandMbps: { kind: "lognormal", median: round(median, 0.1), sigma },
  };
}

const timing = (rng: Rng) => ({ reportIntervalS: pick(rng, [60, 120, 300]), probeDetectS: pick(rng, [30, 60, 90, 120]) });
const route = { algorithm: "least-traffic" as const, hysteresis: 0.25 };
const ids = (caps: readonly number[]) => caps.map((c, i) => `s${i + 1}-${c >= 1000 ? `${c / 1000}g` : `${c}m`}`);

/** `k` outages of lenLo–lenHi seconds on random servers, starting in [fromLo, fromHi). */
function randomOutages(rng: Rng, n: number, k: number, fromLo: number, fromHi: number, lenLo: number, lenHi: number): Map<number, { fromS: number; toS: number }[]> {
  const out = new Map<number, { fromS: number; toS: number }[]>();
  for (let i = 0; i < k; i++) {
    const s = int(rng, 0, n - 1);
    const fromS = round(uniform(rng, fromLo, fromHi), 60);
    const toS = fromS + round(logUniform(rng, lenLo, lenHi), 60);
    const list = out.get(s) ?? [];
    // Outages of one server do not overlap: a later draw that would is dropped.
    if (list.every((o) => toS <= o.fromS || fromS >= o.toS)) list.push({ fromS, toS });
    out.set(s, list.sort((a, b) => a.fromS - b.fromS));
  }
  return out;
}

function servers(caps: readonly number[], outages: Map<number, { fromS: number; toS: number }[]>): Scenario["servers"] {
  const names = ids(caps);
  return caps.map((capacityMbps, i) => {
    const o = outages.get(i);
    return o && o.length > 0 ? { id: names[i] as string, capacityMbps, outages: o } : { id: names[i] as string, capacityMbps };
  });
}

type Draw = (rng: Rng) => FamilyParams;

/**
 * Each family's parameter ranges (read the code as the table: every number drawn is named
 * and bounded here). Durations are kept to what shows the family's effect (a day at most,
 * three for cooling) so that 30 seeds of every family play in minutes.
 */
const DRAWS: Record<FamilyName, Draw> = {
  /** A day of ordinary use: a mixed fleet, users spread over hours, a few short outages. */
  "steady-mixed": (rng) => {
    const durationS = int(rng, 12, 24) * H;
    const caps = fleet(rng, int(rng, 3, 8), 100, 1000, 40);
    const outages = randomOutages(rng, caps.length, int(rng, 0, 2), 0.1 * durationS, 0.8 * durationS, 600, 3 * H);
    const arrival = { kind: "poisson" as const, overS: round(uniform(rng, 0.3, 0.6) * durationS, 60) };
    return {
      durationS,
      ...timing(rng),
      route,
      servers: servers(caps, outages),
      users: users(rng, caps, { median: [1, 8], count: [1000, 4000], load: [0.3, 1.5], onMin: [20, 120], offMin: [30, 180], refreshH: [1, 2, 4, 6], sigma: [0.6, 1.2] }, arrival),
    };
  },
  /**
   * Peaks that cool: a large server carries traffic for a few hours, is away for 8–40 h (its
   * learned peak halves every 24 h meanwhile), then comes back to a fleet that filled without it.
   */
  "cooling-peaks": (rng) => {
    const caps = fleet(rng, int(rng, 3, 6), 200, 1000, 10);
    const warmS = round(uniform(rng, 3, 8) * H, 600);
    const awayS = round(uniform(rng, 8, 40) * H, 600);
    const afterS = round(uniform(rng, 6, 30) * H, 600);
    const durationS = warmS + awayS + afterS;
    // The largest server goes away; with probability ½ the second largest as well, later.
    const outages = new Map<number, { fromS: number; toS: number }[]>();
    const big = caps.length - 1;
    caps[big] = Math.max(caps[big] as number, link(rng, 2000, 10000));
    outages.set(big, [{ fromS: warmS, toS: warmS + awayS }]);
    if (rng() < 0.5) {
      const from = warmS + round(uniform(rng, 0, 0.5) * awayS, 600);
      outages.set(big - 1, [{ fromS: from, toS: from + round(uniform(rng, 0.3, 1) * awayS, 600) }]);
    }
    const arrival = { kind: "poisson" as const, overS: round(uniform(rng, 0.5, 1.5) * warmS + uniform(rng, 0, 0.5) * awayS, 60) };
    return {
      durationS,
      ...timing(rng),
      route,
      servers: servers(caps, outages),
      users: users(rng, caps, { median: [1, 8], count: [600, 2500], load: [0.4, 1.2], onMin: [30, 120], offMin: [30, 180], refreshH: [2, 4, 6], sigma: [0.6, 1.2] }, arrival),
    };
  },
  /** A product launch: a small, fairly even fleet; everyone arrives within minutes. */
  "launch-burst": (rng) => {
    const durationS = int(rng, 3, 6) * H;
    const caps = fleet(rng, int(rng, 2, 5), 500, 2000, 4);
    const arrival = { kind: "burst" as const, overS: round(logUniform(rng, 30, 900), 10) };
    return {
      durationS,
      ...timing(rng),
      route,
      servers: servers(caps, new Map()),
      users: users(rng, caps, { median: [1, 8], count: [1000, 4000], load: [0.5, 2], onMin: [30, 120], offMin: [10, 60], refreshH: [0.5, 1, 2], sigma: [0.5, 1.1] }, arrival),
    };
  },
  /** A flash crowd on a heterogeneous fleet: everyone within minutes, links 50 Mbit/s–10 Gbit/s. */
  "flash-crowd": (rng) => {
    const durationS = int(rng, 3, 6) * H;
    const caps = fleet(rng, int(rng, 4, 10), 50, 300, 100);
    const arrival = { kind: "burst" as const, overS: round(logUniform(rng, 30, 600), 10) };
    return {
      durationS,
      ...timing(rng),
      route,
      servers: servers(caps, new Map()),
      users: users(rng, caps, { median: [1, 8], count: [2000, 5000], load: [0.5, 2], onMin: [20, 90], offMin: [10, 60], refreshH: [0.5, 1, 2], sigma: [0.6, 1.2] }, arrival),
    };
  },
  /** Servers fail one after another (maintenance, a bad deploy): 2–6 outages of 20 min–4 h, staggered. */
  "rolling-outages": (rng) => {
    const durationS = int(rng, 12, 24) * H;
    const caps = fleet(rng, int(rng, 3, 8), 200, 1000, 10);
    const k = int(rng, 2, Math.min(6, caps.length));
    const order = caps.map((_, i) => i);
    for (let i = order.length - 1; i > 0; i--) {
      const j = int(rng, 0, i);
      [order[i], order[j]] = [order[j] as number, order[i] as number];
    }
    const outages = new Map<number, { fromS: number; toS: number }[]>();
    let t = round(uniform(rng, 0.1, 0.25) * durationS, 60);
    for (let i = 0; i < k && t < durationS; i++) {
      const len = round(logUniform(rng, 1200, 4 * H), 60);
      outages.set(order[i] as number, [{ fromS: t, toS: t + len }]);
      t += len + round(uniform(rng, -0.3, 2) * H, 60);
      t = Math.max(t, 60);
    }
    const arrival = { kind: "poisson" as const, overS: round(uniform(rng, 0.2, 0.5) * durationS, 60) };
    return {
      durationS,
      ...timing(rng),
      route,
      servers: servers(caps, outages),
      users: users(rng, caps, { median: [1, 8], count: [1000, 4000], load: [0.4, 1.2], onMin: [30, 120], offMin: [30, 180], refreshH: [1, 2, 4], sigma: [0.6, 1.1] }, arrival),
    };
  },
  /** Two tiers far apart: several small links (50–300 Mbit/s) beside a few big ones (1–10 Gbit/s). */
  "capacity-skewed": (rng) => {
    const durationS = int(rng, 6, 12) * H;
    const small = int(rng, 1, 4);
    const bigN = int(rng, 1, 4);
    const smallCap = link(rng, 50, 300);
    const caps = [
      ...Array.from({ length: small }, () => smallCap),
      ...Array.from({ length: bigN }, () => link(rng, 1000, 10000)),
    ].sort((a, b) => a - b);
    const arrival = { kind: "poisson" as const, overS: round(uniform(rng, 0.2, 0.6) * durationS, 60) };
    return {
      durationS,
      ...timing(rng),
      route,
      servers: servers(caps, new Map()),
      users: users(rng, caps, { median: [1, 8], count: [1000, 4000], load: [0.5, 1.5], onMin: [30, 120], offMin: [30, 120], refreshH: [1, 2, 4], sigma: [0.6, 1.2] }, arrival),
    };
  },
};

export class FamilyError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join("\n"));
    this.name = "FamilyError";
  }
}

function familyOf(name: string): FamilyName {
  if (!(FAMILY_NAMES as readonly string[]).includes(name)) {
    throw new FamilyError([`family: unknown family ${JSON.stringify(name)} (expected ${FAMILY_NAMES.join(" | ")})`]);
  }
  return name as FamilyName;
}

function checkSeed(seed: number): void {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new FamilyError([`seed: expected an integer from 0 to 4294967295, got ${String(seed)}`]);
}

/** The family's parameters drawn from `seed` (its own stream, apart from the users' draws). */
export function drawParams(family: string, seed: number): FamilyParams {
  const f = familyOf(family);
  checkSeed(seed);
  const stream = FAMILY_NAMES.indexOf(f) + 100;
  return DRAWS[f](mulberry32(subSeed(seed, stream)));
}

/**
 * The scenario of parameters `params` (default: the draw of `seed`), played with `seed`.
 * Named `family` when params are given, else `family#seed`. Bad parameters: FamilyError naming
 * each field under "params.".
 */
export function buildScenario(family: string, seed: number, params?: unknown): Scenario {
  const f = familyOf(family);
  checkSeed(seed);
  const p = params === undefined ? drawParams(f, seed) : params;
  if (typeof p !== "object" || p === null || Array.isArray(p)) throw new FamilyError(["params: expected an object"]);
  const problems: string[] = [];
  for (const k of ["name", "seed"]) if (k in p) problems.push(`params.${k}: unknown field (the name and seed come from the family and --seed)`);
  if (problems.length > 0) throw new FamilyError(problems);
  try {
    const sc = parseScenario({ name: params === undefined ? `${f}#${seed}` : f, seed, ...p });
    const outageProblems: string[] = [];
    sc.servers.forEach((s, i) =>
      (s.outages ?? []).forEach((o, j) => {
        if (o.fromS >= sc.durationS) outageProblems.push(`params.servers[${i}].outages[${j}].fromS: must be < durationS (${sc.durationS})`);
      }),
    );
    if (outageProblems.length > 0) throw new FamilyError(outageProblems);
    return sc;
  } catch (e) {
    if (e instanceof ScenarioError) throw new FamilyError(e.problems.map((m) => `params.${m}`));
    throw e;
  }
}

/**
 * Each fixture of the repo as one draw of its family: buildScenario(family, seed, params)
 * equals the fixture file (families.test.ts checks it), and
 * `npm run simulate -- --family F --seed S --params FILE` plays it (FILE: the fixture without
 * name and seed). Their parameters lie inside the family's ranges, except where noted.
 */
export const FIXTURE_DRAWS = {
  "steady-mixed": { family: "steady-mixed", seed: 7 },
  "launch-burst": { family: "launch-burst", seed: 11 },
  "flash-crowd": { family: "flash-crowd", seed: 23 },
  "rolling-outages": { family: "rolling-outages", seed: 31 },
  "cooling-peaks": { family: "cooling-peaks", seed: 47 },
  "capacity-skewed": { family: "capacity-skewed", seed: 59 },
} as const satisfies Record<string, { family: FamilyName; seed: number }>;

/** A fixture file's parameters (the file without its name and seed). */
export function fixtureParams(sc: Scenario): FamilyParams {
  const { name: _name, seed: _seed, ...rest } = sc;
  return rest;
}
