/**
 * Operator sessions: a random token in an httpOnly, SameSite=Lax cookie; the database keeps
 * only its HMAC, so a leaked table cannot be replayed. Sessions expire and can be revoked.
 */
import { createHmac, randomBytes } from "node:crypto";
import { and, eq, gt, isNull, ne } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { operators, sessions } from "@/db/schema";
import { sessionSecret } from "./secret";

export const SESSION_COOKIE = "rb_session";
export const SESSION_TTL_MS = 14 * 24 * 3600 * 1000;

export type OperatorRole = "owner" | "admin" | "viewer";
export interface SessionOperator {
  sessionId: string;
  operatorId: string;
  username: string;
  role: OperatorRole;
  /** Has a second factor (server/accounts/two-factor.ts); when the owner requires one, operators without it may only enrol. */
  twoFactor: boolean;
}

export function sessionIdOf(token: string): string {
  return createHmac("sha256", sessionSecret()).update(token).digest("base64url");
}

export async function createSession(db: Db, operatorId: string, userAgent: string | undefined, now = new Date()) {
  const token = randomBytes(32).toString("base64url");
  const expiresAt = new Date(now.getTime() + SESSION_TTL_MS);
  await db.insert(sessions).values({
    id: sessionIdOf(token),
    operatorId,
    expiresAt,
    lastSeenAt: now,
    userAgent: userAgent?.slice(0, 300),
  });
  return { token, expiresAt };
}

export async function findSession(db: Db, token: string | undefined, now = new Date()): Promise<SessionOperator | null> {
  if (!token || token.length > 200) return null;
  const id = sessionIdOf(token);
  const rows = await db
    .select({ sessionId: sessions.id, operatorId: operators.id, username: operators.username, role: operators.role, totpEnabledAt: operators.totpEnabledAt })
    .from(sessions)
    .innerJoin(operators, eq(operators.id, sessions.operatorId))
    .where(and(eq(sessions.id, id), isNull(sessions.revokedAt), gt(sessions.expiresAt, now)))
    .limit(1);
  const row = rows[0];
  return row ? { sessionId: row.sessionId, operatorId: row.operatorId, username: row.username, role: row.role, twoFactor: row.totpEnabledAt !== null } : null;
}

export async function revokeSession(db: Db, sessionId: string, now = new Date()) {
  await db.update(sessions).set({ revokedAt: now }).where(eq(sessions.id, sessionId));
}

/** Ends every session of an operator except `keep` (their own, after changing their password). */
export async function revokeOperatorSessions(db: DbOrTx, operatorId: string, keep?: string, now = new Date()) {
  await db
    .update(sessions)
    .set({ revokedAt: now })
    .where(and(eq(sessions.operatorId, operatorId), isNull(sessions.revokedAt), keep ? ne(sessions.id, keep) : undefined));
}

export function sessionCookie(token: string, expiresAt: Date, secure: boolean): string {
  const parts = [
    `${SESSION_COOKIE}=${token}`,
    "Path=/",
    "HttpOnly",
    "SameSite=Lax",
    `Expires=${expiresAt.toUTCString()}`,
  ];
  if (secure) parts.push("Secure");
  return parts.join("; ");
}

export function clearSessionCookie(): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Expires=Thu, 01 Jan 1970 00:00:00 GMT`;
}

/**
 * A cookie's value, or undefined. A value that is not valid percent-encoding ("%zz") is
 * treated as absent: anybody can send any Cookie header, and it must never turn into a 500.
 */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const i = part.indexOf("=");
    if (i < 0) continue;
    if (part.slice(0, i).trim() !== name) continue;
    try {
      return decodeURIComponent(part.slice(i + 1).trim());
    } catch {
      return undefined;
    }
  }
  return undefined;
}
