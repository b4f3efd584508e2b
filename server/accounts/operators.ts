/**
 * Operator accounts: first-run setup, logging in, passwords and the owner's team management.
 * Sessions and their cookies stay with the caller (server/auth/sessions.ts); these functions
 * check the rules, write the accounts and their audit entries.
 */
import { TRPCError } from "@trpc/server";
import { and, asc, count, eq, ne, sql } from "drizzle-orm";
import type { Db } from "@/db/client";
import { operators, sessions } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { burnPasswordCheck, hashPassword, verifyPassword } from "@/server/auth/password";
import { revokeOperatorSessions, type SessionOperator } from "@/server/auth/sessions";
import { checkSetupCode, consumeSetupCode, removeSetupCodeFile, SETUP_CODE_FILE } from "@/server/auth/setup-code";
import { assertStrongPassword } from "@/server/auth/strength";
import { clearUserFailures, reserveAttempt, type Attempt } from "@/server/auth/throttle";
import { fieldError, uniqueViolation } from "@/server/db-errors";
import { written, type Written } from "@/server/changes";
import { env } from "@/server/env";

type OperatorRole = SessionOperator["role"];

/** Takes a throttle slot before any secret is checked (see server/auth/throttle.ts). */
async function reserve(db: Db, attempt: Attempt, what: string) {
  const r = await reserveAttempt(db, attempt);
  if (!r.ok) {
    throw new TRPCError({ code: "TOO_MANY_REQUESTS", message: `Too many failed ${what}: try again in ${r.retryAfter} s`, cause: { retryAfter: r.retryAfter } });
  }
  return r;
}

/** No operator yet: the first visitor with the setup code creates the owner. */
export async function needsSetup(db: Db): Promise<boolean> {
  const [row] = await db.select({ n: count() }).from(operators);
  return (row?.n ?? 0) === 0;
}

/** Creates the owner account; only on a database that has no operator yet, with the setup code. */
export async function setupOwner(
  db: Db,
  input: { username: string; password: string; setupCode: string },
  clientAddress: string,
): Promise<Written<{ id: string; username: string; role: OperatorRole }>> {
  const slot = await reserve(db, { kind: "setup", address: clientAddress }, "setup attempts");
  if (!(await needsSetup(db))) throw new TRPCError({ code: "CONFLICT", message: "Setup is already done: log in instead" });
  if (!(await checkSetupCode(db, input.setupCode))) {
    throw fieldError("FORBIDDEN", "setupCode", `Wrong setup code: it is printed in the server's output at start and kept in ${SETUP_CODE_FILE} in the data folder`);
  }
  await slot.release();
  assertStrongPassword(input.password, [input.username]);
  const passwordHash = await hashPassword(input.password);
  const created = await db.transaction(async (tx) => {
    // Serialise concurrent setups: only the first one may create the owner.
    await tx.execute(sql`lock table ${operators} in exclusive mode`);
    const [row] = await tx.select({ n: count() }).from(operators);
    if ((row?.n ?? 0) > 0) return null;
    const [op] = await tx.insert(operators).values({ username: input.username, passwordHash, role: "owner" }).returning();
    await consumeSetupCode(tx);
    await recordAudit(tx, { operatorId: op!.id, username: op!.username }, {
      clusterId: null,
      action: "operator.setup",
      entityType: "operator",
      entityId: op!.id,
      summary: `Created owner account ${op!.username}`,
    });
    return op!;
  });
  if (!created) throw new TRPCError({ code: "CONFLICT", message: "Setup is already done: log in instead" });
  removeSetupCodeFile(env().DATA_DIR);
  return written({ id: created.id, username: created.username, role: created.role });
}

/**
 * The operator these credentials belong to; a wrong pair keeps its throttle slot as the
 * recorded failure. `device`: the id of the client's device cookie for this username
 * (server/auth/device.ts), which makes the attempt count on that device alone.
 */
export async function authenticate(db: Db, input: { username: string; password: string }, clientAddress: string, device: string | null = null) {
  const slot = await reserve(db, { kind: "login", username: input.username, address: clientAddress, device }, "logins");
  const [op] = await db
    .select()
    .from(operators)
    .where(eq(sql`lower(${operators.username})`, input.username.toLowerCase()))
    .limit(1);
  const ok = op ? await verifyPassword(op.passwordHash, input.password) : (await burnPasswordCheck(input.password), false);
  if (!op || !ok) throw new TRPCError({ code: "UNAUTHORIZED", message: "Wrong username or password" });
  await slot.release();
  return { id: op.id, username: op.username, role: op.role, twoFactor: op.totpEnabledAt !== null };
}

/** An operator changes their own password; every other session of theirs ends. */
export async function changeOwnPassword(
  db: Db,
  me: SessionOperator,
  input: { currentPassword: string; newPassword: string },
  clientAddress: string,
): Promise<Written<{ ok: true }>> {
  // Counted per sign-in (its session id): nobody else's guesses hold back a signed-in operator's own check.
  const slot = await reserve(db, { kind: "login", username: me.username, address: clientAddress, device: `session-${me.sessionId}` }, "password checks");
  const [op] = await db.select().from(operators).where(eq(operators.id, me.operatorId));
  if (!op || !(await verifyPassword(op.passwordHash, input.currentPassword))) {
    throw fieldError("BAD_REQUEST", "currentPassword", "Current password is wrong");
  }
  await slot.release();
  if (input.newPassword === input.currentPassword) throw fieldError("BAD_REQUEST", "newPassword", "The new password is the same as the current one");
  assertStrongPassword(input.newPassword, [op.username], "newPassword");
  const passwordHash = await hashPassword(input.newPassword);
  await db.transaction(async (tx) => {
    await tx.update(operators).set({ passwordHash }).where(eq(operators.id, op.id));
    await revokeOperatorSessions(tx, op.id, me.sessionId);
    // Never the password, not even hashed: only that it changed.
    await recordAudit(tx, me, {
      clusterId: null,
      action: "operator.password.change",
      entityType: "operator",
      entityId: op.id,
      summary: `${op.username} changed their password; their other sessions were ended`,
    });
  });
  return written({ ok: true as const });
}

