import { describe, expect, it } from "vitest";
import {
  addressSchema,
  algorithmSchema,
  capacitySchema,
  coefficientSchema,
  COUNTRY_CODES,
  expirySchema,
  flagSchema,
  idSchema,
  nameSchema,
  passwordSchema,
  safeNextPath,
  portSchema,
  securitySchema,
  serverRoleSchema,
  sniSchema,
  trafficLimitGbSchema,
  usernameSchema,
} from "./validation";
import { flagEmoji } from "./format";

const ok = (schema: { safeParse(v: unknown): { success: boolean } }, v: unknown) => schema.safeParse(v).success;
const message = (schema: { safeParse(v: unknown): { success: boolean; error?: { issues: Array<{ message: string }> } } }, v: unknown) =>
  schema.safeParse(v).error?.issues[0]?.message;

describe("nameSchema", () => {
  it("accepts plain, emoji and flag names", () => {
    expect(nameSchema.parse("Default")).toBe("Default");
    expect(nameSchema.parse("🇺🇸 USA")).toBe("🇺🇸 USA");
    expect(nameSchema.parse("🇩🇪 Frankfurt TLS")).toBe("🇩🇪 Frankfurt TLS");
  });
  it("accepts ZWJ emoji sequences and skin tones", () => {
    expect(ok(nameSchema, "👨‍👩‍👧‍👦 Family plan")).toBe(true);
    expect(ok(nameSchema, "🏳️‍🌈 Pride")).toBe(true);
    expect(ok(nameSchema, "👍🏽 ok")).toBe(true);
  });
  it("accepts right-to-left text (Arabic, Hebrew)", () => {
    expect(nameSchema.parse("🇸🇦 السعودية")).toBe("🇸🇦 السعودية");
    expect(nameSchema.parse("ישראל")).toBe("ישראל");
  });
  it("trims leading and trailing spaces", () => {
    expect(nameSchema.parse("   🇺🇸 USA  ")).toBe("🇺🇸 USA");
  });
  it("refuses empty and blank names", () => {
    expect(message(nameSchema, "")).toBe("Name is required");
    expect(message(nameSchema, "    ")).toBe("Name is required");
    expect(ok(nameSchema, undefined)).toBe(false);
    expect(ok(nameSchema, 42)).toBe(false);
  });
  it("counts code points: 64 is fine, 65 is not", () => {
    expect(ok(nameSchema, "a".repeat(64))).toBe(true);
    expect(message(nameSchema, "a".repeat(65))).toBe("Name must be at most 64 characters");
    // 64 astral characters are 128 UTF-16 units, still 64 characters.
    expect(ok(nameSchema, "😀".repeat(64))).toBe(true);
    expect(ok(nameSchema, "😀".repeat(65))).toBe(false);
  });
  // How fast: npm run bench:pure (a wall clock here failed on a busy machine).
  it("refuses a 10,000-character input by its length", () => {
    expect(ok(nameSchema, "x".repeat(10_000))).toBe(false);
    expect(message(nameSchema, "x".repeat(10_000))).toBe("Name must be at most 64 characters");
  });
  it.each([
    ["NUL", "bad\u0000name"],
    ["newline", "bad\nname"],
    ["tab", "bad\tname"],
    ["DEL", "bad\u007fname"],
    ["bidi override", "evil\u202Etxt.exe"],
    ["bidi embedding", "a\u202Ab"],
    ["bidi isolate", "a\u2066b"],
    ["escape", "a\u001b[31mred"],
    ["C1 control", "a\u0085b"],
  ])("refuses control characters: %s", (_label, value) => {
    expect(message(nameSchema, value)).toBe("Name must not contain control characters");
  });
  it("refuses a NUL at either end (not whitespace, so not trimmed)", () => {
    expect(ok(nameSchema, "\u0000USA")).toBe(false);
    expect(ok(nameSchema, "USA\u0000")).toBe(false);
  });
});

