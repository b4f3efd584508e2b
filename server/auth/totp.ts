/**
 * TOTP (RFC 6238 over RFC 4226's HOTP) with node:crypto: HMAC-SHA-1, 6 digits, 30-second
 * steps, accepted one step either side for clock drift. No I/O: the caller stores the secret
 * and the last step used (so a code cannot be used twice: see verifyTotp's `lastStep`).
 */
import { createHmac, randomBytes } from "node:crypto";

export const TOTP_STEP_S = 30;
export const TOTP_DIGITS = 6;
/** Steps accepted either side of now: a phone clock a little off, or a code typed as it changed. */
export const TOTP_WINDOW = 1;

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/** RFC 4648 base32 without padding: what authenticator apps read from the QR code. */
export function base32Encode(bytes: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

export function base32Decode(text: string): Buffer {
  const clean = text.replace(/[\s=-]/g, "").toUpperCase();
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of clean) {
    const i = BASE32.indexOf(ch);
    if (i < 0) throw new Error(`not base32: ${JSON.stringify(ch)}`);
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** A new secret: 160 random bits (RFC 4226's recommended length), base32. */
export function newTotpSecret(): string {
  return base32Encode(randomBytes(20));
}

/** RFC 4226 HOTP of `counter` with a raw key. */
export function hotp(key: Uint8Array, counter: number, digits = TOTP_DIGITS): string {
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac("sha1", key).update(msg).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = ((mac[offset]! & 0x7f) << 24) | (mac[offset + 1]! << 16) | (mac[offset + 2]! << 8) | mac[offset + 3]!;
  return String(binary % 10 ** digits).padStart(digits, "0");
}

export function totpStep(nowMs: number): number {
  return Math.floor(nowMs / 1000 / TOTP_STEP_S);
}

/** The code of a base32 secret at a time (ms), or at a given step. */
export function totpCode(secret: string, at: { nowMs: number } | { step: number }, digits = TOTP_DIGITS): string {
  const step = "step" in at ? at.step : totpStep(at.nowMs);
  return hotp(base32Decode(secret), step, digits);
}

/**
 * The step `code` belongs to, within TOTP_WINDOW of now and after `lastStep` (the last step
 * this secret was used at: a code seen once is refused for the rest of its window), or null.
 * Every candidate is compared, in constant time per comparison, whatever matched first.
 */
export function verifyTotp(secret: string, code: string, nowMs: number, lastStep: number | null): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const key = base32Decode(secret);
  const now = totpStep(nowMs);
  let found: number | null = null;
  for (let step = now - TOTP_WINDOW; step <= now + TOTP_WINDOW; step++) {
    const same = timingSafeEqualText(hotp(key, step), code);
    if (same && found === null && (lastStep === null || step > lastStep)) found = step;
  }
  return found;
}

function timingSafeEqualText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** The otpauth:// URI authenticator apps enrol from (Google's Key Uri Format). */
export function otpauthUri(secret: string, account: string, issuer = "Routeboard"): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
  const params = new URLSearchParams({ secret, issuer, algorithm: "SHA1", digits: String(TOTP_DIGITS), period: String(TOTP_STEP_S) });
  return `otpauth://totp/${label}?${params.toString()}`;
}

/**
 * Ten one-time recovery codes, each 10 base32 characters (50 bits) shown as `xxxxx-xxxxx`;
 * normaliseRecoveryCode is what is hashed and compared.
 */
export function newRecoveryCodes(n = 10): string[] {
  return Array.from({ length: n }, () => {
    const raw = base32Encode(randomBytes(7)).slice(0, 10).toLowerCase();
    return `${raw.slice(0, 5)}-${raw.slice(5)}`;
  });
}

export function normaliseRecoveryCode(code: string): string {
  return code.replace(/[\s-]/g, "").toLowerCase();
}

/** A recovery code as typed (with or without its dash, any case). */
export function looksLikeRecoveryCode(code: string): boolean {
  return /^[a-z2-7]{10}$/.test(normaliseRecoveryCode(code));
}
