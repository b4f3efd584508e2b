import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  formatStatusCodes,
  matchesStatusCode,
  parseStatusCodes,
  StatusCodeSpecError,
  tryParseStatusCodes,
} from "./status-codes";

describe("status codes", () => {
  it("parses the default range", () => {
    expect(parseStatusCodes("200-399")).toEqual([[200, 399]]);
  });

  it("parses lists and ranges, with whitespace", () => {
    expect(parseStatusCodes("200,204,300-308")).toEqual([
      [200, 200],
      [204, 204],
      [300, 308],
    ]);
    expect(parseStatusCodes(" 200 , 204 , 300 - 308 ")).toEqual([
      [200, 200],
      [204, 204],
      [300, 308],
    ]);
  });

  it("sorts and merges overlapping/adjacent entries", () => {
    expect(parseStatusCodes("300-308,200,201,202-204,305-310")).toEqual([
      [200, 204],
      [300, 310],
    ]);
    expect(formatStatusCodes(parseStatusCodes("204,200,201"))).toBe("200-201,204");
  });

  it("accepts single-code ranges and the bounds", () => {
    expect(parseStatusCodes("100-599")).toEqual([[100, 599]]);
    expect(parseStatusCodes("204-204")).toEqual([[204, 204]]);
  });

  it.each([
    ["399-200", /range 399-200 is reversed/],
    ["abc", /"abc" is not a status code or range/],
    ["99", /status code 99 is out of range 100-599/],
    ["600", /status code 600 is out of range 100-599/],
    ["200-600", /status code 600 is out of range/],
    ["", /must not be empty/],
    ["   ", /must not be empty/],
    ["200,,204", /empty entry/],
    ["200,", /empty entry/],
    ["2OO", /not a status code/],
    ["200-", /not a status code/],
    ["-200", /not a status code/],
    ["200-300-400", /not a status code/],
    ["1e2", /not a status code/],
    ["0200", /not a status code/],
    ["200.5", /not a status code/],
  ])("rejects %j with a clear error", (spec, re) => {
    const r = tryParseStatusCodes(spec);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(re);
    expect(() => parseStatusCodes(spec)).toThrow(StatusCodeSpecError);
  });

  it("rejects absurdly long specs", () => {
    expect(tryParseStatusCodes("200,".repeat(100) + "200").ok).toBe(false);
  });

  it("matches codes", () => {
    expect(matchesStatusCode("200-399", 200)).toBe(true);
    expect(matchesStatusCode("200-399", 399)).toBe(true);
    expect(matchesStatusCode("200-399", 400)).toBe(false);
    expect(matchesStatusCode("200-399", 199)).toBe(false);
    const ranges = parseStatusCodes("200,204,300-308");
    expect(matchesStatusCode(ranges, 204)).toBe(true);
    expect(matchesStatusCode(ranges, 203)).toBe(false);
    expect(matchesStatusCode(ranges, 308)).toBe(true);
    expect(matchesStatusCode(ranges, 309)).toBe(false);
  });

  it("property: matching agrees with a naive reading of the entries", () => {
    const entry = fc
      .tuple(fc.integer({ min: 100, max: 599 }), fc.integer({ min: 100, max: 599 }))
      .map(([a, b]) => (a === b ? [a, a] : [Math.min(a, b), Math.max(a, b)]) as [number, number]);
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 8 }), fc.integer({ min: 100, max: 599 }), (entries, code) => {
        const spec = entries.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(",");
        const naive = entries.some(([a, b]) => code >= a && code <= b);
        expect(matchesStatusCode(spec, code)).toBe(naive);
        // round trip through the canonical form
        expect(matchesStatusCode(formatStatusCodes(parseStatusCodes(spec)), code)).toBe(naive);
      }),
    );
  });
});