export function listOperators(db: Db) {
  return db
    .select({ id: operators.id, username: operators.username, role: operators.role, createdAt: operators.createdAt, twoFactor: sql<boolean>`${operators.totpEnabledAt} is not null` })
    .from(operators)
    .orderBy(asc(operators.createdAt));
}

export async function createOperator(
  db: Db,
  owner: SessionOperator,
  input: { username: string; password: string; role: "admin" | "viewer" },
): Promise<Written<{ id: string; username: string; role: OperatorRole }>> {
  assertStrongPassword(input.password, [input.username]);
  const passwordHash = await hashPassword(input.password);
  try {
    const created = await db.transaction(async (tx) => {
      const [op] = await tx.insert(operators).values({ username: input.username, passwordHash, role: input.role }).returning();
      await recordAudit(tx, owner, {
        clusterId: null,
        action: "operator.create",
        entityType: "operator",
        entityId: op!.id,
        summary: `Added ${input.role} ${input.username}`,
        after: { username: input.username, role: input.role },
      });
      return { id: op!.id, username: op!.username, role: op!.role };
    });
    return written(created);
  } catch (err) {
    if (uniqueViolation(err)) throw new TRPCError({ code: "CONFLICT", message: `Username ${input.username} is taken` });
    throw err;
  }
}

export async function deleteOperator(db: Db, owner: SessionOperator, input: { operatorId: string }): Promise<Written<{ ok: true }>> {
  if (input.operatorId === owner.operatorId) {
    throw new TRPCError({ code: "BAD_REQUEST", message: "You cannot delete your own account" });
  }
  await db.transaction(async (tx) => {
    const [op] = await tx.select().from(operators).where(eq(operators.id, input.operatorId));
    if (!op) throw new TRPCError({ code: "NOT_FOUND", message: "No such operator" });
    if (op.role === "owner") throw new TRPCError({ code: "BAD_REQUEST", message: "The owner account cannot be deleted" });
    await tx.delete(sessions).where(eq(sessions.operatorId, op.id));
    await tx.delete(operators).where(eq(operators.id, op.id));
    await recordAudit(tx, owner, {
      clusterId: null,
      action: "operator.delete",
      entityType: "operator",
      entityId: op.id,
      summary: `Removed ${op.role} ${op.username}`,
      before: { username: op.username, role: op.role },
    });
  });
  return written({ ok: true as const });
}

/** Promote or demote. The last owner cannot step down: somebody must manage the team. */
export async function setOperatorRole(
  db: Db,
  owner: SessionOperator,
  input: { operatorId: string; role: OperatorRole },
): Promise<Written<{ id: string; username: string; role: OperatorRole }>> {
  const result = await db.transaction(async (tx) => {
    const [op] = await tx.select().from(operators).where(eq(operators.id, input.operatorId)).for("update");
    if (!op) throw new TRPCError({ code: "NOT_FOUND", message: "No such operator" });
    if (op.role === input.role) return { id: op.id, username: op.username, role: op.role };
    if (op.role === "owner") {
      // Locks the other owners too, so two owners cannot demote each other at once.
      const others = await tx
        .select({ id: operators.id })
        .from(operators)
        .where(and(eq(operators.role, "owner"), ne(operators.id, op.id)))
        .for("update");
      if (others.length === 0) {
        throw fieldError("BAD_REQUEST", "role", op.id === owner.operatorId ? "You are the only owner: make someone else owner first" : "The only owner cannot be demoted");
      }
    }
    await tx.update(operators).set({ role: input.role }).where(eq(operators.id, op.id));
    // Sessions carry no role (it is read per request), so the change applies at once.
    await recordAudit(tx, owner, {
      clusterId: null,
      action: "operator.role",
      entityType: "operator",
      entityId: op.id,
      summary: `Changed ${op.username} from ${op.role} to ${input.role}`,
      before: { username: op.username, role: op.role },
      after: { username: op.username, role: input.role },
    });
    return { id: op.id, username: op.username, role: input.role };
  });
  return written(result);
}

/** Sets a new password for someone who lost theirs; all their sessions end. */
export async function resetOperatorPassword(db: Db, owner: SessionOperator, input: { operatorId: string; password: string }): Promise<Written<{ ok: true }>> {
  const [op] = await db.select().from(operators).where(eq(operators.id, input.operatorId));
  if (!op) throw new TRPCError({ code: "NOT_FOUND", message: "No such operator" });
  assertStrongPassword(input.password, [op.username]);
  const passwordHash = await hashPassword(input.password);
  await db.transaction(async (tx) => {
    await tx.update(operators).set({ passwordHash }).where(eq(operators.id, op.id));
    // An owner resetting their own password keeps the session they are using.
    await revokeOperatorSessions(tx, op.id, op.id === owner.operatorId ? owner.sessionId : undefined);
    await clearUserFailures(tx, op.username);
    // The password never goes into the audit log, not even hashed.
    await recordAudit(tx, owner, {
      clusterId: null,
      action: "operator.password.reset",
      entityType: "operator",
      entityId: op.id,
      summary: `Reset the password of ${op.username}; their sessions were ended`,
    });
  });
  return written({ ok: true as const });
}
