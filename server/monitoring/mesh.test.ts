import { describe, expect, it } from "vitest";
import {
  computeMeshVote,
  isUnreliableWitness,
  updateObserverLinks,
  type MeshStreaks,
  type MeshVoteOptions,
  type NeighbourCheckLike,
} from "./mesh";

/** The whole map after `observerId` reported `checks`, as status.ts keeps it: one link set per observer. */
function updateMeshStreaks(prev: MeshStreaks | null, observerId: string, checks: NeighbourCheckLike[]): MeshStreaks {
  const m = prev ?? {};
  return { ...m, [observerId]: updateObserverLinks(Object.hasOwn(m, observerId) ? m[observerId] : undefined, observerId, checks) };
}

/** The verdict on one target, through the vote status.ts runs. */
function computeMeshVerdict(streaks: MeshStreaks, targetId: string, opts: MeshVoteOptions = {}) {
  return computeMeshVote(streaks, { ...opts, extraTargets: [targetId] })[targetId]!;
}

/** Feeds `rounds` reports: every observer reports ok for all peers except `failing[observer]`. */
function simulate(servers: string[], failing: Record<string, string[]>, rounds: number, start: MeshStreaks = {}) {
  let m = start;
  for (let i = 0; i < rounds; i++) {
    for (const o of servers) {
      const checks = servers.filter((t) => t !== o).map((t) => ({ serverId: t, ok: !(failing[o] ?? []).includes(t) }));
      m = updateMeshStreaks(m, o, checks);
    }
  }
  return m;
}

const S5 = ["a", "b", "c", "d", "t"]; // target t observed by 4 observers

describe("updateObserverLinks", () => {
  it("counts consecutive failures and resets on success", () => {
    let m: MeshStreaks = {};
    m = updateMeshStreaks(m, "a", [{ serverId: "t", ok: false }]);
    m = updateMeshStreaks(m, "a", [{ serverId: "t", ok: false }]);
    expect(m.a?.t).toEqual({ failStreak: 2, lastOk: false });
    m = updateMeshStreaks(m, "a", [{ serverId: "t", ok: true }]);
    expect(m.a?.t).toEqual({ failStreak: 0, lastOk: true });
  });
  it("is pure, ignores self-checks, drops targets no longer checked, keeps other observers", () => {
    const m0 = updateMeshStreaks({}, "b", [{ serverId: "t", ok: false }]);
    const m1 = updateMeshStreaks(m0, "a", [
      { serverId: "a", ok: false },
      { serverId: "t", ok: false },
      { serverId: "x", ok: true },
    ]);
    expect(m1.a).toEqual({ t: { failStreak: 1, lastOk: false }, x: { failStreak: 0, lastOk: true } });
    expect(m1.b).toBe(m0.b);
    const m2 = updateMeshStreaks(m1, "a", [{ serverId: "t", ok: false }]);
    expect(m2.a).toEqual({ t: { failStreak: 2, lastOk: false } });
    expect(m1.a?.t?.failStreak).toBe(1);
    expect(updateMeshStreaks(null, "a", []).a).toEqual({});
  });
  it("updateObserverLinks: last duplicate wins; __proto__ as id is harmless", () => {
    const l = updateObserverLinks({}, "a", [
      { serverId: "t", ok: false },
      { serverId: "t", ok: true },
      { serverId: "__proto__", ok: false },
    ]);
    expect(l.t).toEqual({ failStreak: 0, lastOk: true });
    expect(Object.getPrototypeOf(updateObserverLinks(l, "a", [{ serverId: "__proto__", ok: false }]))).toBe(
      Object.prototype,
    );
  });
});

