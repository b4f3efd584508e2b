/**
 * The Xray path of the core manager, with a stand-in xray binary (testdata/fake-xray.mjs; the
 * real Xray-core is not installed here): test mode before use, users added and removed live
 * through `xray api adu` / `rmu` without a restart, a restart when an inbound changes, and
 * counters read with `xray api statsquery -reset`. The version matrix is in
 * core-manager.xray-versions.test.ts, the stats at scale in core-manager.xray-stats.test.ts.
 */
import fs from "node:fs";
import { afterAll, expect, it } from "vitest";
import { CoreManager } from "./core-manager";
import { waitFor } from "./fake-panel";
import { memoryLog } from "./log";
import { addTraffic, agentConfig, FAKE_XRAY_BINS, fakeXrayDir, IDS, randomPort, realityInbound } from "./test-support";

const { dir, logFile, calls } = fakeXrayDir("rb-agent-xray-");
const log = memoryLog();
const core = new CoreManager({ bins: FAKE_XRAY_BINS, stateDir: dir, apiPort: randomPort(), log });
afterAll(async () => {
  await core.stop();
  delete process.env.FAKE_XRAY_LOG;
  fs.rmSync(dir, { recursive: true, force: true });
});

it("adds and removes users live, restarts on inbound changes, keeps the old config on a rejection", async () => {
  process.env.FAKE_XRAY_LOG = logFile;
  const reality = realityInbound(443);
  const v1 = agentConfig({ version: "x1", inbounds: [reality], users: [{ id: IDS.alice, email: "sub-alice" }] });
  expect(await core.apply(v1)).toBe(true);
  await waitFor("the core to run", () => calls().some((c) => c.startsWith("run ")));
  const pid = core.pid;

  expect(await core.apply({ ...v1, version: "x2", users: [{ id: IDS.bob, email: "sub-bob" }] })).toBe(true);
  expect(calls()).toContain("rmu -tag=in-443 sub-alice");
  expect(calls()).toContain("adu in-443 sub-bob:xtls-rprx-vision");
  expect(core.pid).toBe(pid);
  expect(core.runningVersion).toBe("x2");
  expect(log.lines).toContain("info: users updated live through Xray's API (config x2: 1 added, 1 removed)");

  const rejected = { ...v1, version: "x3", inbounds: [{ ...reality, reality: { ...reality.reality!, dest: "reject-me:443" } }] };
  expect(await core.apply(rejected)).toBe(false);
  expect(core.configError).toBe("the core rejected config x3: Failed to start: main: failed to load config files > reject-me is not a valid dest");
  expect(core.pid).toBe(pid);

  expect(await core.apply({ ...v1, version: "x4", inbounds: [{ ...reality, port: 8443, tag: "in-8443" }] })).toBe(true);
  expect(core.pid).not.toBe(pid);
  expect(core.configError).toBeNull();
  await waitFor("the core to run again", () => calls().filter((c) => c.startsWith("run ")).length === 2);

  // The restarted core has no counters yet; alice's traffic appears and is read (and reset) once.
  await addTraffic(core.apiPort!, [["sub-alice", 5, 7]]);
  expect(await core.readTraffic()).toEqual(new Map([["sub-alice", { up: 5, down: 7 }]]));
  expect(calls().some((c) => /^statsquery --server=127\.0\.0\.1:\d+ -pattern user>>> -reset$/.test(c))).toBe(true);
  expect(await core.readTraffic()).toEqual(new Map([["sub-alice", { up: 0, down: 0 }]]));
});

it("reads only the users asked for, one exact query each, leaving the others' counters for the next full reading (the limit check on a large server)", async () => {
  const reality = realityInbound(8443);
  const users = [
    { id: IDS.alice, email: "sub-alice" },
    { id: IDS.bob, email: "sub-bob" },
  ];
  expect(await core.apply(agentConfig({ version: "x5", inbounds: [{ ...reality, tag: "in-8443" }], users }))).toBe(true);
  expect(core.userCount).toBe(2);
  await core.readTraffic();
  await addTraffic(core.apiPort!, [
    ["sub-alice", 1, 2],
    ["sub-bob", 30, 40],
  ]);
  expect(await core.readTrafficOf(["sub-bob"])).toEqual(new Map([["sub-bob", { up: 30, down: 40 }]]));
  expect(calls().some((c) => /^statsquery --server=127\.0\.0\.1:\d+ -pattern user>>>sub-bob>>> -reset$/.test(c))).toBe(true);
  expect(await core.readTraffic()).toEqual(
    new Map([
      ["sub-alice", { up: 1, down: 2 }],
      ["sub-bob", { up: 0, down: 0 }],
    ]),
  );
});
