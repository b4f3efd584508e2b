import { TRPCError } from "@trpc/server";
import { count, eq, sql } from "drizzle-orm";
import { z } from "zod";
import { operators } from "@/db/schema";
import { hashPassword, verifyPassword, burnPasswordCheck } from "@/server/auth/password";
import { clearSessionCookie, createSession, revokeSession, sessionCookie } from "@/server/auth/sessions";
import { clearFailures, recordFailure, retryAfterSeconds } from "@/server/auth/throttle";
import { recordAudit } from "@/server/audit";
import { passwordSchema, usernameSchema } from "@/server/validation";
import { createTRPCRouter, protectedProcedure, publicProcedure, type Context } from "../trpc";

const credentials = z.object({ username: usernameSchema, password: passwordSchema });

async function startSession(ctx: Context, operatorId: string) {
  const { token, expiresAt } = await createSession(ctx.db, operatorId, ctx.userAgent);
  ctx.setCookie(sessionCookie(token, expiresAt, ctx.secureCookies));
}

export const authRouter = createTRPCRouter({
  /** What the login screen needs to know: is there an owner yet, and who am I. */
  status: publicProcedure.query(async ({ ctx }) => {
    const [row] = await ctx.db.select({ n: count() }).from(operators);
    return {
      needsSetup: (row?.n ?? 0) === 0,
      operator: ctx.operator ? { username: ctx.operator.username, role: ctx.operator.role } : null,
    };
  }),

  /** Creates the owner account; only on a database that has no operator yet. */
  setup: publicProcedure.input(credentials).mutation(async ({ ctx, input }) => {
    const passwordHash = await hashPassword(input.password);
    const created = await ctx.db.transaction(async (tx) => {
      // Serialise concurrent setups: only the first one may create the owner.
      await tx.execute(sql`lock table ${operators} in exclusive mode`);
      const [row] = await tx.select({ n: count() }).from(operators);
      if ((row?.n ?? 0) > 0) return null;
      const [op] = await tx.insert(operators).values({ username: input.username, passwordHash, role: "owner" }).returning();
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
    await startSession(ctx, created.id);
    return { username: created.username, role: created.role };
  }),

  login: publicProcedure.input(credentials).mutation(async ({ ctx, input }) => {
    const keys = [
      { kind: "user" as const, value: input.username.toLowerCase() },
      { kind: "ip" as const, value: ctx.clientAddress },
    ];
    const wait = await retryAfterSeconds(ctx.db, keys);
    if (wait > 0) {
      throw new TRPCError({ code: "TOO_MANY_REQUESTS", message: `Too many failed logins: try again in ${wait} s`, cause: { retryAfter: wait } });
    }
    const [op] = await ctx.db
      .select()
      .from(operators)
      .where(eq(sql`lower(${operators.username})`, input.username.toLowerCase()))
      .limit(1);
    const ok = op ? await verifyPassword(op.passwordHash, input.password) : (await burnPasswordCheck(input.password), false);
    if (!op || !ok) {
      await recordFailure(ctx.db, keys);
      throw new TRPCError({ code: "UNAUTHORIZED", message: "Wrong username or password" });
    }
    await clearFailures(ctx.db, keys.slice(0, 1));
    await startSession(ctx, op.id);
    return { username: op.username, role: op.role };
  }),

  logout: protectedProcedure.mutation(async ({ ctx }) => {
    await revokeSession(ctx.db, ctx.operator.sessionId);
    ctx.setCookie(clearSessionCookie());
    return { ok: true };
  }),

  me: protectedProcedure.query(({ ctx }) => ({ username: ctx.operator.username, role: ctx.operator.role })),
});
