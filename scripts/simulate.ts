/**
 * npm run simulate -- --scenario FILE
 *   Plays the scenario through the real balancer core and every baseline; prints one JSON object.
 * npm run simulate -- --all
 *   Plays every scenario of ../shared/scenarios/ and scripts/simulator/scenarios/ and prints one
 *   Markdown table (every scenario, every policy) with the aims checked per scenario.
 * --seed N (with either): every scenario played with seed N instead of its own, to see how
 *   far its figures hold beyond one draw of the users' demand and timing.
 * Exit codes: 0 ok, 2 bad usage or invalid scenario (message on stderr, nothing on stdout).
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseScenarioText, ScenarioError, simulate, type Scenario } from "@/scripts/simulator/index";
import { aimsMet, renderTable } from "@/scripts/simulator/report";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SCENARIO_DIRS = [path.resolve(ROOT, "../shared/scenarios"), path.join(ROOT, "scripts/simulator/scenarios")];
const USAGE = "usage: npm run simulate -- --scenario FILE | --all [--seed N]";

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

function main(argv: string[]): void {
  let file: string | undefined;
  let all = false;
  let seedArg: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--scenario") file = argv[++i];
    else if (a.startsWith("--scenario=")) file = a.slice("--scenario=".length);
    else if (a === "--all") all = true;
    else if (a === "--seed") seedArg = argv[++i] ?? "";
    else if (a.startsWith("--seed=")) seedArg = a.slice("--seed=".length);
    else if (a === "--") continue;
    else {
      process.stderr.write(`${USAGE} (unknown argument ${JSON.stringify(a)})\n`);
      process.exit(2);
    }
  }
  if (all === (file !== undefined)) {
    process.stderr.write(`${USAGE}\n`);
    process.exit(2);
  }
  let seed: number | undefined;
  if (seedArg !== undefined) {
    seed = /^\d{1,10}$/.test(seedArg) ? Number(seedArg) : Number.NaN;
    if (!(seed <= 0xffffffff)) {
      process.stderr.write(`${USAGE}\n--seed: expected an integer from 0 to 4294967295, got ${JSON.stringify(seedArg)}\n`);
      process.exit(2);
    }
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

main(process.argv.slice(2));
