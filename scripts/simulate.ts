/**
 * npm run simulate -- --scenario FILE
 *   Plays the scenario through the real balancer core and every baseline; prints one JSON object.
 * npm run simulate -- --all
 *   Plays every scenario of ../shared/scenarios/ and scripts/simulator/scenarios/ and prints one
 *   Markdown table (every scenario, every policy) with the aims checked per scenario.
 * --seed N (with either): every scenario played with seed N instead of its own, to see how
 *   far its figures hold beyond one draw of the users' demand and timing.
 * npm run simulate -- --families [--seeds N] [--jobs J] [--links-set] [--ablations]
 *   Plays every scenario family (scripts/simulator/families.ts) on seeds 1..N (default 30) and
 *   prints, per family, routeboard's and the oracle's median and worst figures, seeds 1–10
 *   (tuned on) apart from the rest (held out), and the share of (family, seed) pairs that meet
 *   every aim. The pairs are shared among J child processes (default: 2, or 1 on one core);
 *   each pair is played alone, so J changes the time taken, never the figures. --links-set adds
 *   a reading: routeboard again with every server's link capacity set, as an operator enters it.
 *   --ablations adds readings: routeboard again once per move rule, that rule turned off
 *   (scripts/simulator/ablations.ts), each with the aims it meets beside all rules on.
 * npm run simulate -- --family NAME [--seed N] [--params FILE] [--emit]
 *   One family's draw for seed N (default 1), or the given parameters (a scenario without
 *   name and seed: a fixture is one), played like --scenario; --emit prints the scenario instead.
 * Exit codes: 0 ok, 2 bad usage or invalid scenario (message on stderr, nothing on stdout).
 */
import { fork } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseScenarioText, ScenarioError, simulate, type Scenario } from "@/scripts/simulator/index";
import { buildScenario, FAMILY_NAMES, FamilyError } from "@/scripts/simulator/families";
import { aimsMet, renderFamiliesReport, renderTable, type FamilyRun } from "@/scripts/simulator/report";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SCENARIO_DIRS = [path.resolve(ROOT, "../shared/scenarios"), path.join(ROOT, "scripts/simulator/scenarios")];
const USAGE =
  "usage: npm run simulate -- --scenario FILE | --all [--seed N] | --families [--seeds N] [--jobs J] [--links-set] [--ablations] | --family NAME [--seed N] [--params FILE] [--emit]";
/** Seeds 1..TUNED_SEEDS are the ones the balancer was tuned on; the rest are held out. */
const TUNED_SEEDS = 10;

function fail(lines: string[]): never {
  for (const l of lines) process.stderr.write(`scenario error: ${l}\n`);
  process.exit(2);
}

/** `named`: prefix problems with the file name (several scenarios in one run). */
function load(file: string, named = false): Scenario {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    fail([`cannot read ${file}: ${(e as Error).message}`]);
  }
  try {
    return parseScenarioText(text);
  } catch (e) {
    if (e instanceof ScenarioError) fail(named ? e.problems.map((p) => `${path.basename(file)}: ${p}`) : e.problems);
    throw e;
  }
}

function allScenarioFiles(): string[] {
  const files: string[] = [];
  for (const dir of SCENARIO_DIRS) {
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      continue; // ../shared may be absent outside the workspace
    }
    for (const n of names.sort()) if (n.endsWith(".json")) files.push(path.join(dir, n));
  }
  return files;
}

function usage(extra?: string): never {
  process.stderr.write(`${USAGE}\n${extra ? `${extra}\n` : ""}`);
  process.exit(2);
}

