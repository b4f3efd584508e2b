import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { AgentUser } from "./agent-wire";
import { applyUserDelta, canonicalJson, usersHash, usersHashInSteps, versionOfConfig } from "./config-version";

const base = {
  version: "v",
  server: { id: "00000000-0000-4000-8000-000000000001", name: "s", address: "10.0.0.1", enabled: true },
  reportIntervalS: 60,
  inbounds: [],
  neighbours: [],
};
const u = (n: number, email = `e${n}`): AgentUser => ({ id: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`, email });

describe("config versions and deltas", () => {
  it("usersHash is sha256 of the canonical JSON, also for emails that need escaping and past one hashed piece", () => {
    const users = [...Array.from({ length: 2000 }, (_, k) => u(k, `user-${String(k).padStart(5, "0")}`)), u(1, 'quote"back\\slash'), u(2, "ünï")];
    expect(usersHash(users)).toBe(createHash("sha256").update(canonicalJson(users)).digest("base64url"));
  });

  it("in steps and with the panel's cache of users' JSON: the same hash, pausing after every `every` users", async () => {
    const users = Array.from({ length: 2500 }, (_, k) => u(k, `user-${k}`));
    const cache = new WeakMap<AgentUser, string>();
    let pauses = 0;
    const stepped = await usersHashInSteps(users, cache, async () => void pauses++, 1000);
    expect(stepped).toBe(usersHash(users));
    expect(pauses).toBe(2);
    expect(cache.get(users[7]!)).toBe(canonicalJson(users[7]));
    expect(usersHash(users, cache)).toBe(stepped);
  });

  it("applies a delta in email order and refuses what does not fit, naming it", () => {
    const config = { ...base, users: [u(1, "a"), u(3, "c")] };
    const start = { ...config, version: versionOfConfig(config) };
    const applied = applyUserDelta(start, { kind: "delta", from: start.version, version: "next", usersAdded: [u(2, "b"), u(4, "c")], usersRemoved: ["c"] });
    expect(applied).toEqual({ config: { ...start, version: "next", users: [u(1, "a"), u(2, "b"), u(4, "c")] } });
    const delta = (over: object) => ({ kind: "delta" as const, from: start.version, version: "next", usersAdded: [], usersRemoved: [], ...over });
    expect(applyUserDelta(start, delta({ from: "other" }))).toEqual({ error: expect.stringContaining("starts at version other") });
    expect(applyUserDelta(start, delta({ usersRemoved: ["zz"] }))).toEqual({ error: expect.stringContaining("does not have, e.g. zz") });
    expect(applyUserDelta(start, delta({ usersAdded: [u(9, "a")] }))).toEqual({ error: expect.stringContaining("already has") });
    expect(applyUserDelta(start, delta({ usersAdded: [u(8, "b"), u(9, "b")] }))).toEqual({ error: expect.stringContaining("twice") });
  });
});
