/**
 * npm run simulate -- --scenario FILE
 * Plays the scenario through the real balancer core and every baseline; prints one JSON object.
 * Exit codes: 0 ok, 2 bad usage or invalid scenario (message on stderr, nothing on stdout).
 */
import { readFileSync } from "node:fs";
import { parseScenarioText, ScenarioError, simulate } from "@/server/simulator/index";

function fail(lines: string[]): never {
  for (const l of lines) process.stderr.write(`scenario error: ${l}\n`);
  process.exit(2);
}

function main(argv: string[]): void {
  let file: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--scenario") file = argv[++i];
    else if (a.startsWith("--scenario=")) file = a.slice("--scenario=".length);
    else if (a === "--") continue;
    else {
      process.stderr.write(`usage: npm run simulate -- --scenario FILE (unknown argument ${JSON.stringify(a)})\n`);
      process.exit(2);
    }
  }
  if (!file) {
    process.stderr.write("usage: npm run simulate -- --scenario FILE\n");
    process.exit(2);
  }
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    fail([`cannot read ${file}: ${(e as Error).message}`]);
  }
  let scenario;
  try {
    scenario = parseScenarioText(text);
  } catch (e) {
    if (e instanceof ScenarioError) fail(e.problems);
    throw e;
  }
  process.stdout.write(`${JSON.stringify(simulate(scenario))}\n`);
}

main(process.argv.slice(2));
