/**
 * The simulator's side-by-side table (npm run simulate -- --all), the families' table
 * (npm run simulate -- --families --seeds N) and the balancer's aims (issue 24, per scenario:
 * churn ≤ max(0.05, the oracle's churn), fairness ≥ 0.95 × the oracle's and above every
 * baseline, no user-second on a server known to be down).
 */
import { ABLATION_NAMES, ABLATIONS, type AblationName } from "./ablations";
import type { PolicyResult, SimulationOutput } from "./index";
import { POLICY_NAMES, type PolicyName } from "./policies";

export const AIMS = { maxChurn: 0.05, minJainVsOracle: 0.95, /** share of held-out pairs for the first two */ minShare: 0.95 } as const;
const BASELINES = ["random", "cyclic", "fewestUsers"] as const;
/**
 * Not an aim: a reading printed beside "above every baseline", which stays strict. Jain is
 * printed to 4 places and the baselines' own spread on one pair is often a few 0.0001, so a
 * gap this small is counted apart to show how many misses are ties at the 3rd decimal.
 */
export const TIE_JAIN = 0.001;

/** The best baseline's jain on a pair. */
export const bestBaselineJain = (o: SimulationOutput): number => Math.max(...BASELINES.map((b) => o.results[b].jain));

/** Whether some baseline is both fairer than routeboard and churns less (it beats routeboard on both). */
export const baselineBeatsOnBoth = (o: SimulationOutput): boolean => {
  const rb = o.results.routeboard;
  return BASELINES.some((b) => o.results[b].jain > rb.jain && o.results[b].churn < rb.churn);
};

export interface AimCheck {
  fairness: boolean;
  churn: boolean;
  baselines: boolean;
  onDown: boolean;
  misses: string[];
}

/** The churn a scenario allows: 0.05, or the oracle's own churn when that is higher. */
export const allowedChurn = (o: SimulationOutput): number => Math.max(AIMS.maxChurn, o.results.oracle.churn);

export function aimsMet(o: SimulationOutput): AimCheck {
  const rb = o.results.routeboard;
  const oracle = o.results.oracle;
  const misses: string[] = [];
  const maxChurn = allowedChurn(o);
  const churn = rb.churn <= maxChurn;
  if (!churn) misses.push(`churn ${rb.churn} > ${maxChurn}`);
  const ratio = oracle.jain > 0 ? rb.jain / oracle.jain : 1;
  const fairness = ratio >= AIMS.minJainVsOracle;
  if (!fairness) misses.push(`jain ${ratio.toFixed(3)} × oracle < ${AIMS.minJainVsOracle}`);
  let baselines = true;
  for (const b of BASELINES) {
    if (o.results[b].jain > rb.jain) {
      baselines = false;
      misses.push(`jain below ${b} (${o.results[b].jain} > ${rb.jain})`);
    }
  }
  const onDown = rb.onDownUserSeconds === 0;
  if (!onDown) misses.push(`${rb.onDownUserSeconds} user-seconds on a known-down server`);
  return { fairness, churn, baselines, onDown, misses };
}

export function renderTable(outputs: readonly SimulationOutput[]): string {
  const lines = [
    "| scenario | policy | jain | × oracle | p5 satisfaction | overload share | churn | on-down user-seconds |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const o of outputs) {
    const oracleJain = o.results.oracle.jain;
    POLICY_NAMES.forEach((p, i) => {
      const r = o.results[p];
      const name = p === "routeboard" ? "**routeboard**" : p;
      const ratio = oracleJain > 0 ? (r.jain / oracleJain).toFixed(3) : "–";
      lines.push(`| ${i === 0 ? o.scenario : ""} | ${name} | ${r.jain} | ${ratio} | ${r.p5Satisfaction} | ${r.overloadShare} | ${r.churn} | ${r.onDownUserSeconds} |`);
    });
  }
  return lines.join("\n");
}

/** One (family, seed) pair played. */
export interface FamilyRun {
  family: string;
  seed: number;
  output: SimulationOutput;
}

/** The median (the mean of the two middle values for an even count). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/**
 * The pair with routeboard's figures replaced by a reading's (routeboard played again, with
 * the links set or a rule off), so the same aims are checked against the same baselines.
 */
function withReading(r: FamilyRun, played: PolicyResult): FamilyRun {
  return { ...r, output: { ...r.output, results: { ...r.output.results, routeboard: played } } };
}

/** The pair as played with every link's capacity set (SimulationOutput.linksSet). */
export const withLinksSet = (r: FamilyRun): FamilyRun => withReading(r, r.output.linksSet as PolicyResult);

/** The pair as played with one move rule off (SimulationOutput.ablations). */
export const withAblation = (r: FamilyRun, name: AblationName): FamilyRun => withReading(r, r.output.ablations?.[name] as PolicyResult);

/** Whether every run carries the ablations (`--ablations`). */
const hasAblations = (runs: readonly FamilyRun[]): boolean => runs.length > 0 && runs.every((r) => r.output.ablations !== undefined);

