import { describe, expect, it } from "vitest";
import { COUNTRY_CODES } from "@/core/validation";
import { flagEmoji } from "@/core/format";
import { codeOfFlagEmoji, FLAGS, hasFlag, splitFlags } from "./flags";

describe("SVG flags", () => {
  it("finds each flag emoji in a name with its country code, and keeps the rest as text", () => {
    expect(splitFlags("🇺🇸 New York")).toEqual([{ text: "🇺🇸", code: "US" }, { text: " New York" }]);
    expect(splitFlags("EU: 🇩🇪🇳🇱 mix")).toEqual([{ text: "EU: " }, { text: "🇩🇪", code: "DE" }, { text: "🇳🇱", code: "NL" }, { text: " mix" }]);
    expect(splitFlags("plain name")).toEqual([{ text: "plain name" }]);
    expect(splitFlags("")).toEqual([]);
  });

  it("reads a code back from the emoji the product writes", () => {
    for (const code of ["US", "JP", "GB", "ZA"]) expect(codeOfFlagEmoji(flagEmoji(code))).toBe(code);
    expect(codeOfFlagEmoji("US")).toBeNull();
    expect(codeOfFlagEmoji("🇺")).toBeNull();
  });

  it("draws only real country codes, including every country of the demo", () => {
    for (const code of Object.keys(FLAGS)) expect(COUNTRY_CODES).toContain(code);
    for (const code of ["US", "DE", "NL", "JP", "us"]) expect(hasFlag(code)).toBe(true);
    expect(hasFlag("AQ")).toBe(false);
  });
});
