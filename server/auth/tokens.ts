import { createHash, randomBytes } from "node:crypto";

/** A server agent's bearer token; only its sha256 is stored. */
export function newAgentToken(): { token: string; hash: string } {
  const token = `rba_${randomBytes(24).toString("base64url")}`;
  return { token, hash: hashAgentToken(token) };
}

export function hashAgentToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** A subscriber's subscription token: unguessable, URL-safe. */
export function newSubscriptionToken(): string {
  return randomBytes(18).toString("base64url");
}
