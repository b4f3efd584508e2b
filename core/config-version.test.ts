import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { AgentConfig, AgentUser } from "./agent-wire";
import {
  applyUserDelta,
  bucketOf,
  byEmail,
  canonicalJson,
  legacyUsersHash,
  legacyUsersHashInSteps,
  legacyVersionOfConfig,
  USER_BUCKETS,
  UsersDigest,
    versionOfConfig,
} from "./config-version";

const base = {
  version: "v",
  server: { id: "00000000-0000-4000-8000-000000000001", name: "s", address: "10.0.0.1", enabled: true },
  reportIntervalS: 60,
  inbounds: [],
  neighbours: [],
};
const u = (n: number, email = `e${n}`): AgentUser => ({ id: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`, email });
/** Users sorted by email, as configs carry them. */
const usersOf = (n: number, from = 0) => Array.from({ length: n }, (_, k) => u(from + k, `user-${String(from + k).padStart(5, "0")}`)).sort(byEmail);

/** The scheme-2 users hash written from its definition (UsersDigest's comment), for comparison. */
function definedHash(users: readonly AgentUser[]): string {
  const buckets: AgentUser[][] = Array.from({ length: USER_BUCKETS }, () => []);
  for (const x of users) buckets[bucketOf(x.email)]!.push(x);
  const outer = createHash("sha256");
  for (const b of buckets) outer.update(createHash("sha256").update(canonicalJson([...b].sort(byEmail))).digest());
  return outer.digest("base64url");
}

describe("config versions, scheme 2 (users hashed per bucket)", () => {
  it("is sha256 over the buckets' sha256 of canonical JSON, also for emails that need escaping and buckets past one hashed piece", () => {
    const users = [...usersOf(1500), u(1, 'quote"back\\slash'), u(2, "ünï")].sort(byEmail);
    expect(UsersDigest.of(users).hash).toBe(definedHash(users));
    // One crowded bucket: its JSON is hashed in several pieces.
    const crowded = Array.from({ length: 40_000 }, (_, k) => u(k, `c${k}`)).filter((x) => bucketOf(x.email) === 7);
    expect(crowded.length).toBeGreaterThan(5);
    expect(UsersDigest.of(crowded).hash).toBe(definedHash(crowded));
  });

  it("depends on the set of users, not their order", () => {
    const users = usersOf(500);
    const shuffled = [...users].reverse();
    shuffled.push(shuffled.shift()!);
    expect(UsersDigest.of(shuffled).hash).toBe(UsersDigest.of(users).hash);
    const config = { ...base, users };
    expect(versionOfConfig({ ...config, users: shuffled })).toBe(versionOfConfig(config));
  });

  it("a patch equals a fresh digest after adding, removing or changing one user, and each changes the hash", () => {
    const users = usersOf(2000);
    const before = UsersDigest.of(users);
    const added = u(9999, "user-new");
    const withAdded = [...users, added].sort(byEmail);
    const changed = users.map((x) => (x.email === users[10]!.email ? { ...x, id: "99999999-0000-4000-8000-000000000000" } : x));
    const cases: Array<[string, UsersDigest, AgentUser[]]> = [
      ["added", before.patched([], [added]), withAdded],
      ["removed", before.patched([users[5]!.email], []), users.filter((_, k) => k !== 5)],
      ["id changed (joining replaces)", before.patched([], [changed[10]!]), changed],
      ["id changed (leaving, then joining)", before.patched([users[10]!.email], [changed[10]!]), changed],
    ];
    const hashes = new Set([before.hash]);
    for (const [what, patched, expected] of cases) {
      expect(patched.hash, what).toBe(UsersDigest.of(expected).hash);
      hashes.add(patched.hash);
    }
    expect(hashes.size).toBe(4); // before, added, removed, changed
    // A patch leaves the digest it came from as it was.
    expect(before.hash).toBe(UsersDigest.of(users).hash);
    expect(before.patched([], [])).toBe(before);
  });

  it("a chain of patches (many users, emails that leave and come back) equals a fresh digest", () => {
    let users = usersOf(1500);
    let digest = UsersDigest.of(users);
    for (let step = 0; step < 10; step++) {
      const leaving = users.filter((_, k) => (k * 7 + step) % 97 === 0).map((x) => x.email);
      const joining = [...usersOf(30, 10_000 + step * 20), u(step, leaving[0]!)];
      const gone = new Set([...leaving, ...joining.map((x) => x.email)]);
      users = [...users.filter((x) => !gone.has(x.email)), ...joining].sort(byEmail);
      digest = digest.patched(leaving, joining);
    }
    expect(digest.hash).toBe(UsersDigest.of(users).hash);
  });

  it("packed (buckets kept as their JSON text) gives the same hashes as objects, through a chain of patches that adds, removes, changes and empties buckets", () => {
    let users = [...usersOf(1200), { ...u(5000), password: "p\"w", plan: "plan-1" }].sort(byEmail);
    let objects = UsersDigest.of(users);
    let packed = UsersDigest.of(users, { packed: true });
    expect(packed.hash).toBe(objects.hash);
    for (let step = 0; step < 8; step++) {
      const leaving = step === 7 ? users.map((x) => x.email) : users.filter((_, k) => (k * 5 + step) % 61 === 0).map((x) => x.email);
      const joining = step === 7 ? [] : [...usersOf(20, 20_000 + step * 40), u(step, leaving[0]!)].sort(byEmail);
      const gone = new Set([...leaving, ...joining.map((x) => x.email)]);
      users = [...users.filter((x) => !gone.has(x.email)), ...joining].sort(byEmail);
      objects = objects.patched(leaving, joining);
      packed = packed.patched(leaving, joining);
      expect(packed.hash, `step ${step}`).toBe(objects.hash);
      expect(packed.hash, `step ${step}`).toBe(definedHash(users));
    }
    expect(users).toEqual([]);
    expect(packed.hash).toBe(UsersDigest.of([]).hash);
  });

  it("in steps: the same digest, pausing after about every `every` users", async () => {
    const users = usersOf(2500);
    let pauses = 0;
    const stepped = await UsersDigest.inSteps(users, async () => void pauses++, 1000);
    expect(stepped.hash).toBe(UsersDigest.of(users).hash);
    expect(pauses).toBe(2);
  });

  it("a delta applied by the agent hashes to the version of the config it rebuilds", () => {
    const config = { ...base, users: usersOf(1000) };
    const start: AgentConfig = { ...config, version: versionOfConfig(config) };
    const target = { ...config, users: [...config.users.filter((x) => x.email !== "user-00003"), u(5000, "user-new")].sort(byEmail) };
    const version = versionOfConfig(target);
    const applied = applyUserDelta(start, { kind: "delta", from: start.version, version, usersAdded: [u(5000, "user-new")], usersRemoved: ["user-00003"] });
    if (!("config" in applied)) throw new Error(applied.error);
    expect(versionOfConfig(applied.config)).toBe(version);
    expect(applied.config.users).toEqual(target.users);
  });

  it("differs from scheme 1 for the same config", () => {
    const config = { ...base, users: usersOf(10) };
    expect(versionOfConfig(config)).not.toBe(legacyVersionOfConfig(config));
  });
});

describe("config versions, scheme 1 (agents from before scheme 2)", () => {
  it("legacyUsersHash is sha256 of the canonical JSON, also for emails that need escaping and past one hashed piece", () => {
    const users = [...usersOf(2000), u(1, 'quote"back\\slash'), u(2, "ünï")];
    expect(legacyUsersHash(users)).toBe(createHash("sha256").update(canonicalJson(users)).digest("base64url"));
  });

  it("in steps: the same hash, pausing after every `every` users", async () => {
    const users = usersOf(2500);
    let pauses = 0;
    expect(await legacyUsersHashInSteps(users, async () => void pauses++, 1000)).toBe(legacyUsersHash(users));
    expect(pauses).toBe(2);
  });

  it("the version is sha256 of the rest's canonical JSON and the users hash", () => {
    const config = { ...base, users: usersOf(3) };
    const { version: _v, users, ...rest } = config;
    const expected = createHash("sha256").update(`${canonicalJson(rest)}\n${legacyUsersHash(users)}`).digest("base64url").slice(0, 32);
    expect(legacyVersionOfConfig(config)).toBe(expected);
  });
});

describe("deltas", () => {
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
