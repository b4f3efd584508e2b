import { describe, expect, it } from "vitest";
import { findCoreBinaries } from "./core-binary";
import { coreArgs, coreConfigParts, describeTestFailure, diffUsers, planUserChanges, shapeOf } from "./core-manager";
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

describe("live user changes (Xray)", () => {
  const none = inbound({ id: IDS.inNone, port: 8080, security: "none", flow: "xtls-rprx-vision" });
  const render = (users: Array<{ id: string; email: string }>, port = 8080) => renderXray(agentConfig({ inbounds: [{ ...none, port, tag: "in-8080" }], users }), { apiPort: 10085 }).json;
  const alice = { id: IDS.alice, email: "sub-alice" };
  const bob = { id: IDS.bob, email: "sub-bob" };

  it("adds new users and removes gone ones per inbound", () => {
    const diff = diffUsers([alice], [bob]);
    expect(diff).toEqual({ remove: ["sub-alice"], add: [bob], removedUsers: [alice] });
    const plan = planUserChanges(render([bob]), diff);
    expect(plan).toHaveLength(1);
    expect(plan[0]!.tag).toBe("in-8080");
    expect(plan[0]!.remove).toEqual(["sub-alice"]);
    expect(plan[0]!.add!.settings.clients.toJSON()).toEqual([{ id: IDS.bob, email: "sub-bob", level: 0, flow: "xtls-rprx-vision" }]);
    expect(plan[0]!.add!.port).toBe(8080);
  });
  it("replaces a user whose id changed", () => {
    const diff = diffUsers([alice, bob], [{ ...alice, id: IDS.bob }, bob]);
    expect(diff).toEqual({ remove: ["sub-alice"], add: [{ ...alice, id: IDS.bob }], removedUsers: [alice] });
    expect(planUserChanges(render([{ ...alice, id: IDS.bob }, bob]), diff)[0]!.add!.settings.clients).toHaveLength(1);
  });
  it("diffs sorted lists (the panel's order) and unsorted ones alike", () => {
    const u = (k: number, id: string = IDS.alice) => ({ id, email: `e${String(k).padStart(3, "0")}` });
    const before = [u(1), u(2), u(3), u(5)];
    const after = [u(0), u(2), u(3, IDS.bob), u(4), u(6)];
    const want = { remove: ["e001", "e003", "e005"], add: [u(0), u(3, IDS.bob), u(4), u(6)] };
    const sorted = diffUsers(before, after);
    expect({ remove: [...sorted.remove].sort(), add: sorted.add }).toEqual(want);
    const unsorted = diffUsers([...before].reverse(), [...after].reverse());
    expect({ remove: [...unsorted.remove].sort(), add: [...unsorted.add].sort((a, b) => a.email.localeCompare(b.email)) }).toEqual(want);
  });
  it("is empty when nothing changed; the shape tells a users-only change from an inbound change", () => {
    expect(diffUsers([alice, bob], [bob, alice])).toEqual({ remove: [], add: [], removedUsers: [] });
    expect(planUserChanges(render([alice]), { remove: [], add: [], removedUsers: [] })).toEqual([]);
    expect(shapeOf(render([alice]))).toBe(shapeOf(render([bob])));
    expect(shapeOf(render([alice]))).not.toBe(shapeOf(render([alice], 9090)));
  });
  it("moves a user whose plan changed between the inbounds of the two plans only (issue 27 point 2)", () => {
    const a = { ...none, id: IDS.inNone, port: 8080, tag: "in-8080", plans: ["plan-a"] };
    const b = { ...none, id: IDS.inTls, port: 8081, tag: "in-8081", plans: ["plan-b"] };
    const both = (users: Array<{ id: string; email: string; plan?: string }>) => renderXray(agentConfig({ inbounds: [a, b], users }), { apiPort: 10085 }).json;
    const onA = { ...alice, plan: "plan-a" };
    const onB = { ...alice, plan: "plan-b" };
    // The rendered config: alice only on plan A's inbound, bob (no plan: every route) on both.
    const clients = (json: Record<string, unknown>) =>
      (json.inbounds as Array<{ tag: string; settings?: { clients?: { toJSON(): Array<{ email: string }> } } }>)
        .filter((i) => i.settings?.clients)
        .map((i) => [i.tag, i.settings!.clients!.toJSON().map((c) => c.email)]);
    expect(clients(both([onA, bob]))).toEqual([
      ["in-8080", ["sub-alice", "sub-bob"]],
      ["in-8081", ["sub-bob"]],
    ]);
    const diff = diffUsers([onA, bob], [onB, bob]);
    expect(diff).toEqual({ remove: ["sub-alice"], add: [onB], removedUsers: [onA] });
    const plan = planUserChanges(both([onB, bob]), diff, [a, b]);
    expect(plan.map((c) => [c.tag, c.remove, c.add?.settings.clients.toJSON().map((x) => x.email) ?? null])).toEqual([
      ["in-8080", ["sub-alice"], null],
      ["in-8081", [], ["sub-alice"]],
    ]);
  });
  it("writes the core config in parts that make the same JSON", () => {
    const users = Array.from({ length: 20_001 }, (_, k) => ({ id: IDS.alice, email: `u${k}` }));
    const json = render(users);
    const text = [...coreConfigParts(json)].join("");
    expect(text).toBe(`${JSON.stringify(json)}\n`);
  });
});
