#!/usr/bin/env node
/**
 * routeboard-agent: runs next to the VPN core on every server (DESIGN §6). Usage: --help.
 * Exit codes: 0 stopped by a signal, 1 cannot run (no core, state dir), 2 bad flags,
 * 3 the panel refused the token (a restart would not help: the unit file does not retry it).
 */
import path from "node:path";
import { Agent, FatalError } from "./agent";
import { parseArgs, USAGE } from "./cli";
import { coreVersion, findCoreBinaries } from "./core-binary";
import { CoreManager } from "./core-manager";
import { Delivery } from "./delivery";
import { stderrLog } from "./log";
import { PanelClient } from "./panel";
import { boundHeapGrowth } from "./heap";
import { ensureDir, STATE_FILES } from "./state";
import { AGENT_VERSION } from "./version";

function die(message: string, code: number): never {
  process.stderr.write(`routeboard-agent: ${message}\n`);
  process.exit(code);
}

async function main() {
  const parsed = parseArgs(process.argv.slice(2), process.env);
  if (parsed.kind === "help") {
    process.stdout.write(USAGE);
    return;
  }
  if (parsed.kind === "error") die(parsed.message, 2);
  const options = parsed.options;
  const log = stderrLog();
  boundHeapGrowth();

  try {
    ensureDir(options.stateDir);
  } catch (err) {
    die(`cannot use the state dir ${options.stateDir} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): run as root, or pass --state-dir`, 1);
  }
  const found = findCoreBinaries(options.core, options.coreBin, process.env.PATH);
  if (!found.ok) die(found.error, 1);
  const bins = found.bins;
  const version = await coreVersion(bins);

  let delivery: Delivery;
  try {
    delivery = new Delivery(path.join(options.stateDir, STATE_FILES.delivery));
  } catch (err) {
    die((err as Error).message, 1);
  }

  // The agent and the core refer to each other (exit → report; restart → read counters first).
  let agent: Agent | null = null;
  const core = new CoreManager({
    bins,
    stateDir: options.stateDir,
    apiPort: options.apiPort,
    log,
    coreVersion: version,
    onCoreExit: () => agent?.coreExited(),
    beforeRestart: async () => agent?.drainCounters(),
  });
  const panel = new PanelClient(options.panel, options.token, `routeboard-agent/${AGENT_VERSION}`);
  agent = new Agent({ panel, core, delivery, log, stateDir: options.stateDir, coreVersion: version, agentVersion: AGENT_VERSION, reportIntervalOverrideS: options.reportIntervalS });
  log.info(`routeboard-agent ${AGENT_VERSION}: ${version} at ${bins.bin}, panel ${options.panel}, state in ${options.stateDir}`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: stopping the core`);
    await agent?.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));

  try {
    await agent.run();
  } catch (err) {
    if (err instanceof FatalError) {
      stopping = true;
      await agent.stop().catch(() => {});
      die(err.message, err.exitCode);
    }
    throw err;
  }
}

main().catch((err: unknown) => die(`unexpected error: ${(err as Error).stack ?? String(err)}`, 1));
