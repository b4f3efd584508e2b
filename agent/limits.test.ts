import { describe, expect, it } from "vitest";
import { listedIn, UserLimits } from "./limits";
import type { TrafficByEmail } from "./stats";

const read = (rows: Record<string, number>): TrafficByEmail => new Map(Object.entries(rows).map(([e, down]) => [e, { up: 0, down }]));
const none = () => 0;

describe("traffic limits kept by the agent", () => {
  it("does nothing until the panel sends limits (an older panel never does)", () => {
    const l = new UserLimits();
    expect(l.enabled).toBe(false);
    expect(l.onRead(read({ a: 10_000_000 }))).toEqual([]);
  });

  it("removes a user the reading that passes what was left, counting only bytes after the acknowledged report", () => {
    const l = new UserLimits();
    // 300 bytes were read after the acknowledged report was cut: they count against the 1000 left.
    expect(l.onAck(["a", "b"], [{ email: "a", remainingBytes: 1000 }], (e) => (e === "a" ? 300 : 0))).toEqual({ restore: [], remove: [] });
    expect(l.of("a")).toEqual({ remaining: 1000, spent: 300 });
    expect(l.of("b")).toBe("unlimited");
    expect(l.onRead(read({ a: 600, b: 1e9 }))).toEqual([]);
    expect(l.onRead(read({ a: 100 }))).toEqual(["a"]);
    expect([...l.removed]).toEqual(["a"]);
    // Once removed, not reported as crossing again.
    expect(l.onRead(read({ a: 5 }))).toEqual([]);
  });

  it("takes a user out at once when the panel says nothing is left, and puts back one whose limit was raised or dropped", () => {
    const l = new UserLimits();
    expect(l.onAck(["a"], [{ email: "a", remainingBytes: 0 }], none)).toEqual({ restore: [], remove: ["a"] });
    expect(l.onAck(["a"], [{ email: "a", remainingBytes: 5000 }], none)).toEqual({ restore: ["a"], remove: [] });
    l.onRead(read({ a: 6000 }));
    expect(l.onAck(["a"], [], none)).toEqual({ restore: ["a"], remove: [] });
    expect(l.of("a")).toBe("unlimited");
  });

  it("asks the panel about a user with traffic it knows nothing of", () => {
    const l = new UserLimits();
    l.onAck(["a"], [], none);
    expect(l.wantsReport).toBe(false);
    l.onRead(read({ c: 10 }));
    expect(l.wantsReport).toBe(true);
    l.onAck(["c"], [{ email: "c", remainingBytes: 100 }], none);
    expect(l.wantsReport).toBe(false);
  });

  it("forgets users the config no longer lists, so its state stays within the config's users and the panel decides their return", () => {
    const l = new UserLimits();
    l.onAck(["a", "b", "c"], [{ email: "a", remainingBytes: 0 }], none);
    l.onRead(read({ d: 1 }));
    l.keepOnly(listedIn([{ email: "b" }]));
    expect(l.removed.size).toBe(0);
    expect(l.of("a")).toBeNull();
    expect(l.of("c")).toBeNull();
    expect(l.of("b")).toBe("unlimited");
    expect(l.wantsReport).toBe(false);
  });

  it("watches the limited users still served, closest to their limit first, at most as many as asked", () => {
    const l = new UserLimits();
    l.onAck(["a", "b", "c", "d"], [
      { email: "a", remainingBytes: 500 },
      { email: "b", remainingBytes: 100 },
      { email: "c", remainingBytes: 0 },
      { email: "d", remainingBytes: 300 },
    ], none);
    expect(l.watched(2)).toEqual(["b", "d"]);
    expect(l.watched(10)).toEqual(["b", "d", "a"]);
  });

  it("tells who is listed, by binary search in sorted users, by a set otherwise", () => {
    const sorted = listedIn([{ email: "a" }, { email: "c" }, { email: "e" }]);
    expect(["a", "b", "c", "d", "e", "f"].map(sorted)).toEqual([true, false, true, false, true, false]);
    const unsorted = listedIn([{ email: "e" }, { email: "a" }]);
    expect(["a", "c", "e"].map(unsorted)).toEqual([true, false, true]);
    expect(listedIn([])("a")).toBe(false);
  });

  it("survives a restart: remaining bytes and who is out are kept, what was spent since is what delivery still holds", () => {
    const l = new UserLimits();
    l.onAck(["a", "b"], [
      { email: "a", remainingBytes: 1000 },
      { email: "b", remainingBytes: 0 },
    ], none);
    l.onRead(read({ a: 400 }));
    const again = new UserLimits();
    again.restore(JSON.parse(JSON.stringify(l.saved())), (e) => (e === "a" ? 400 : 0));
    expect(again.enabled).toBe(true);
    expect(again.of("a")).toEqual({ remaining: 1000, spent: 400 });
    expect([...again.removed]).toEqual(["b"]);
    expect(again.onRead(read({ a: 600 }))).toEqual(["a"]);
  });
});
