/**
 * API tokens for shops and bots: created by the owner or an admin with scopes and an expiry,
 * shown once, stored as the SHA-256 of their secret, accepted as `Authorization: Bearer` on
 * /api/trpc (server/api/trpc.ts decides per procedure by its declared scope), revoked.
 *
 * A token acts as "token:<name>" with at most its creator's current role: a creator demoted
 * to viewer leaves their tokens read-only, and a removed creator's tokens go with them.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { TRPCError } from "@trpc/server";
import { and, desc, eq, isNull } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { apiTokens, operators } from "@/db/schema";
import { API_SCOPES, API_TOKEN_DEFAULT_DAYS, API_TOKEN_PATTERN, API_TOKEN_PREFIX, type ApiScope } from "@/core/api-tokens";
import { fieldError } from "@/server/db-errors";
import { recordAudit } from "@/server/audit";
import type { SessionOperator } from "@/server/auth/sessions";
import { blockedSeconds, clearFailures, reserveAttempt } from "@/server/auth/throttle";
import { uniqueViolation } from "@/server/db-errors";

export interface ApiTokenPrincipal {
  id: string;
  name: string;
  scopes: ApiScope[];
}

type Actor = Pick<SessionOperator, "operatorId" | "username">;

/** The audit log's name for what a token does. */
export const tokenActorName = (name: string) => `token:${name}`;

/** last_used_at is written at most this often per token: not one write per API call. */
const LAST_USED_GRANULARITY_MS = 60_000;

export function hashApiSecret(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

export function newApiToken(): { id: string; secret: string; token: string; secretHash: string } {
  const id = randomBytes(8).toString("hex");
  const secret = randomBytes(32).toString("base64url");
  return { id, secret, token: `${API_TOKEN_PREFIX}${id}_${secret}`, secretHash: hashApiSecret(secret) };
}

export function parseApiToken(token: string): { id: string; secret: string } | null {
  const m = API_TOKEN_PATTERN.exec(token);
  return m ? { id: m[1]!, secret: m[2]! } : null;
}

/** Equal hex digests, compared in constant time (lengths are fixed: 64 hex digits). */
function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && timingSafeEqual(x, y);
}

export type TokenAuthentication =
  | { ok: true; operator: SessionOperator; token: ApiTokenPrincipal }
  | { ok: false; error: TRPCError };

function tooMany(retryAfter: number): TokenAuthentication {
  return {
    ok: false,
    error: new TRPCError({ code: "TOO_MANY_REQUESTS", message: `Too many wrong API tokens from this address: try again in ${retryAfter} s`, cause: { retryAfter } }),
  };
}

/**
 * Who a bearer token is, or why not (401; 429 while this failure is throttled). The token is
 * checked first, so a valid one is always accepted, whatever failed before it (issue 21,
 * point 9); a success forgets its own past failures. Wrong secrets, expired and revoked
 * tokens count as failures of that token's id from the client's address; unknown and
 * malformed tokens as failures of the address (server/auth/throttle.ts).
 */
export async function authenticateApiToken(db: Db, token: string, address: string, now = new Date()): Promise<TokenAuthentication> {
  const parsed = parseApiToken(token);
  const [row] = parsed
    ? await db
        .select({
          id: apiTokens.id,
          name: apiTokens.name,
          secretHash: apiTokens.secretHash,
          scopes: apiTokens.scopes,
          expiresAt: apiTokens.expiresAt,
          revokedAt: apiTokens.revokedAt,
          lastUsedAt: apiTokens.lastUsedAt,
          operatorId: operators.id,
          role: operators.role,
        })
        .from(apiTokens)
        .innerJoin(operators, eq(operators.id, apiTokens.createdBy))
        .where(eq(apiTokens.id, parsed.id))
        .limit(1)
    : [];
  // Always one hash compare, found or not, so timing does not tell which ids exist.
  const matches = sameHash(row?.secretHash ?? "0".repeat(64), hashApiSecret(parsed?.secret ?? "")) && !!row;
  let refusal: string | null = null;
  if (!row || !matches) refusal = "Unknown or wrong API token";
  else if (row.revokedAt) refusal = "This API token was revoked";
  else if (row.expiresAt && row.expiresAt <= now) refusal = `This API token expired on ${row.expiresAt.toISOString()}`;
  const attempt = { kind: "token", tokenId: row?.id ?? null, address } as const;
  if (refusal || !row) {
    // Already held back: a read, no write.
    const wait = await blockedSeconds(db, attempt, now);
    if (wait > 0) return tooMany(wait);
    const slot = await reserveAttempt(db, attempt, now);
    if (!slot.ok) return tooMany(slot.retryAfter);
    return { ok: false, error: new TRPCError({ code: "UNAUTHORIZED", message: refusal ?? "Unknown or wrong API token" }) };
  }
  await clearFailures(db, attempt);
  if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() >= LAST_USED_GRANULARITY_MS) {
    await db.update(apiTokens).set({ lastUsedAt: now }).where(eq(apiTokens.id, row.id));
  }
  return {
    ok: true,
    // Never a real session id (those are base64url HMACs, without a colon). A token has no second
    // factor of its own; the requirement is for people signing in (server/api/trpc.ts).
    operator: { sessionId: `api-token:${row.id}`, operatorId: row.operatorId, username: tokenActorName(row.name), role: row.role, twoFactor: false },
    token: { id: row.id, name: row.name, scopes: row.scopes as ApiScope[] },
  };
}

