import { describe, expect, it } from "vitest";
import { findCoreBinaries } from "./core-binary";
import { coreArgs, describeTestFailure, planUserChanges } from "./core-manager";
import { renderXray } from "./render-xray";
import { agentConfig, IDS, inbound } from "./test-support";

describe("core commands", () => {
  it("tests and runs each core with its own flags", () => {
    expect(coreArgs("xray", "/s/c.json", true)).toEqual(["run", "-test", "-c", "/s/c.json"]);
    expect(coreArgs("xray", "/s/c.json", false)).toEqual(["run", "-c", "/s/c.json"]);
    expect(coreArgs("v2ray", "/s/c.json", true)).toEqual(["-test", "-config", "/s/c.json"]);
  });
  it("keeps only the lines that say why a config failed", () => {
    expect(describeTestFailure({ code: 23, stdout: "V2Ray 4.34.0 (user)\nA unified platform for anti-censorship.\n2026 [Info] Reading config\nmain: failed to read config > open x: no such file\n", stderr: "" })).toBe("main: failed to read config > open x: no such file");
  });
});

describe("findCoreBinaries", () => {
  const exists = (set: string[]) => (f: string) => set.includes(f);
  it("tries --core-bin only when given", () => {
    const r = findCoreBinaries("xray", "/opt/xray", "/usr/bin", exists([]));
    expect(r).toEqual({ ok: false, error: expect.stringMatching(/^--core-bin \/opt\/xray is not an executable file: install Xray-core/) });
  });
  it("lists the paths it tried and how to install", () => {
    const r = findCoreBinaries("v2ray", null, "/a:/b", exists([]));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toBe("no v2ray binary found (tried /a/v2ray, /b/v2ray, /usr/local/bin/v2ray, /usr/bin/v2ray): install v2ray 4.x with: apt-get install v2ray (Debian/Ubuntu), or pass --core-bin");
  });
  it("finds v2ctl next to v2ray, and xray's API in xray itself", () => {
    expect(findCoreBinaries("v2ray", null, "/a", exists(["/usr/bin/v2ray", "/usr/bin/v2ctl"]))).toEqual({ ok: true, bins: { kind: "v2ray", bin: "/usr/bin/v2ray", ctl: "/usr/bin/v2ctl" } });
    expect(findCoreBinaries("xray", null, "/a", exists(["/usr/local/bin/xray"]))).toEqual({ ok: true, bins: { kind: "xray", bin: "/usr/local/bin/xray", ctl: "/usr/local/bin/xray" } });
    expect(findCoreBinaries("v2ray", null, "", exists(["/usr/bin/v2ray"])).ok).toBe(false);
  });
});

describe("planUserChanges (Xray live user updates)", () => {
  const none = inbound({ id: IDS.inNone, port: 8080, security: "none", flow: "xtls-rprx-vision" });
  const render = (users: Array<{ id: string; email: string }>, port = 8080) => renderXray(agentConfig({ inbounds: [{ ...none, port, tag: "in-8080" }], users }), { apiPort: 10085 }).json;
  const alice = { id: IDS.alice, email: "sub-alice" };
  const bob = { id: IDS.bob, email: "sub-bob" };

  it("adds new users and removes gone ones per inbound", () => {
    const plan = planUserChanges(render([alice]), render([bob]))!;
    expect(plan).toHaveLength(1);
    expect(plan[0]!.tag).toBe("in-8080");
    expect(plan[0]!.remove).toEqual(["sub-alice"]);
    expect(plan[0]!.add!.settings.clients).toEqual([{ id: IDS.bob, email: "sub-bob", level: 0, flow: "xtls-rprx-vision" }]);
    expect(plan[0]!.add!.port).toBe(8080);
  });
  it("replaces a user whose id changed", () => {
    const plan = planUserChanges(render([alice]), render([{ ...alice, id: IDS.bob }]))!;
    expect(plan[0]!.remove).toEqual(["sub-alice"]);
    expect(plan[0]!.add!.settings.clients).toHaveLength(1);
  });
  it("is empty when nothing changed and null when an inbound changed", () => {
    expect(planUserChanges(render([alice]), render([alice]))).toEqual([]);
    expect(planUserChanges(render([alice]), render([alice], 9090))).toBeNull();
  });
});
