/**
 * A second factor for operators (issue 27, point 5): TOTP (server/auth/totp.ts) with ten
 * one-time recovery codes, enrolled from a QR code and confirmed with a code before it takes
 * effect. Login asks for a code after the password (server/api/routers/auth.ts: no session
 * until it passes). The owner can require it of every operator (operators without it can
 * then only enrol: server/api/trpc.ts) and reset an operator's. Every code check is throttled
 * like a password, on counters of its own, so a correct password cannot clear the failures of
 * the codes guessed after it. The audit log records enrolment, disabling, resets, the
 * requirement and each recovery code used.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { TRPCError } from "@trpc/server";
import { and, count, eq, isNull, lt, or } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { operatorRecoveryCodes, operators, settings } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { hashPassword, verifyPassword } from "@/server/auth/password";
import { sessionSecret } from "@/server/auth/secret";
import { revokeOperatorSessions, type SessionOperator } from "@/server/auth/sessions";
import { reserveAttempt } from "@/server/auth/throttle";
import { looksLikeRecoveryCode, newRecoveryCodes, newTotpSecret, normaliseRecoveryCode, otpauthUri, verifyTotp } from "@/server/auth/totp";
import { written, type Written } from "@/server/changes";
import { fieldError } from "@/server/db-errors";

/** settings key: `true` when every operator must have a second factor. */
export const REQUIRE_TWO_FACTOR_KEY = "require_two_factor";
/** How long the code step of a login may follow its password step. */
export const LOGIN_CHALLENGE_TTL_MS = 5 * 60_000;

export async function twoFactorRequired(db: DbOrTx): Promise<boolean> {
  const [row] = await db.select().from(settings).where(eq(settings.key, REQUIRE_TWO_FACTOR_KEY));
  return row?.value === true;
}

export async function twoFactorStatus(db: Db, operatorId: string) {
  const [op] = await db.select({ enabledAt: operators.totpEnabledAt }).from(operators).where(eq(operators.id, operatorId));
  const [left] = await db
    .select({ n: count() })
    .from(operatorRecoveryCodes)
    .where(and(eq(operatorRecoveryCodes.operatorId, operatorId), isNull(operatorRecoveryCodes.usedAt)));
  return { enabled: !!op?.enabledAt, enabledAt: op?.enabledAt ?? null, recoveryCodesLeft: left?.n ?? 0, required: await twoFactorRequired(db) };
}

/** A new secret to enrol, not in effect until confirmEnrolment: shown as text and as the URI the QR code holds. */
export async function beginEnrolment(db: Db, me: SessionOperator): Promise<{ secret: string; uri: string }> {
  const [op] = await db.select().from(operators).where(eq(operators.id, me.operatorId));
  if (!op) throw new TRPCError({ code: "NOT_FOUND", message: "No such operator" });
  if (op.totpEnabledAt) throw new TRPCError({ code: "BAD_REQUEST", message: "Two-factor authentication is already on: turn it off first to enrol another device" });
  const secret = newTotpSecret();
  await db.update(operators).set({ totpPendingSecret: secret }).where(eq(operators.id, op.id));
  return { secret, uri: otpauthUri(secret, op.username) };
}

/** Throttles one code check: counters of their own ("2fa:" cannot start a username), so a password success never clears them. */
async function reserveCodeCheck(db: Db, username: string, clientAddress: string, device: string | null) {
  const r = await reserveAttempt(db, { kind: "login", username: `2fa:${username}`, address: clientAddress, device });
  if (!r.ok) {
    throw new TRPCError({ code: "TOO_MANY_REQUESTS", message: `Too many wrong codes: try again in ${r.retryAfter} s`, cause: { retryAfter: r.retryAfter } });
  }
  return r;
}

/** Stores a hash per recovery code (argon2id, as passwords) in place of the old ones. */
async function replaceRecoveryCodes(tx: DbOrTx, operatorId: string, codes: string[]) {
  const hashes = await Promise.all(codes.map((c) => hashPassword(normaliseRecoveryCode(c))));
  await tx.delete(operatorRecoveryCodes).where(eq(operatorRecoveryCodes.operatorId, operatorId));
  await tx.insert(operatorRecoveryCodes).values(hashes.map((codeHash) => ({ operatorId, codeHash })));
}

