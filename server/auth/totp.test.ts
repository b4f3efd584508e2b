/** TOTP against RFC 6238's test vectors (appendix B, SHA-1) and the rules built on it. */
import { describe, expect, it } from "vitest";
import { base32Decode, base32Encode, hotp, looksLikeRecoveryCode, newRecoveryCodes, newTotpSecret, normaliseRecoveryCode, otpauthUri, totpCode, totpStep, verifyTotp } from "./totp";

// RFC 6238's SHA-1 seed is the ASCII string "12345678901234567890".
const RFC_SECRET = base32Encode(Buffer.from("12345678901234567890", "ascii"));

describe("TOTP", () => {
  it("matches RFC 6238's SHA-1 test vectors (8 digits)", () => {
    const vectors: Array<[number, string]> = [
      [59, "94287082"],
      [1111111109, "07081804"],
      [1111111111, "14050471"],
      [1234567890, "89005924"],
      [2000000000, "69279037"],
      [20000000000, "65353130"],
    ];
    for (const [seconds, code] of vectors) expect(totpCode(RFC_SECRET, { nowMs: seconds * 1000 }, 8), String(seconds)).toBe(code);
  });

  it("matches RFC 4226's HOTP values (6 digits)", () => {
    const key = Buffer.from("12345678901234567890", "ascii");
    expect([0, 1, 2, 3, 9].map((c) => hotp(key, c))).toEqual(["755224", "287082", "359152", "969429", "520489"]);
  });

  it("round-trips base32 and makes 160-bit secrets", () => {
    expect(base32Encode(Buffer.from("foobar"))).toBe("MZXW6YTBOI");
    expect(base32Decode("MZXW6YTBOI").toString()).toBe("foobar");
    const s = newTotpSecret();
    expect(s).toMatch(/^[A-Z2-7]{32}$/);
    expect(base32Decode(s)).toHaveLength(20);
  });

  it("accepts a code one step either side, not two, and never a step already used", () => {
    const now = 1_800_000_000_000;
    const step = totpStep(now);
    const secret = newTotpSecret();
    const at = (s: number) => totpCode(secret, { step: s });
    expect(verifyTotp(secret, at(step), now, null)).toBe(step);
    expect(verifyTotp(secret, at(step - 1), now, null)).toBe(step - 1);
    expect(verifyTotp(secret, at(step + 1), now, null)).toBe(step + 1);
    expect(verifyTotp(secret, at(step + 2), now, null)).toBeNull();
    expect(verifyTotp(secret, at(step - 2), now, null)).toBeNull();
    // Replay: once step is used, it and earlier steps are refused; a later one is fine.
    expect(verifyTotp(secret, at(step), now, step)).toBeNull();
    expect(verifyTotp(secret, at(step - 1), now, step)).toBeNull();
    expect(verifyTotp(secret, at(step + 1), now, step)).toBe(step + 1);
    for (const bad of ["", "12345", "1234567", "abcdef", " 123456"]) expect(verifyTotp(secret, bad, now, null)).toBeNull();
  });

  it("makes an otpauth URI apps read", () => {
    expect(otpauthUri("JBSWY3DPEHPK3PXP", "ada@example")).toBe("otpauth://totp/Routeboard:ada%40example?secret=JBSWY3DPEHPK3PXP&issuer=Routeboard&algorithm=SHA1&digits=6&period=30");
  });

  it("makes ten distinct recovery codes, typed with or without the dash", () => {
    const codes = newRecoveryCodes();
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const c of codes) {
      expect(c).toMatch(/^[a-z2-7]{5}-[a-z2-7]{5}$/);
      expect(looksLikeRecoveryCode(c.toUpperCase().replace("-", " "))).toBe(true);
      expect(normaliseRecoveryCode(c)).toHaveLength(10);
    }
    expect(looksLikeRecoveryCode("123456")).toBe(false);
  });
});