export interface CreateApiTokenInput {
  name: string;
  scopes: ApiScope[];
  /** Undefined: API_TOKEN_DEFAULT_DAYS from now; null: never expires. */
  expiresAt?: Date | null;
}

/** Creates a token; the returned `token` is the only time its secret exists outside the caller. */
export async function createApiToken(db: Db, actor: Actor, input: CreateApiTokenInput, now = new Date()) {
  const expiresAt = input.expiresAt === undefined ? new Date(now.getTime() + API_TOKEN_DEFAULT_DAYS * 86_400_000) : input.expiresAt;
  // The schema refuses past dates too; this is the rule for callers that skip the schema.
  if (expiresAt && expiresAt <= now) throw fieldError("BAD_REQUEST", "expiresAt", "Expiry must be in the future");
  const scopes = API_SCOPES.filter((s) => input.scopes.includes(s));
  if (scopes.length === 0) throw fieldError("BAD_REQUEST", "scopes", "Choose at least one scope");
  const minted = newApiToken();
  try {
    const row = await db.transaction(async (tx) => {
      const [r] = await tx
        .insert(apiTokens)
        .values({ id: minted.id, name: input.name, secretHash: minted.secretHash, scopes, createdBy: actor.operatorId, createdAt: now, expiresAt })
        .returning();
      await recordAudit(tx, actor, {
        clusterId: null,
        action: "api-token.create",
        entityType: "api-token",
        entityId: r!.id,
        summary: `Created API token ${r!.name} (${scopes.join(", ")}${expiresAt ? `, expires ${expiresAt.toISOString().slice(0, 10)}` : ", never expires"})`,
        after: { name: r!.name, scopes, expiresAt: expiresAt?.toISOString() ?? null },
      });
      return r!;
    });
    return { id: row.id, name: row.name, scopes, expiresAt: row.expiresAt, token: minted.token };
  } catch (err) {
    if (uniqueViolation(err)) throw fieldError("CONFLICT", "name", `A token named ${input.name} already exists: revoke it or pick another name`);
    throw err;
  }
}

/** Every token, live ones first, newest first; never a secret or its hash. */
export async function listApiTokens(db: DbOrTx, now = new Date()) {
  const rows = await db
    .select({
      id: apiTokens.id,
      name: apiTokens.name,
      scopes: apiTokens.scopes,
      createdBy: operators.username,
      createdAt: apiTokens.createdAt,
      expiresAt: apiTokens.expiresAt,
      lastUsedAt: apiTokens.lastUsedAt,
      revokedAt: apiTokens.revokedAt,
    })
    .from(apiTokens)
    .innerJoin(operators, eq(operators.id, apiTokens.createdBy))
    .orderBy(desc(apiTokens.createdAt), apiTokens.id);
  return rows
    .map((r) => {
      const status = r.revokedAt ? "revoked" : r.expiresAt && r.expiresAt <= now ? "expired" : "active";
      return { ...r, scopes: r.scopes as ApiScope[], status: status as "active" | "expired" | "revoked" };
    })
    .sort((a, b) => Number(a.status !== "active") - Number(b.status !== "active"));
}

/** Revokes a token at once; revoking one already revoked changes nothing. */
export async function revokeApiToken(db: Db, actor: Actor, tokenId: string, now = new Date()) {
  return db.transaction(async (tx) => {
    const [row] = await tx.select().from(apiTokens).where(eq(apiTokens.id, tokenId)).for("update");
    if (!row) throw new TRPCError({ code: "NOT_FOUND", message: "No such API token" });
    if (row.revokedAt) return { id: row.id, revokedAt: row.revokedAt };
    await tx.update(apiTokens).set({ revokedAt: now }).where(and(eq(apiTokens.id, row.id), isNull(apiTokens.revokedAt)));
    await recordAudit(tx, actor, {
      clusterId: null,
      action: "api-token.revoke",
      entityType: "api-token",
      entityId: row.id,
      summary: `Revoked API token ${row.name}`,
      before: { name: row.name, scopes: row.scopes },
    });
    return { id: row.id, revokedAt: now };
  });
}
