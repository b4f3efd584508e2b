/**
 * The pure parts of config deltas (issue 23): the users diff, merging journal steps, and
 * reading the request. Through HTTP, on the databases, in dataplane.test.ts ("config deltas").
 */
import { describe, expect, it } from "vitest";
import { configVersionSchema, type AgentUser } from "@/core/agent-wire";
import { parseDeltaFrom, pickDeltaEncoding, pickEncoding } from "./config-http";
import { mergeChanges } from "./config-journal";
import { diffSortedUsers } from "@/core/config-version";

describe("config deltas: pure parts", () => {
  const u = (email: string, id = "00000000-0000-4000-8000-000000000001"): AgentUser => ({ id, email });
  const other = "00000000-0000-4000-8000-000000000002";

  it("diffs two sorted lists exactly: an id change is a removal and an addition", () => {
    expect(diffSortedUsers([u("a"), u("b"), u("c")], [u("b", other), u("c"), u("d")])).toEqual({ added: [u("b", other), u("d")], removed: [u("a"), u("b")] });
  });

  it("merges steps into the exact difference: added then removed is nothing, an id changed back is nothing", () => {
    expect(mergeChanges([{ added: [u("x")], removed: [] }, { added: [u("y")], removed: [u("x")] }])).toEqual({ added: [u("y")], removed: [] });
    expect(mergeChanges([{ added: [u("b", other)], removed: [u("b")] }, { added: [u("b")], removed: [u("b", other)] }])).toEqual({ added: [], removed: [] });
    expect(mergeChanges([{ added: [], removed: [u("a")] }, { added: [u("a", other)], removed: [] }])).toEqual({ added: [u("a", other)], removed: [u("a")] });
  });

  it("reads If-None-Match strictly with delta=1 and negotiates br or gzip", () => {
    expect(parseDeltaFrom(undefined)).toBeNull();
    expect(parseDeltaFrom('"AbC_1-x"')).toBe("AbC_1-x");
    expect(parseDeltaFrom('W/"AbC"')).toBe("AbC");
    for (const bad of ["*", '"a", "b"', '"a b"', "AbC", '""']) expect(parseDeltaFrom(bad)).toEqual({ error: expect.stringMatching(/^If-None-Match: /) });
    // Its check (isConfigVersion, no zod parse per poll) agrees with configVersionSchema.
    for (const v of ["a", "AbC_1-x", "x".repeat(128), "x".repeat(129), "a+b", "a/b", "a=", "é", "a b", "-_-", "0"]) {
      const parsed = parseDeltaFrom(`"${v}"`);
      expect(typeof parsed === "string", v).toBe(configVersionSchema.safeParse(v).success);
    }
    expect(pickEncoding("gzip, deflate, br")).toBe("br");
    expect(pickEncoding("br;q=0, gzip")).toBe("gzip");
    expect(pickEncoding("identity")).toBeNull();
    expect(pickEncoding(undefined)).toBeNull();
    expect(pickEncoding("*")).toBe("br");
  });

  it("sends deltas in gzip when the agent takes it as gladly as br (its users are then deflated once per change)", () => {
    expect(pickDeltaEncoding("br, gzip")).toBe("gzip");
    expect(pickDeltaEncoding("gzip, deflate, br")).toBe("gzip");
    expect(pickDeltaEncoding("*")).toBe("gzip");
    expect(pickDeltaEncoding("br;q=1, gzip;q=0.5")).toBe("br");
    expect(pickDeltaEncoding("br")).toBe("br");
    expect(pickDeltaEncoding("gzip;q=0, br")).toBe("br");
    expect(pickDeltaEncoding("identity")).toBeNull();
    expect(pickDeltaEncoding(undefined)).toBeNull();
  });
});