describe("mesh vote", () => {
  it("2 of 4 observers failing ≥3 in a row → unreachable", () => {
    const m = simulate(S5, { a: ["t"], b: ["t"] }, 3);
    const v = computeMeshVerdict(m, "t");
    expect(v).toMatchObject({ unreachable: true, votesAgainst: 2, usableObservers: 4, discardedObservers: [] });
    expect(v.voters).toEqual(["a", "b"]);
    expect(v.reason).toMatch(/2 of 4 usable observers/);
  });
  it("streak < 3 does not count", () => {
    const m = simulate(S5, { a: ["t"], b: ["t"] }, 2);
    expect(computeMeshVerdict(m, "t")).toMatchObject({ unreachable: false, votesAgainst: 0 });
  });
  it("a success breaks the streak", () => {
    let m = simulate(S5, { a: ["t"], b: ["t"] }, 2);
    m = simulate(S5, {}, 1, m);
    m = simulate(S5, { a: ["t"], b: ["t"] }, 2, m);
    expect(computeMeshVerdict(m, "t").unreachable).toBe(false);
    m = simulate(S5, { a: ["t"], b: ["t"] }, 1, m);
    expect(computeMeshVerdict(m, "t").unreachable).toBe(true);
  });
  it("1 observer failing → not unreachable (needs 2 independent observers)", () => {
    const m = simulate(S5, { a: ["t"] }, 10);
    const v = computeMeshVerdict(m, "t");
    expect(v).toMatchObject({ unreachable: false, votesAgainst: 1, usableObservers: 4 });
    expect(v.reason).toMatch(/2 needed/);
  });
  it("fewer than half of the usable observers → not unreachable", () => {
    const s7 = ["a", "b", "c", "d", "e", "f", "t"]; // 6 observers
    expect(computeMeshVerdict(simulate(s7, { a: ["t"], b: ["t"] }, 3), "t")).toMatchObject({
      unreachable: false,
      votesAgainst: 2,
      usableObservers: 6,
    });
    expect(computeMeshVerdict(simulate(s7, { a: ["t"], b: ["t"] }, 3), "t").reason).toMatch(/at least half/);
    expect(computeMeshVerdict(simulate(s7, { a: ["t"], b: ["t"], c: ["t"] }, 3), "t").unreachable).toBe(true);
  });
  it("an observer failing everything is discarded and not usable", () => {
    const m = simulate(S5, { a: ["b", "c", "d", "t"], b: ["t"] }, 5);
    expect(isUnreliableWitness(m.a ?? {})).toBe(true);
    const v = computeMeshVerdict(m, "t");
    expect(v).toMatchObject({ unreachable: false, votesAgainst: 1, usableObservers: 3, discardedObservers: ["a"] });
    expect(v.reason).toMatch(/unreliable/);
    // a's votes against b, c, d are discarded too
    for (const t of ["b", "c", "d"]) expect(computeMeshVerdict(m, t).unreachable).toBe(false);
  });
  it("exactly half failing is still a reliable witness; more than half is not", () => {
    expect(
      isUnreliableWitness({ x: { failStreak: 3, lastOk: false }, y: { failStreak: 0, lastOk: true } }),
    ).toBe(false);
    expect(
      isUnreliableWitness({
        x: { failStreak: 3, lastOk: false },
        y: { failStreak: 1, lastOk: false },
        z: { failStreak: 0, lastOk: true },
      }),
    ).toBe(true);
    expect(isUnreliableWitness({})).toBe(false);
  });
  it("three servers, one cut off from both others → unreachable", () => {
    const m = simulate(["a", "b", "t"], { a: ["t"], b: ["t"] }, 3);
    expect(computeMeshVerdict(m, "t")).toMatchObject({ unreachable: true, votesAgainst: 2, usableObservers: 2 });
  });
  it("two servers can never vote each other unreachable", () => {
    const m = simulate(["a", "t"], { a: ["t"] }, 5);
    // a fails its only neighbour → unreliable; and only one observer anyway
    expect(computeMeshVerdict(m, "t")).toMatchObject({ unreachable: false, usableObservers: 0, discardedObservers: ["a"] });
  });
  it("inactive observers (stale data) are left out", () => {
    const m = simulate(S5, { a: ["t"], b: ["t"] }, 3);
    expect(computeMeshVerdict(m, "t", { activeObservers: ["b", "c", "d"] })).toMatchObject({
      unreachable: false,
      votesAgainst: 1,
      usableObservers: 3,
    });
    expect(computeMeshVerdict(m, "t", { activeObservers: (id) => id !== "c" && id !== "d" }).unreachable).toBe(true);
  });
  it("the target's own report never counts as a vote about itself", () => {
    const m = updateMeshStreaks({}, "t", [{ serverId: "t", ok: false }]);
    expect(computeMeshVerdict(m, "t").usableObservers).toBe(0);
  });
  it("minStreak / minVotes options", () => {
    const m = simulate(S5, { a: ["t"], b: ["t"] }, 2);
    expect(computeMeshVerdict(m, "t", { minStreak: 2 }).unreachable).toBe(true);
    const one = simulate(S5, { a: ["t"] }, 3);
    expect(computeMeshVerdict(one, "t", { minVotes: 1 }).unreachable).toBe(false); // 1 of 4 < half
  });
  it("computeMeshVote gives a verdict for every observed target plus extras", () => {
    const m = simulate(S5, { a: ["t"], b: ["t"] }, 3);
    const all = computeMeshVote(m, { extraTargets: ["lonely"] });
    expect(Object.keys(all).sort()).toEqual(["a", "b", "c", "d", "lonely", "t"]);
    expect(all.t?.unreachable).toBe(true);
    expect(all.a?.unreachable).toBe(false);
    expect(all.lonely).toMatchObject({ unreachable: false, usableObservers: 0, reason: "no usable observers" });
  });
});