/** Turns the pending secret on once a code from it is right; answers the ten recovery codes, shown once. */
export async function confirmEnrolment(db: Db, me: SessionOperator, input: { code: string }, clientAddress: string, now = Date.now()): Promise<Written<{ recoveryCodes: string[] }>> {
  const slot = await reserveCodeCheck(db, me.username, clientAddress, `session-${me.sessionId}`);
  const [op] = await db.select().from(operators).where(eq(operators.id, me.operatorId));
  if (!op?.totpPendingSecret) throw new TRPCError({ code: "BAD_REQUEST", message: "Start the enrolment first: there is no secret to confirm" });
  const step = verifyTotp(op.totpPendingSecret, input.code.trim(), now, null);
  if (step === null) throw fieldError("BAD_REQUEST", "code", "Wrong code: type the 6 digits your app shows now");
  await slot.release();
  const codes = newRecoveryCodes();
  await db.transaction(async (tx) => {
    await tx
      .update(operators)
      .set({ totpSecret: op.totpPendingSecret, totpPendingSecret: null, totpEnabledAt: new Date(now), totpLastStep: step })
      .where(eq(operators.id, op.id));
    await replaceRecoveryCodes(tx, op.id, codes);
    // Sessions opened with the password alone end: whoever holds one never passed the second factor.
    await revokeOperatorSessions(tx, op.id, me.sessionId);
    await recordAudit(tx, me, {
      clusterId: null,
      action: "operator.2fa.enrol",
      entityType: "operator",
      entityId: op.id,
      summary: `${op.username} turned on two-factor authentication (${codes.length} recovery codes)`,
    });
  });
  return written({ recoveryCodes: codes });
}

/**
 * Checks a second factor of an operator: a TOTP code (each step once) or an unused recovery
 * code (then used up, and audited). Throws UNAUTHORIZED naming `code` when it is wrong.
 */
export async function checkSecondFactor(
  db: Db,
  who: { operatorId: string; username: string },
  code: string,
  clientAddress: string,
  device: string | null,
  now = Date.now(),
): Promise<"totp" | "recovery"> {
  const slot = await reserveCodeCheck(db, who.username, clientAddress, device);
  const [op] = await db.select().from(operators).where(eq(operators.id, who.operatorId));
  const wrong = () => fieldError("UNAUTHORIZED", "code", "Wrong code, or a code already used");
  if (!op?.totpSecret) throw wrong();
  const typed = code.trim();
  if (/^\d{6}$/.test(typed)) {
    const step = verifyTotp(op.totpSecret, typed, now, op.totpLastStep);
    if (step === null) throw wrong();
    // Only one request may use a step: a concurrent replay of the same code loses here.
    const taken = await db
      .update(operators)
      .set({ totpLastStep: step })
      .where(and(eq(operators.id, op.id), or(isNull(operators.totpLastStep), lt(operators.totpLastStep, step))))
      .returning({ id: operators.id });
    if (taken.length === 0) throw wrong();
    await slot.release();
    return "totp";
  }
  if (!looksLikeRecoveryCode(typed)) throw wrong();
  const unused = await db
    .select()
    .from(operatorRecoveryCodes)
    .where(and(eq(operatorRecoveryCodes.operatorId, op.id), isNull(operatorRecoveryCodes.usedAt)));
  const normalised = normaliseRecoveryCode(typed);
  let match: string | null = null;
  for (const row of unused) if (match === null && (await verifyPassword(row.codeHash, normalised))) match = row.id;
  if (match === null) throw wrong();
  const left = await db.transaction(async (tx) => {
    const used = await tx
      .update(operatorRecoveryCodes)
      .set({ usedAt: new Date(now) })
      .where(and(eq(operatorRecoveryCodes.id, match), isNull(operatorRecoveryCodes.usedAt)))
      .returning({ id: operatorRecoveryCodes.id });
    if (used.length === 0) return null;
    const remaining = unused.length - 1;
    await recordAudit(tx, { operatorId: op.id, username: op.username }, {
      clusterId: null,
      action: "operator.2fa.recovery",
      entityType: "operator",
      entityId: op.id,
      summary: `${op.username} logged in with a recovery code; ${remaining} left`,
    });
    return remaining;
  });
  if (left === null) throw wrong();
  await slot.release();
  return "recovery";
}