/**
 * The ablations' table (`--ablations`): per row, routeboard with one move rule off, the same
 * aims against the same baselines and oracle, and the change from all rules on. Readings, not
 * aims: what each rule gains on these pairs as the code stands.
 */
export function renderAblationTable(runs: readonly FamilyRun[]): string {
  const families = [...new Set(runs.map((r) => r.family))];
  const base = aimShares(runs);
  const perFamily = (rs: readonly FamilyRun[]) => families.map((f) => rs.filter((r) => r.family === f && aimsMet(r.output).misses.length === 0).length).join(", ");
  const cell = (k: number, of: number, was: number) => `${k}/${of}${k === was ? "" : ` (${k > was ? "+" : "−"}${Math.abs(k - was)})`}`;
  const lines = [
    `| routeboard | every aim | fairness and churn both | above every baseline | 0 user-seconds on a known-down server | every aim per family (${families.join(", ")}) |`,
    "|---|---|---|---|---|---|",
    `| all rules (the table above) | ${base.all}/${base.pairs} | ${base.firstTwo}/${base.pairs} | ${base.baselines}/${base.pairs} | ${base.onDown}/${base.pairs} | ${perFamily(runs)} |`,
  ];
  for (const name of ABLATION_NAMES) {
    const rs = runs.map((r) => withAblation(r, name));
    const s = aimShares(rs);
    lines.push(`| without ${ABLATIONS[name].label} | ${cell(s.all, s.pairs, base.all)} | ${cell(s.firstTwo, s.pairs, base.firstTwo)} | ${cell(s.baselines, s.pairs, base.baselines)} | ${cell(s.onDown, s.pairs, base.onDown)} | ${perFamily(rs)} |`);
  }
  return lines.join("\n");
}

/** Whether every run carries the links-set reading (`--links-set`). */
const hasLinksSet = (runs: readonly FamilyRun[]): boolean => runs.length > 0 && runs.every((r) => r.output.linksSet !== undefined);

const ratioOf = (o: SimulationOutput, p: PolicyName) => (o.results.oracle.jain > 0 ? o.results[p].jain / o.results.oracle.jain : 1);
const f3 = (x: number) => x.toFixed(3);
const f4 = (x: number) => x.toFixed(4);

/**
 * Per family, routeboard's and the oracle's rows: median and worst × oracle, median and worst
 * churn (with the worst churn allowed beside it), worst user-seconds on a known-down server,
 * and how many of the family's pairs meet every aim.
 */
export function renderFamilyTable(runs: readonly FamilyRun[]): string {
  const lines = [
    "| family | policy | × oracle median | × oracle worst | churn median | churn worst | on-down user-s worst | pairs meeting every aim |",
    "|---|---|---|---|---|---|---|---|",
  ];
  const families = [...new Set(runs.map((r) => r.family))];
  for (const f of families) {
    const rs = runs.filter((r) => r.family === f);
    const met = (xs: readonly FamilyRun[]) => `${xs.filter((r) => aimsMet(r.output).misses.length === 0).length}/${xs.length}`;
    const rows: Array<[name: string, xs: readonly FamilyRun[], p: PolicyName, met: string]> = [["**routeboard**", rs, "routeboard", met(rs)]];
    if (hasLinksSet(rs)) {
      const given = rs.map(withLinksSet);
      rows.push(["routeboard, links set (a reading)", given, "routeboard", met(given)]);
    }
    rows.push(["oracle", rs, "oracle", ""]);
    rows.forEach(([name, xs, p, metCell], i) => {
      const ratios = xs.map((r) => ratioOf(r.output, p));
      const churns = xs.map((r) => r.output.results[p].churn);
      const down = Math.max(...xs.map((r) => r.output.results[p].onDownUserSeconds));
      lines.push(`| ${i === 0 ? f : ""} | ${name} | ${f3(median(ratios))} | ${f3(Math.min(...ratios))} | ${f4(median(churns))} | ${f4(Math.max(...churns))} | ${down} | ${metCell} |`);
    });
  }
  return lines.join("\n");
}

export interface AimShares {
  pairs: number;
  all: number;
  fairness: number;
  churn: number;
  baselines: number;
  onDown: number;
  /** Pairs meeting both fairness and churn. */
  firstTwo: number;
  /** The issue's bar: fairness and churn (both) on ≥ 95 % of pairs, baselines and on-down on all. */
  pass: boolean;
  /** Readings, not aims: pairs where routeboard is within TIE_JAIN of the best baseline or above it. */
  baselinesWithinTie: number;
  /** Pairs where the oracle itself is below the best baseline (it is a greedy reference, not a bound). */
  oracleBelowBaseline: number;
  /** Readings, not aims: pairs where no baseline is both fairer and churns less than routeboard. */
  baselinesNotBetterOnBoth: number;
}

