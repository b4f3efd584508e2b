import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { AgentUser } from "@/core/agent-wire";
import { byEmail } from "@/core/config-version";
import { replaceUsers, UserList, USER_CHUNK } from "./user-list";

const u = (email: string, id = "00000000-0000-4000-8000-000000000001"): AgentUser => ({ id, email });
const sorted = (emails: Iterable<string>) => [...new Set(emails)].sort().map((e) => u(e));

describe("UserList", () => {
  it("an empty list: nothing found, nothing to slice; users join it in order", () => {
    const empty = UserList.of([]);
    expect(empty.length).toBe(0);
    expect(empty.find("a")).toBeUndefined();
    expect(empty.slice(0, 10)).toEqual([]);
    expect(empty.replaced([], [])).toBe(empty);
    expect(empty.replaced(["x"], [u("c"), u("z")]).toArray()).toEqual([u("c"), u("z")]);
  });

  it("equals replaceUsers on one flat array, for any list and change, across chunk edges", () => {
    const email = fc.stringMatching(/^[0-9a-f]{1,3}$/);
    fc.assert(
      fc.property(fc.uniqueArray(email, { maxLength: 3 * USER_CHUNK }), fc.array(email, { maxLength: 40 }), fc.uniqueArray(email, { maxLength: 40 }), (start, leaving, joiningEmails) => {
        const users = sorted(start);
        const joining = joiningEmails.map((e) => u(e, "00000000-0000-4000-8000-000000000002")).sort(byEmail);
        const list = UserList.of(users).replaced(leaving, joining);
        const flat = replaceUsers(users, leaving, joining);
        expect(list.toArray()).toEqual(flat);
        expect(list.length).toBe(flat.length);
        expect([...list]).toEqual(flat);
        for (const x of [...leaving, ...joiningEmails, ...start.slice(0, 20)]) expect(list.find(x)).toEqual(flat.find((y) => y.email === x));
        expect(list.slice(3, 3 + USER_CHUNK)).toEqual(flat.slice(3, 3 + USER_CHUNK));
      }),
      { numRuns: 60 },
    );
  });

  it("a change copies only the chunks it touches; the list it came from is untouched", () => {
    const users = sorted(Array.from({ length: 5 * USER_CHUNK }, (_, k) => String(k).padStart(6, "0")));
    const before = UserList.of(users);
    const after = before.replaced(["000001"], [u("000001", "00000000-0000-4000-8000-000000000009")]);
    expect(before.find("000001")!.id).toBe("00000000-0000-4000-8000-000000000001");
    expect(after.find("000001")!.id).toBe("00000000-0000-4000-8000-000000000009");
    // Chunks past the first are the same chunks (not copies).
    const chunksOf = (l: UserList) => (l as unknown as { chunks: { length: number }[] }).chunks;
    expect(chunksOf(after).slice(1).every((c, k) => c === chunksOf(before)[k + 1])).toBe(true);
    expect(chunksOf(after)[0]).not.toBe(chunksOf(before)[0]);
  });

  it("its JSON pieces, joined by commas, are the whole list's JSON without brackets, whatever the piece size", () => {
    const users = sorted(Array.from({ length: 3 * USER_CHUNK + 17 }, (_, k) => `e${String(k).padStart(6, "0")}\u00e9"`)).map((x, k) => (k % 3 ? x : { ...x, plan: "p" }));
    const list = UserList.of(users).replaced(["e000005é\""], []);
    const whole = JSON.stringify(list.toArray()).slice(1, -1);
    for (const minChars of [1, 50_000, 10_000_000]) {
      const pieces = [...list.jsonPieces(minChars)];
      expect(pieces.join(",")).toBe(whole);
      expect(pieces.slice(0, -1).every((p) => p.length >= minChars)).toBe(true);
    }
    expect([...UserList.of([]).jsonPieces(1)]).toEqual([]);
  });

  it("a chunk that grows past twice its size is cut again", () => {
    let list = UserList.of(sorted(["m"]));
    for (let k = 0; k < 3; k++) list = list.replaced([], sorted(Array.from({ length: USER_CHUNK }, (_, j) => `m${k}${String(j).padStart(5, "0")}`)));
    const chunks = (list as unknown as { chunks: { length: number }[] }).chunks;
    expect(list.length).toBe(1 + 3 * USER_CHUNK);
    expect(Math.max(...chunks.map((c) => c.length))).toBeLessThanOrEqual(2 * USER_CHUNK);
    expect(list.toArray()).toEqual([...list.toArray()].sort(byEmail));
  });
});