function parseIntArg(name: string, v: string, min: number, max: number): number {
  const n = /^\d{1,10}$/.test(v) ? Number(v) : Number.NaN;
  if (!(n >= min && n <= max)) usage(`${name}: expected an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
  return n;
}

function loadParams(arg: string): unknown {
  let text: string;
  try {
    text = readFileSync(arg, "utf8");
  } catch (e) {
    fail([`--params: cannot read ${arg}: ${(e as Error).message}`]);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    fail([`--params: invalid JSON: ${(e as Error).message}`]);
  }
}

type Pair = [family: string, seed: number];
/** The readings played beside the families' policies (--links-set, --ablations). */
interface Readings {
  linksSet: boolean;
  ablations: boolean;
}
/** What a --jobs child is sent: its pairs, and the readings to add. */
interface Share {
  pairs: Pair[];
  readings: Readings;
}

const playPair = ([family, seed]: Pair, readings: Readings): FamilyRun => ({ family, seed, output: simulate(buildScenario(family, seed), readings) });

/** Plays the pairs in `jobs` child processes (round-robin shares), results in the pairs' order. */
async function playPairs(pairs: Pair[], jobs: number, readings: Readings): Promise<FamilyRun[]> {
  if (jobs <= 1) return pairs.map((p) => playPair(p, readings));
  const shares: Pair[][] = Array.from({ length: Math.min(jobs, pairs.length) }, () => []);
  pairs.forEach((p, i) => shares[i % shares.length]!.push(p));
  const outs = await Promise.all(
    shares.map(
      (share) =>
        new Promise<FamilyRun[]>((resolve, reject) => {
          const child = fork(fileURLToPath(import.meta.url), [WORKER_FLAG], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
          let got: FamilyRun[] | undefined;
          child.on("message", (m) => (got = m as FamilyRun[]));
          child.on("exit", (code) => (code === 0 && got ? resolve(got) : reject(new Error(`a --jobs child exited with code ${code}`))));
          child.send({ pairs: share, readings } satisfies Share);
        }),
    ),
  );
  const byKey = new Map(outs.flat().map((r) => [`${r.family}#${r.seed}`, r]));
  return pairs.map(([f, s]) => byKey.get(`${f}#${s}`) as FamilyRun);
}

const WORKER_FLAG = "--families-child";

/** A --jobs child: plays the pairs it is sent and sends the runs back. */
function child(): void {
  process.once("message", (share: Share) => {
    const runs = share.pairs.map((p) => playPair(p, share.readings));
    process.send?.(runs, () => process.exit(0));
  });
}

async function main(argv: string[]): Promise<void> {
  if (argv[0] === WORKER_FLAG) return child();
  let file: string | undefined;
  let all = false;
  let families = false;
  let family: string | undefined;
  let paramsArg: string | undefined;
  let emit = false;
  let seedArg: string | undefined;
  let seedsArg: string | undefined;
  let jobsArg: string | undefined;
  let linksSet = false;
  let ablations = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const eq = a.indexOf("=");
    const [key, inline] = a.startsWith("--") && eq > 0 ? [a.slice(0, eq), a.slice(eq + 1)] : [a, undefined];
    const value = () => inline ?? argv[++i] ?? "";
    if (key === "--scenario") file = value();
    else if (key === "--all" && inline === undefined) all = true;
    else if (key === "--families" && inline === undefined) families = true;
    else if (key === "--family") family = value();
    else if (key === "--params") paramsArg = value();
    else if (key === "--emit" && inline === undefined) emit = true;
    else if (key === "--seed") seedArg = value();
    else if (key === "--seeds") seedsArg = value();
    else if (key === "--jobs") jobsArg = value();
    else if (key === "--links-set" && inline === undefined) linksSet = true;
    else if (key === "--ablations" && inline === undefined) ablations = true;
    else if (a === "--") continue;
    else usage(`(unknown argument ${JSON.stringify(a)})`);
  }
  const modes = [file !== undefined, all, families, family !== undefined].filter(Boolean).length;
  if (modes !== 1) usage();
  if (seedsArg !== undefined && !families) usage("--seeds goes with --families");
  if (jobsArg !== undefined && !families) usage("--jobs goes with --families");
  if (linksSet && !families) usage("--links-set goes with --families");
  if (ablations && !families) usage("--ablations goes with --families");
  if (seedArg !== undefined && families) usage("--families plays seeds 1..N: use --seeds N");
  if ((paramsArg !== undefined || emit) && family === undefined) usage("--params and --emit go with --family");
  const seed = seedArg === undefined ? undefined : parseIntArg("--seed", seedArg, 0, 0xffffffff);

  if (families) {
    const n = seedsArg === undefined ? 30 : parseIntArg("--seeds", seedsArg, 1, 1000);
    const jobs = jobsArg === undefined ? Math.min(2, availableParallelism()) : parseIntArg("--jobs", jobsArg, 1, 64);
    const pairs = FAMILY_NAMES.flatMap((f) => Array.from({ length: n }, (_, i): Pair => [f, i + 1]));
    const runs = await playPairs(pairs, jobs, { linksSet, ablations });
    process.stdout.write(`${renderFamiliesReport(runs, TUNED_SEEDS)}\n`);
    return;
  }
  if (family !== undefined) {
    let sc: Scenario;
    try {
      sc = buildScenario(family, seed ?? 1, paramsArg === undefined ? undefined : loadParams(paramsArg));
    } catch (e) {
      if (e instanceof FamilyError) fail(e.problems);
      throw e;
    }
    process.stdout.write(`${JSON.stringify(emit ? sc : simulate(sc))}\n`);
    return;
  }
  const play = (sc: Scenario) => simulate(seed === undefined ? sc : { ...sc, seed });
  if (file !== undefined) {
    process.stdout.write(`${JSON.stringify(play(load(file)))}\n`);
    return;
  }
  const outputs = allScenarioFiles().map((f) => play(load(f, true)));
  process.stdout.write(`${renderTable(outputs)}\n`);
  const misses = outputs.flatMap((o) => aimsMet(o).misses.map((m) => `${o.scenario}: ${m}`));
  process.stdout.write(misses.length === 0 ? "\nEvery aim met on every scenario.\n" : `\nAims missed:\n${misses.map((m) => `- ${m}`).join("\n")}\n`);
}

await main(process.argv.slice(2));
