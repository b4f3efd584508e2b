/**
 * Device cookies (OWASP's "slow down online guessing attacks with device cookies"): a browser
 * that has logged in as an operator keeps a signed cookie naming that operator. Its login
 * attempts for that operator are throttled on the device alone (server/auth/throttle.ts), so
 * somebody guessing the operator's password elsewhere, whatever their address, never locks
 * the operator out of a browser they have used before; the guesser, without such a cookie,
 * shares the username's counter with every other untrusted client.
 *
 * The cookie is `<nonce>.<mac>`, the mac an HMAC with the session secret over the lower-cased
 * username and the nonce: it names no one, and cannot be made for another username.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { sessionSecret } from "@/server/auth/secret";

export const DEVICE_COOKIE = "rb_device";
/** Kept a year; each login with it renews it. */
const DEVICE_TTL_MS = 365 * 24 * 3600 * 1000;

const macOf = (username: string, nonce: string) => createHmac("sha256", sessionSecret()).update(`device|${username.toLowerCase()}|${nonce}`).digest("base64url");

/** A new cookie value for a browser that just logged in as `username`. */
export function newDeviceToken(username: string): string {
  const nonce = randomBytes(16).toString("base64url");
  return `${nonce}.${macOf(username, nonce)}`;
}

/** The device's id (its nonce) when `value` is a device cookie of `username`, else null. */
export function deviceOf(value: string | undefined, username: string): string | null {
  const m = value ? /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(value) : null;
  if (!m) return null;
  const want = Buffer.from(macOf(username, m[1]!));
  const got = Buffer.from(m[2]!);
  return want.length === got.length && timingSafeEqual(want, got) ? m[1]! : null;
}

export function deviceCookie(value: string, secure: boolean, now = new Date()): string {
  const parts = [`${DEVICE_COOKIE}=${value}`, "Path=/api/trpc", "HttpOnly", "SameSite=Strict", `Expires=${new Date(now.getTime() + DEVICE_TTL_MS).toUTCString()}`];
  if (secure) parts.push("Secure");
  return parts.join("; ");
}
