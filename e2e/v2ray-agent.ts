/**
 * A real agent, in the test's process, serving a server's inbounds with Debian's v2ray: it
 * polls the panel at `panelUrl` with the server's token and reports every second.
 */
import fs from "node:fs";
import path from "node:path";
import { Agent } from "../agent/agent";
import { CoreManager } from "../agent/core-manager";
import { Delivery } from "../agent/delivery";
import { memoryLog, type Log } from "../agent/log";
import { PanelClient } from "../agent/panel";
import { STATE_FILES } from "../agent/state";
import { freePort } from "./vless-client";

export async function startV2rayAgent(panelUrl: string, agentToken: string, stateDir: string): Promise<{ agent: Agent; core: CoreManager; log: Log & { lines: string[] }; stop(): Promise<void> }> {
  fs.mkdirSync(stateDir, { recursive: true });
  const log = memoryLog();
  let agent: Agent | null = null;
  const core = new CoreManager({ bins: { kind: "v2ray", bin: "/usr/bin/v2ray", ctl: "/usr/bin/v2ctl" }, stateDir, apiPort: await freePort(), log, onCoreExit: () => agent?.coreExited(), beforeRestart: async () => agent?.drainCounters() });
  agent = new Agent({ panel: new PanelClient(panelUrl, agentToken, "e2e"), core, delivery: new Delivery(path.join(stateDir, STATE_FILES.delivery)), log, stateDir, coreVersion: "V2Ray 4.34.0", agentVersion: "e2e", reportIntervalOverrideS: 1, configWaitS: 5, minBackoffMs: 100, maxBackoffMs: 300 });
  agent.run().catch(() => {});
  const running = agent;
  return { agent: running, core, log, stop: () => running.stop() };
}
