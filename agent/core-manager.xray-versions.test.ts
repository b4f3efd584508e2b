/**
 * The Xray version rules, over a matrix of stand-in versions (testdata/fake-xray.mjs prints
 * each as the real `xray version` does and, like the real CLI, has no `api adu`/`rmu` before
 * 25.7.26): the agent reads the version, and below 25.7.26 says so and restarts the core on a
 * user change instead of changing users live. On every version the REALITY inbound admits the
 * clients the subscription formats serve (minClientVer set explicitly, see render-xray.ts).
 */
import fs from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { coreVersion, liveUserChanges, parseCoreVersion } from "./core-binary";
import { CoreManager } from "./core-manager";
import { waitFor } from "./fake-panel";
import { memoryLog } from "./log";
import { REALITY_CLIENT_VERSIONS } from "./render-xray";
import { agentConfig, FAKE_XRAY, FAKE_XRAY_BINS, fakeXrayDir, IDS, randomPort, realityAdmits, realityInbound } from "./test-support";

const dirs: string[] = [];
afterAll(() => {
  delete process.env.FAKE_XRAY_VERSION;
  delete process.env.FAKE_XRAY_LOG;
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe("parseCoreVersion and liveUserChanges", () => {
  it("reads the version lines both cores print", () => {
    expect(parseCoreVersion("V2Ray 4.34.0 (user) 20230518-074445 (go1.19.8 linux/amd64)")).toEqual([4, 34, 0]);
    expect(parseCoreVersion("Xray 25.7.26 (Xray, Penetrates Everything.) Custom (go1.24.5 linux/amd64)")).toEqual([25, 7, 26]);
    expect(parseCoreVersion("Xray 1.8.24 (Xray, Penetrates Everything.) 5c8f8c9 (go1.23.1 linux/amd64)")).toEqual([1, 8, 24]);
    expect(parseCoreVersion("unknown (spawn xray ENOENT)")).toBeNull();
  });
  it("allows live user changes from Xray 25.7.26 on, never on v2ray", () => {
    const line = (v: string) => `Xray ${v} (Xray, Penetrates Everything.) Custom (go1.24.5 linux/amd64)`;
    expect(liveUserChanges("xray", line("25.7.26"))).toBeNull();
    expect(liveUserChanges("xray", line("25.8.3"))).toBeNull();
    expect(liveUserChanges("xray", line("26.1.13"))).toBeNull();
    expect(liveUserChanges("xray", line("25.7.25"))).toBe("Xray 25.7.25 cannot add or remove users live (xray api adu/rmu came in 25.7.26)");
    expect(liveUserChanges("xray", line("25.6.8"))).not.toBeNull();
    expect(liveUserChanges("xray", line("1.8.24"))).not.toBeNull();
    // Unreadable: tried live, and a failing adu falls back to a restart.
    expect(liveUserChanges("xray", "unknown (exit 1)")).toBeNull();
    expect(liveUserChanges("v2ray", "V2Ray 4.34.0 (user)")).toBe("v2ray 4 cannot add VLESS users live");
  });
});

const MATRIX: Array<{ version: string; live: boolean }> = [
  { version: "25.7.25", live: false },
  { version: "25.7.26", live: true },
  { version: "26.7.28", live: true },
];

describe.each(MATRIX)("Xray $version", ({ version, live }) => {
  it(live ? "changes users live" : "says so and restarts on a user change", async () => {
    const { dir, logFile, calls } = fakeXrayDir("rb-agent-xray-v-");
    dirs.push(dir);
    process.env.FAKE_XRAY_VERSION = version;
    process.env.FAKE_XRAY_LOG = logFile;

    const line = await coreVersion(FAKE_XRAY_BINS);
    expect(line).toBe(`Xray ${version} (Xray, Penetrates Everything.) Custom (go1.24.5 linux/amd64)`);
    const log = memoryLog();
    const core = new CoreManager({ bins: FAKE_XRAY_BINS, stateDir: dir, apiPort: randomPort(), log, coreVersion: line });
    try {
      const warning = `warn: Xray ${version} cannot add or remove users live (xray api adu/rmu came in 25.7.26): every user change restarts the core, dropping every connection; upgrade Xray to get live user changes`;
      expect(log.lines.includes(warning)).toBe(!live);

      const reality = realityInbound(randomPort());
      const v1 = agentConfig({ version: "v1", inbounds: [reality], users: [{ id: IDS.alice, email: "sub-alice" }] });
      expect(await core.apply(v1)).toBe(true);
      await waitFor("the core to run", () => calls().some((c) => c.startsWith("run ")));
      const pid = core.pid;

      // Every client the subscription formats serve gets in; one older than any REALITY client does not.
      for (const client of Object.values(REALITY_CLIENT_VERSIONS)) expect(await realityAdmits(core.apiPort!, reality.tag, client)).toBe(true);
      expect(await realityAdmits(core.apiPort!, reality.tag, "1.7.5")).toBe(false);

      expect(await core.apply({ ...v1, version: "v2", users: [{ id: IDS.bob, email: "sub-bob" }] })).toBe(true);
      expect(core.runningVersion).toBe("v2");
      if (live) {
        expect(core.pid).toBe(pid);
        expect(calls()).toContain(`rmu -tag=${reality.tag} sub-alice`);
        expect(log.lines).toContain("info: users updated live through Xray's API (config v2: 1 added, 1 removed)");
      } else {
        await waitFor("the core to run again", () => calls().filter((c) => c.startsWith("run ")).length === 2);
        expect(core.pid).not.toBe(pid);
        // Not even tried: the CLI would answer "unknown command".
        expect(calls().some((c) => /^(adu|rmu) /.test(c))).toBe(false);
        expect(log.lines).toContain(`info: users changed (config v2): restarting xray because Xray ${version} cannot add or remove users live (xray api adu/rmu came in 25.7.26)`);
      }
    } finally {
      await core.stop();
    }
  });
});

it("the stand-in lacks adu/rmu before 25.7.26, as the real CLI does", async () => {
  const { run } = await import("./core-manager");
  process.env.FAKE_XRAY_VERSION = "25.7.25";
  const r = await run(FAKE_XRAY, ["api", "adu", "--server=127.0.0.1:1", "x.json"], 10_000);
  expect(r.code).toBe(2);
  expect(r.stderr).toBe("xray api adu: unknown command\nRun 'xray help api' for usage.\n");
});
