import { describe, expect, it } from "vitest";
import { leadingFlagCode, nameWithFlag } from "./inbound-name";

describe("inbound name flags", () => {
  it("reads the leading flag's country code", () => {
    expect(leadingFlagCode("🇺🇸 New York")).toBe("US");
    expect(leadingFlagCode("🇩🇪Berlin")).toBe("DE");
    expect(leadingFlagCode("New York 🇺🇸")).toBeNull();
    expect(leadingFlagCode("")).toBeNull();
    expect(leadingFlagCode("🇺 lone indicator")).toBeNull();
  });
  it("puts, replaces and removes the leading flag, keeping the rest", () => {
    expect(nameWithFlag("New York", "US")).toBe("🇺🇸 New York");
    expect(nameWithFlag("🇺🇸 New York", "CA")).toBe("🇨🇦 New York");
    expect(nameWithFlag("🇺🇸New York", null)).toBe("New York");
    expect(nameWithFlag("", "FR")).toBe("🇫🇷 ");
    expect(nameWithFlag("Paris", "bogus")).toBe("Paris");
  });
});
