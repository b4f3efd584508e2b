import { TRPCError } from "@trpc/server";
import { count, eq, sql } from "drizzle-orm";
import { z } from "zod";
import { operators } from "@/db/schema";
import { hashPassword, verifyPassword, burnPasswordCheck } from "@/server/auth/password";
import { clearSessionCookie, createSession, revokeOperatorSessions, revokeSession, sessionCookie } from "@/server/auth/sessions";
import { checkSetupCode, consumeSetupCode, removeSetupCodeFile, SETUP_CODE_FILE } from "@/server/auth/setup-code";
import { assertStrongPassword } from "@/server/auth/strength";
import { reserveAttempt, type Attempt } from "@/server/auth/throttle";
import { recordAudit } from "@/server/audit";
import { env } from "@/server/env";
import { passwordSchema, setupCodeSchema, usernameSchema } from "@/core/validation";
import { fieldError } from "./_errors";
import { createTRPCRouter, protectedProcedure, publicProcedure, type Context } from "../trpc";

const credentials = z.object({ username: usernameSchema, password: passwordSchema });

async function startSession(ctx: Context, operatorId: string) {
  const { token, expiresAt } = await createSession(ctx.db, operatorId, ctx.userAgent);
  ctx.setCookie(sessionCookie(token, expiresAt, ctx.secureCookies));
}

/** Takes a throttle slot before any secret is checked (see server/auth/throttle.ts). */
async function reserve(ctx: Context, attempt: Attempt, what: string) {
  const r = await reserveAttempt(ctx.db, attempt);
  if (!r.ok) {
    throw new TRPCError({ code: "TOO_MANY_REQUESTS", message: `Too many failed ${what}: try again in ${r.retryAfter} s`, cause: { retryAfter: r.retryAfter } });
  }
  return r;
}

export const authRouter = createTRPCRouter({
  /** What the login screen needs to know: is there an owner yet, and who am I. */
  status: publicProcedure.query(async ({ ctx }) => {
    const [row] = await ctx.db.select({ n: count() }).from(operators);
    return {
      needsSetup: (row?.n ?? 0) === 0,
      operator: ctx.operator ? { username: ctx.operator.username, role: ctx.operator.role } : null,
      // Links the dashboard generates (subscriptions, agent command) use this when set,
      // never whatever Host the browser happened to use.
      publicUrl: ctx.operator ? (env().PUBLIC_URL?.replace(/\/$/, "") ?? null) : null,
    };
  }),

  /** Creates the owner account; only on a database that has no operator yet, with the setup code. */
  setup: publicProcedure.input(credentials.extend({ setupCode: setupCodeSchema })).mutation(async ({ ctx, input }) => {
    const slot = await reserve(ctx, { kind: "setup", address: ctx.clientAddress }, "setup attempts");
    const [existing] = await ctx.db.select({ n: count() }).from(operators);
    if ((existing?.n ?? 0) > 0) throw new TRPCError({ code: "CONFLICT", message: "Setup is already done: log in instead" });
    if (!(await checkSetupCode(ctx.db, input.setupCode))) {
      throw fieldError("FORBIDDEN", "setupCode", `Wrong setup code: it is printed in the server's output at start and kept in ${SETUP_CODE_FILE} in the data folder`);
    }
    await slot.release();
    assertStrongPassword(input.password, [input.username]);
    const passwordHash = await hashPassword(input.password);
    const created = await ctx.db.transaction(async (tx) => {
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
    await startSession(ctx, created.id);
    return { username: created.username, role: created.role };
  }),

  login: publicProcedure.input(credentials).mutation(async ({ ctx, input }) => {
    const slot = await reserve(ctx, { kind: "login", username: input.username, address: ctx.clientAddress }, "logins");
    const [op] = await ctx.db
      .select()
      .from(operators)
      .where(eq(sql`lower(${operators.username})`, input.username.toLowerCase()))
      .limit(1);
    const ok = op ? await verifyPassword(op.passwordHash, input.password) : (await burnPasswordCheck(input.password), false);
    // A failure keeps the slot it reserved: that is the recorded failure.
    if (!op || !ok) throw new TRPCError({ code: "UNAUTHORIZED", message: "Wrong username or password" });
    await slot.release();
    await startSession(ctx, op.id);
    return { username: op.username, role: op.role };
  }),

  /** An operator changes their own password; every other session of theirs ends. */
  changePassword: protectedProcedure
    .meta({ scope: "owner" })
    .input(z.object({ currentPassword: z.string().max(512, "Password must be at most 512 characters"), newPassword: passwordSchema }))
    .mutation(async ({ ctx, input }) => {
      const slot = await reserve(ctx, { kind: "login", username: ctx.operator.username, address: ctx.clientAddress }, "password checks");
      const [op] = await ctx.db.select().from(operators).where(eq(operators.id, ctx.operator.operatorId));
      if (!op || !(await verifyPassword(op.passwordHash, input.currentPassword))) {
        throw fieldError("BAD_REQUEST", "currentPassword", "Current password is wrong");
      }
      await slot.release();
      if (input.newPassword === input.currentPassword) throw fieldError("BAD_REQUEST", "newPassword", "The new password is the same as the current one");
      assertStrongPassword(input.newPassword, [op.username], "newPassword");
      const passwordHash = await hashPassword(input.newPassword);
      await ctx.db.transaction(async (tx) => {
        await tx.update(operators).set({ passwordHash }).where(eq(operators.id, op.id));
        await revokeOperatorSessions(tx, op.id, ctx.operator.sessionId);
        // Never the password, not even hashed: only that it changed.
        await recordAudit(tx, ctx.operator, {
          clusterId: null,
          action: "operator.password.change",
          entityType: "operator",
          entityId: op.id,
          summary: `${op.username} changed their password; their other sessions were ended`,
        });
      });
      return { ok: true };
    }),

  logout: protectedProcedure.meta({ scope: "owner" }).mutation(async ({ ctx }) => {
    await revokeSession(ctx.db, ctx.operator.sessionId);
    ctx.setCookie(clearSessionCookie());
    return { ok: true };
  }),

  me: protectedProcedure.query(({ ctx }) => ({ username: ctx.operator.username, role: ctx.operator.role })),
});