describe("portSchema", () => {
  it.each([
    [1, 1],
    [443, 443],
    [65535, 65535],
    ["8443", 8443],
  ])("accepts %s", (input, expected) => {
    expect(portSchema.parse(input)).toBe(expected);
  });
  it.each([0, 65536, -1, 1.5, "abc", "", null, Number.NaN, Infinity])("refuses %s", (input) => {
    expect(ok(portSchema, input)).toBe(false);
  });
  it("says why", () => {
    expect(message(portSchema, 0)).toBe("Port must be between 1 and 65535");
    expect(message(portSchema, 65536)).toBe("Port must be between 1 and 65535");
    expect(message(portSchema, 1.5)).toBe("Port must be a whole number");
    expect(message(portSchema, "abc")).toBe("Port must be a number");
  });
});

describe("addressSchema", () => {
  it.each(["203.0.113.5", "0.0.0.0", "255.255.255.255", "::1", "2001:db8::1", "[2001:db8::1]", "fe80::1:2:3:4", "example.com", "vpn-1.example.co.uk", "localhost", "xn--80ak6aa92e.com", "a.com."])(
    "accepts %s",
    (a) => {
      expect(ok(addressSchema, a)).toBe(true);
    },
  );
  it("trims", () => {
    expect(addressSchema.parse("  example.com ")).toBe("example.com");
  });
  it.each(["", "   ", "bad host", "-a.com", "a-.com", "a..com", "256.1.1.1", "1.2.3", "2001:db8:::1", "http://example.com", "ex_ample.com", "a".repeat(64) + ".com", "x".repeat(10_000), "évil.com"])(
    "refuses %s",
    (a) => {
      expect(ok(addressSchema, a)).toBe(false);
    },
  );
  it("says why", () => {
    expect(message(addressSchema, "bad host")).toBe("Address must be a hostname or an IP address");
    expect(message(addressSchema, "")).toBe("Address is required");
  });
});

describe("sniSchema", () => {
  it("accepts hostnames, refuses IPs and junk", () => {
    expect(sniSchema.parse(" www.microsoft.com ")).toBe("www.microsoft.com");
    expect(ok(sniSchema, "1.2.3.4")).toBe(false);
    expect(ok(sniSchema, "bad host")).toBe(false);
    expect(ok(sniSchema, "")).toBe(false);
  });
});

describe("coefficientSchema", () => {
  it.each([0.1, 1, 2.5, 100, "1.5"])("accepts %s", (c) => {
    expect(ok(coefficientSchema, c)).toBe(true);
  });
  it.each([0.09, 0, -1, 100.1, 1000, "abc", Number.NaN, Infinity])("refuses %s", (c) => {
    expect(ok(coefficientSchema, c)).toBe(false);
  });
  it("says why", () => {
    expect(message(coefficientSchema, 0.09)).toBe("Coefficient must be between 0.1 and 100");
    expect(message(coefficientSchema, 100.1)).toBe("Coefficient must be between 0.1 and 100");
  });
});

describe("capacitySchema", () => {
  it("is optional (null) or a positive whole number of Mbit/s", () => {
    expect(capacitySchema.parse(null)).toBeNull();
    expect(capacitySchema.parse(1000)).toBe(1000);
    expect(ok(capacitySchema, 0)).toBe(false);
    expect(ok(capacitySchema, 1.5)).toBe(false);
    expect(ok(capacitySchema, -10)).toBe(false);
    expect(ok(capacitySchema, "abc")).toBe(false);
  });
});

describe("flagSchema", () => {
  it("accepts ISO 3166-1 alpha-2 codes and none", () => {
    expect(flagSchema.parse("US")).toBe("US");
    expect(flagSchema.parse("de")).toBe("DE");
    expect(flagSchema.parse(null)).toBeNull();
  });
  it("refuses unknown codes", () => {
    for (const f of ["XX", "USA", "", "🇺🇸", "U"]) expect(ok(flagSchema, f)).toBe(false);
  });
  it("knows all 249 assigned codes and makes their emoji", () => {
    expect(COUNTRY_CODES).toHaveLength(249);
    expect(flagEmoji("US")).toBe("🇺🇸");
    expect(flagEmoji("jp")).toBe("🇯🇵");
  });
});

