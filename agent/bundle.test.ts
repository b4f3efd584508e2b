/**
 * The one-file bundle the panel serves: built with the exact `build:agent` script (into a temp
 * dir) and run with plain node, outside the repository, so it needs nothing but node.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { FakePanel } from "./fake-panel";
import { UNAUTHORIZED_MESSAGE } from "./panel";
import { agentConfig, requireV2ray, tempDir } from "./test-support";

const root = path.resolve(import.meta.dirname, "..");
const dir = tempDir("rb-bundle-");
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

it("bundles into one file that runs with node alone", async () => {
  const script = (JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts["build:agent"]!;
  const args = script.split(" ").slice(1).map((a) => (a.startsWith("--outfile=") ? `--outfile=${path.join(dir, "routeboard-agent.mjs")}` : a));
  execFileSync(path.join(root, "node_modules/.bin/esbuild"), args, { cwd: root, stdio: "pipe" });
  const bundle = path.join(dir, "routeboard-agent.mjs");
  expect(fs.readFileSync(bundle, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
  const help = spawnSync(process.execPath, [bundle, "--help"], { cwd: dir, encoding: "utf8" });
  expect(help.status).toBe(0);
  expect(help.stdout).toContain("--panel <url>");
  const bad = spawnSync(process.execPath, [bundle, "--core", "v2ray"], { cwd: dir, encoding: "utf8", env: { ...process.env, ROUTEBOARD_URL: "", ROUTEBOARD_AGENT_TOKEN: "" } });
  expect(bad.status).toBe(2);
  expect(bad.stderr).toBe("routeboard-agent: --panel: missing (or set ROUTEBOARD_URL): the panel's URL, e.g. https://panel.example.com\n");

  // It talks to a panel: a refused token ends it with one line and exit 3.
  requireV2ray();
  const panel = new FakePanel(agentConfig());
  await panel.start();
  try {
    const child = spawn(process.execPath, [bundle, "--panel", panel.url, "--token", "wrong", "--core", "v2ray", "--state-dir", path.join(dir, "state")], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    expect(await new Promise((r) => child.once("close", r))).toBe(3);
    expect(stderr.trim().split("\n").filter((l) => !l.includes(" info: "))).toEqual([`routeboard-agent: ${UNAUTHORIZED_MESSAGE}`]);
  } finally {
    await panel.close();
  }
}, 30_000);