export function aimShares(runs: readonly FamilyRun[]): AimShares {
  const checks = runs.map((r) => aimsMet(r.output));
  const count = (f: (c: AimCheck) => boolean) => checks.filter(f).length;
  const s = {
    pairs: runs.length,
    all: count((c) => c.misses.length === 0),
    fairness: count((c) => c.fairness),
    churn: count((c) => c.churn),
    baselines: count((c) => c.baselines),
    onDown: count((c) => c.onDown),
    firstTwo: count((c) => c.fairness && c.churn),
  };
  const share = (k: number) => (s.pairs > 0 ? k / s.pairs : 1);
  // 1e-9: jain is rounded to 4 places, so a gap of exactly TIE_JAIN must not fall out by float error.
  const baselinesWithinTie = runs.filter((r) => bestBaselineJain(r.output) - r.output.results.routeboard.jain <= TIE_JAIN + 1e-9).length;
  const oracleBelowBaseline = runs.filter((r) => r.output.results.oracle.jain < bestBaselineJain(r.output)).length;
  const baselinesNotBetterOnBoth = runs.filter((r) => !baselineBeatsOnBoth(r.output)).length;
  return { ...s, pass: share(s.firstTwo) >= AIMS.minShare && s.baselines === s.pairs && s.onDown === s.pairs, baselinesWithinTie, oracleBelowBaseline, baselinesNotBetterOnBoth };
}

const pctOf = (k: number, n: number) => `${k}/${n} (${n > 0 ? ((100 * k) / n).toFixed(1) : "–"} %)`;

export function renderShares(s: AimShares): string {
  return [
    `Pairs meeting every aim: ${pctOf(s.all, s.pairs)}.`,
    `fairness ≥ ${AIMS.minJainVsOracle} × oracle: ${pctOf(s.fairness, s.pairs)}; churn ≤ max(${AIMS.maxChurn}, oracle's): ${pctOf(s.churn, s.pairs)}; above every baseline: ${pctOf(s.baselines, s.pairs)}; 0 user-seconds on a known-down server: ${pctOf(s.onDown, s.pairs)}.`,
    `The bar (fairness and churn both on ≥ ${AIMS.minShare * 100} % of pairs: ${pctOf(s.firstTwo, s.pairs)}; the last two on all): ${s.pass ? "met" : "NOT met"}.`,
    `Readings, not aims: above every baseline or within ${TIE_JAIN} of the best (a tie at the 3rd decimal): ${pctOf(s.baselinesWithinTie, s.pairs)}; no baseline both fairer and churning less: ${pctOf(s.baselinesNotBetterOnBoth, s.pairs)}; the oracle itself below the best baseline: ${pctOf(s.oracleBelowBaseline, s.pairs)}.`,
  ].join("\n");
}

/**
 * The links-set reading's shares (`--links-set`): the same aims, routeboard given every link's
 * capacity as an operator enters it. Not an aim: it tells how much of what routeboard misses is
 * learning the links rather than the rules that place and move users.
 */
export function renderLinksSetReading(rs: readonly FamilyRun[]): string {
  const s = aimShares(rs.map(withLinksSet));
  return `Reading, not an aim: routeboard with every server's link capacity set ("Link capacity", not learned): every aim ${pctOf(s.all, s.pairs)}; fairness and churn both ${pctOf(s.firstTwo, s.pairs)}; fairness ${pctOf(s.fairness, s.pairs)}; churn ${pctOf(s.churn, s.pairs)}; above every baseline ${pctOf(s.baselines, s.pairs)}; 0 user-seconds on a known-down server ${pctOf(s.onDown, s.pairs)}.`;
}

/**
 * The whole families report: seeds ≤ tunedSeeds are those the balancer was tuned on, the rest
 * are held out; each part gets its table, its aim shares and the pairs that miss.
 */
export function renderFamiliesReport(runs: readonly FamilyRun[], tunedSeeds: number): string {
  const parts: string[] = [];
  const groups: Array<[string, FamilyRun[]]> = [];
  const tuned = runs.filter((r) => r.seed <= tunedSeeds);
  const held = runs.filter((r) => r.seed > tunedSeeds);
  const span = (rs: FamilyRun[]) => `${Math.min(...rs.map((r) => r.seed))}–${Math.max(...rs.map((r) => r.seed))}`;
  if (tuned.length > 0) groups.push([`Seeds ${span(tuned)} (tuned on)`, tuned]);
  if (held.length > 0) groups.push([`Seeds ${span(held)} (held out)`, held]);
  for (const [title, rs] of groups) {
    const misses = rs.flatMap((r) => {
      const m = aimsMet(r.output).misses;
      return m.length > 0 ? [`- ${r.family} seed ${r.seed}: ${m.join("; ")}`] : [];
    });
    const reading =
      (hasLinksSet(rs) ? `\n\n${renderLinksSetReading(rs)}` : "") +
      (hasAblations(rs) ? `\n\nReadings, not aims: each move rule turned off in turn (scripts/simulator/ablations.ts), the same aims against the same baselines and oracle:\n\n${renderAblationTable(rs)}` : "");
    parts.push(`### ${title}\n\n${renderFamilyTable(rs)}\n\n${renderShares(aimShares(rs))}${reading}${misses.length > 0 ? `\n\nMissed:\n${misses.join("\n")}` : ""}`);
  }
  return parts.join("\n\n");
}