describe("enums", () => {
  it("role, algorithm and security accept only their values", () => {
    expect(ok(serverRoleSchema, "both")).toBe(true);
    expect(ok(serverRoleSchema, "boss")).toBe(false);
    expect(ok(algorithmSchema, "least-traffic")).toBe(true);
    expect(ok(algorithmSchema, "round-robin")).toBe(true);
    expect(message(algorithmSchema, "random")).toBe("Choose a load-balancing algorithm");
    expect(ok(securitySchema, "reality")).toBe(true);
    expect(ok(securitySchema, "ssl")).toBe(false);
  });
});

describe("subscriber fields", () => {
  it("expiry is a date or null", () => {
    expect(expirySchema.parse(null)).toBeNull();
    expect(expirySchema.parse("2030-01-31T23:59:59Z")).toEqual(new Date("2030-01-31T23:59:59Z"));
    expect(ok(expirySchema, "not a date")).toBe(false);
  });
  it("traffic limit is a positive number of GB or null", () => {
    expect(trafficLimitGbSchema.parse(null)).toBeNull();
    expect(trafficLimitGbSchema.parse("50")).toBe(50);
    expect(ok(trafficLimitGbSchema, 0)).toBe(false);
    expect(ok(trafficLimitGbSchema, -1)).toBe(false);
    expect(ok(trafficLimitGbSchema, 2_000_000)).toBe(false);
    expect(ok(trafficLimitGbSchema, "abc")).toBe(false);
  });
});

describe("ids and operator accounts", () => {
  it("idSchema wants a uuid", () => {
    expect(ok(idSchema, "6f1d2c1e-2b9a-4c1e-9d3e-1a2b3c4d5e6f")).toBe(true);
    expect(ok(idSchema, "1; drop table")).toBe(false);
  });
  it("usernameSchema and passwordSchema", () => {
    expect(usernameSchema.parse(" alice ")).toBe("alice");
    expect(ok(usernameSchema, "bad name")).toBe(false);
    expect(ok(passwordSchema, "short")).toBe(false);
    expect(ok(passwordSchema, "long enough")).toBe(true);
  });
});

describe("safeNextPath (finding 12)", () => {
  it.each([["/clusters/x", "/clusters/x"], ["/clusters/x?tab=1#a", "/clusters/x?tab=1#a"], ["/team", "/team"]])("keeps %s", (v, want) => {
    expect(safeNextPath(v)).toBe(want);
  });
  it.each([["//evil.com"], ["https://evil.com"], ["/\\evil.com"], ["\\\\evil.com"], ["javascript:alert(1)"], ["/\t/evil.com"], [""], [null], ["clusters"]])(
    "refuses %s",
    (v) => {
      expect(safeNextPath(v)).toBeNull();
    },
  );
});

describe("names that show nothing (issue 21, point 12)", () => {
  it.each([
    ["zero-width space", "\u200B"],
    ["zero-width joiners", "\u200C\u200D"],
    ["word joiner and BOM", "\u2060\uFEFF"],
    ["variation selectors", "\uFE0F\uFE0E"],
    ["bidi marks", "\u200E\u200F\u061C"],
    ["Hangul filler", "\u3164"],
    ["braille blank", "\u2800"],
    ["exotic spaces around a joiner", "\u00A0\u200D\u3000"],
    ["soft hyphen and CGJ", "\u00AD\u034F"],
    ["tags", "\u{E0061}\u{E0062}"],
  ])("refuses a name of only %s", (_label, name) => {
    expect(message(nameSchema, name)).toBe("Name must have a visible character: this one is only spaces or invisible characters");
  });
  it("accepts a visible character among invisible ones, and emoji made with selectors and joiners", () => {
    expect(ok(nameSchema, "a\u200B")).toBe(true);
    expect(ok(nameSchema, "❤️")).toBe(true);
    expect(ok(nameSchema, "👨‍👩‍👧")).toBe(true);
  });
  it("refuses a username of Hangul fillers (letters that show nothing)", () => {
    expect(message(usernameSchema, "\u3164\u3164")).toBe("Username must have a visible character");
    expect(ok(usernameSchema, "정우")).toBe(true);
  });
});
