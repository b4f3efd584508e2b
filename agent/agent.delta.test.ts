/**
 * Config deltas on the agent (issue 23), with the Xray stand-in (testdata/fake-xray.mjs) and a
 * stand-in panel that answers ?delta=1 (brotli-compressed): a one-user delta is rebuilt into
 * the full config, checked against its version and applied live (adu, same core process);
 * a delta that does not hash to its version is logged and the full config fetched instead.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import type { AgentConfig } from "../core/agent-wire";
import { legacyVersionOfConfig, versionOfConfig } from "../core/config-version";
import { Agent } from "./agent";
import { CoreManager } from "./core-manager";
import { Delivery } from "./delivery";
import { FakePanel, waitFor } from "./fake-panel";
import { memoryLog } from "./log";
import { PanelClient } from "./panel";
import { readJson, STATE_FILES } from "./state";
import { agentConfig, FAKE_XRAY_BINS, fakeXrayDir, IDS, randomPort, realityInbound } from "./test-support";

const { dir, logFile, calls: called } = fakeXrayDir("rb-agent-delta-");
const carol = { id: "33333333-3333-4333-8333-333333333333", email: "sub-carol" };
const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const s of stops.reverse()) await s().catch(() => {});
  delete process.env.FAKE_XRAY_LOG;
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A config carrying the version the panel would give it (the agent checks deltas against it). */
function versioned(c: AgentConfig): AgentConfig {
  return { ...c, version: versionOfConfig(c) };
}

it("applies a one-user delta live without restarting Xray, and fetches the full config when a delta does not hash to its version", async () => {
  process.env.FAKE_XRAY_LOG = logFile;
  const reality = realityInbound(443);
  const v1 = versioned(agentConfig({ inbounds: [reality], users: [{ id: IDS.alice, email: "sub-alice" }] }));
  const panel = new FakePanel(v1);
  await panel.start();
  stops.push(() => panel.close());
  const log = memoryLog();
  const core = new CoreManager({ bins: FAKE_XRAY_BINS, stateDir: dir, apiPort: randomPort(), log });
  const agent = new Agent({
    panel: new PanelClient(panel.url, panel.token, "test"),
    core,
    delivery: new Delivery(null),
    log,
    stateDir: dir,
    coreVersion: "Xray 25.1.1",
    agentVersion: "test",
    reportIntervalOverrideS: 60,
    configWaitS: 5,
    minBackoffMs: 100,
    maxBackoffMs: 300,
    heartbeatIntervalS: 0,
  });
  agent.run().catch(() => {});
  stops.push(() => agent.stop());
  await waitFor("the core to run v1", () => core.runningVersion === v1.version && core.running);
  const pid = core.pid;

  const v2 = versioned({ ...v1, users: [...v1.users, { id: IDS.bob, email: "sub-bob" }] });
  panel.setConfig(v2);
  await waitFor("v2 to run", () => core.runningVersion === v2.version);
  expect(panel.deltaAnswers).toBe(1);
  expect(called()).toContain("adu in-443 sub-bob:xtls-rprx-vision");
  expect(core.pid).toBe(pid);
  expect(readJson(path.join(dir, STATE_FILES.lastConfig))).toEqual(v2);

  panel.corruptNextDelta = true;
  const asked = panel.configQueries.length;
  const v3 = versioned({ ...v2, users: [...v2.users, carol] });
  panel.setConfig(v3);
  await waitFor("v3 to run", () => core.runningVersion === v3.version);
  expect(log.lines.some((l) => l.startsWith("warn: the panel's config delta does not fit (the config rebuilt from the delta") && l.endsWith("fetching the full config"))).toBe(true);
  // The full config came from a request without delta=1; applied live all the same.
  expect(panel.configQueries.slice(asked)).toContain("?scheme=2");
  expect(panel.deltaAnswers).toBe(2);
  expect(called()).toContain("adu in-443 sub-carol:xtls-rprx-vision");
  expect(core.pid).toBe(pid);
  expect(readJson(path.join(dir, STATE_FILES.lastConfig))).toEqual(v3);
});

it("asks for version scheme 2, and takes a delta from a panel from before schemes (scheme-1 versions) all the same", async () => {
  const legacy = (c: AgentConfig): AgentConfig => ({ ...c, version: legacyVersionOfConfig(c) });
  const v1 = legacy(agentConfig({ inbounds: [realityInbound(443)], users: [{ id: IDS.alice, email: "sub-alice" }] }));
  const panel = new FakePanel(v1);
  await panel.start();
  stops.push(() => panel.close());
  const client = new PanelClient(panel.url, panel.token, "test");
  const first = await client.fetchConfig(null, 0);
  expect(first).toMatchObject({ kind: "config", version: v1.version });
  const v2 = legacy({ ...v1, users: [...v1.users, carol] });
  panel.setConfig(v2);
  const second = await client.fetchConfig(v1.version, 0, undefined, (first as { config: AgentConfig }).config);
  expect(second).toEqual({ kind: "config", config: v2, version: v2.version, delta: { added: 1, removed: 0 } });
  expect(panel.configQueries).toEqual(["?scheme=2", "?delta=1&scheme=2"]);
});