/** An operator turns their own second factor off with a current code (refused while the owner requires it). */
export async function disableTwoFactor(db: Db, me: SessionOperator, input: { code: string }, clientAddress: string): Promise<Written<{ ok: true }>> {
  if (await twoFactorRequired(db)) throw new TRPCError({ code: "FORBIDDEN", message: "The owner requires two-factor authentication for every operator: it cannot be turned off" });
  await checkSecondFactor(db, me, input.code, clientAddress, `session-${me.sessionId}`);
  await db.transaction(async (tx) => {
    await clearSecondFactor(tx, me.operatorId);
    await recordAudit(tx, me, {
      clusterId: null,
      action: "operator.2fa.disable",
      entityType: "operator",
      entityId: me.operatorId,
      summary: `${me.username} turned off two-factor authentication`,
    });
  });
  return written({ ok: true as const });
}

async function clearSecondFactor(tx: DbOrTx, operatorId: string) {
  await tx.update(operators).set({ totpSecret: null, totpPendingSecret: null, totpEnabledAt: null, totpLastStep: null }).where(eq(operators.id, operatorId));
  await tx.delete(operatorRecoveryCodes).where(eq(operatorRecoveryCodes.operatorId, operatorId));
}

/** The owner resets an operator's second factor (a lost phone): they log in with their password and enrol again. */
export async function resetTwoFactor(db: Db, owner: SessionOperator, input: { operatorId: string }): Promise<Written<{ ok: true }>> {
  await db.transaction(async (tx) => {
    const [op] = await tx.select().from(operators).where(eq(operators.id, input.operatorId)).for("update");
    if (!op) throw new TRPCError({ code: "NOT_FOUND", message: "No such operator" });
    if (!op.totpEnabledAt) throw new TRPCError({ code: "BAD_REQUEST", message: `${op.username} has no second factor to reset` });
    await clearSecondFactor(tx, op.id);
    // A reset follows a lost or stolen phone: the operator signs in again, and so must anyone else in their sessions.
    await revokeOperatorSessions(tx, op.id, op.id === owner.operatorId ? owner.sessionId : undefined);
    await recordAudit(tx, owner, {
      clusterId: null,
      action: "operator.2fa.reset",
      entityType: "operator",
      entityId: op.id,
      summary: `Reset the two-factor authentication of ${op.username}`,
    });
  });
  return written({ ok: true as const });
}

/** The owner requires a second factor of every operator, or stops requiring it. */
export async function setTwoFactorRequired(db: Db, owner: SessionOperator, input: { required: boolean }): Promise<Written<{ required: boolean }>> {
  await db.transaction(async (tx) => {
    if (input.required) {
      const [me] = await tx.select({ enabledAt: operators.totpEnabledAt }).from(operators).where(eq(operators.id, owner.operatorId));
      if (!me?.enabledAt) throw new TRPCError({ code: "BAD_REQUEST", message: "Turn on two-factor authentication for yourself first, then require it of everyone" });
    }
    if ((await twoFactorRequired(tx)) === input.required) return;
    await tx
      .insert(settings)
      .values({ key: REQUIRE_TWO_FACTOR_KEY, value: input.required })
      .onConflictDoUpdate({ target: settings.key, set: { value: input.required } });
    await recordAudit(tx, owner, {
      clusterId: null,
      action: "settings.2fa.required",
      entityType: "settings",
      entityId: REQUIRE_TWO_FACTOR_KEY,
      summary: input.required ? "Required two-factor authentication for every operator" : "Stopped requiring two-factor authentication",
      before: { required: !input.required },
      after: { required: input.required },
    });
  });
  return written({ required: input.required });
}

/**
 * The proof, between a login's two steps, that the password was right: `<operatorId>.<expiry
 * ms>.<mac>`, an HMAC with the session secret. It grants nothing but the right to send a
 * code for that operator until it expires; codes are throttled and each is used once.
 */
const challengeMac = (operatorId: string, expires: number) => createHmac("sha256", sessionSecret()).update(`2fa-login|${operatorId}|${expires}`).digest("base64url");

export function newLoginChallenge(operatorId: string, now = Date.now()): string {
  const expires = now + LOGIN_CHALLENGE_TTL_MS;
  return `${operatorId}.${expires}.${challengeMac(operatorId, expires)}`;
}

/** The operator a challenge names, or null when it is forged or expired. */
export function readLoginChallenge(challenge: string, now = Date.now()): string | null {
  const m = /^([0-9a-f-]{36})\.(\d{1,15})\.([A-Za-z0-9_-]{43})$/.exec(challenge);
  if (!m) return null;
  const [, operatorId, expiresText, mac] = m;
  const expires = Number(expiresText);
  if (!(expires > now)) return null;
  const want = Buffer.from(challengeMac(operatorId!, expires));
  const got = Buffer.from(mac!);
  return want.length === got.length && timingSafeEqual(want, got) ? operatorId! : null;
}
