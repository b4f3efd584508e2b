import { TRPCError } from "@trpc/server";
import { eq } from "drizzle-orm";
import { z } from "zod";
import { operators } from "@/db/schema";
import { checkSecondFactor, newLoginChallenge, readLoginChallenge, twoFactorRequired } from "@/server/accounts/two-factor";
import { deviceCookie, deviceOf, newDeviceToken } from "@/server/auth/device";
import { clearSessionCookie, createSession, revokeSession, sessionCookie } from "@/server/auth/sessions";
import { authenticate, changeOwnPassword, needsSetup, setupOwner } from "@/server/accounts/operators";
import { publishAfterCommit } from "@/server/changes";
import { env } from "@/server/env";
import { passwordSchema, setupCodeSchema, usernameSchema } from "@/core/validation";
import { createTRPCRouter, protectedProcedure, publicProcedure, type Context } from "../trpc";

const credentials = z.object({ username: usernameSchema, password: passwordSchema });

async function startSession(ctx: Context, operatorId: string) {
  const { token, expiresAt } = await createSession(ctx.db, operatorId, ctx.userAgent);
  ctx.setCookie(sessionCookie(token, expiresAt, ctx.secureCookies));
}

export const authRouter = createTRPCRouter({
  /** What the login screen needs to know: is there an owner yet, and who am I. */
  status: publicProcedure.query(async ({ ctx }) => ({
    needsSetup: await needsSetup(ctx.db),
    operator: ctx.operator ? { username: ctx.operator.username, role: ctx.operator.role } : null,
    // Signed in without a second factor while the owner requires one: the dashboard shows only the enrolment.
    mustEnrolTwoFactor: !!ctx.operator && !ctx.apiToken && !ctx.operator.twoFactor && (await twoFactorRequired(ctx.db)),
    // Links the dashboard generates (subscriptions, agent command) use this when set,
    // never whatever Host the browser happened to use.
    publicUrl: ctx.operator ? (env().PUBLIC_URL?.replace(/\/$/, "") ?? null) : null,
  })),

  /** Creates the owner account; only on a database that has no operator yet, with the setup code. */
  setup: publicProcedure.input(credentials.extend({ setupCode: setupCodeSchema })).mutation(async ({ ctx, input }) => {
    const owner = await publishAfterCommit(setupOwner(ctx.db, input, ctx.clientAddress));
    await startSession(ctx, owner.id);
    ctx.setCookie(deviceCookie(newDeviceToken(owner.username), ctx.secureCookies));
    return { username: owner.username, role: owner.role };
  }),

  /**
   * The password step. An operator with a second factor gets no session yet: a challenge to
   * send with their code to loginCode (valid 5 minutes).
   */
  login: publicProcedure.input(credentials).mutation(async ({ ctx, input }) => {
    // A browser this operator logged in from before is throttled on its own (server/auth/device.ts).
    const device = deviceOf(ctx.deviceCookie, input.username);
    const op = await authenticate(ctx.db, input, ctx.clientAddress, device);
    if (op.twoFactor) return { username: op.username, role: op.role, challenge: newLoginChallenge(op.id) };
    await startSession(ctx, op.id);
    ctx.setCookie(deviceCookie(device ? ctx.deviceCookie! : newDeviceToken(op.username), ctx.secureCookies));
    return { username: op.username, role: op.role, challenge: null };
  }),

  /** The code step: a TOTP code (each once) or a recovery code; throttled like passwords. */
  loginCode: publicProcedure
    .input(z.object({ challenge: z.string().max(200, "Challenge is too long: enter your password again"), code: z.string().max(64, "Code must be at most 64 characters") }))
    .mutation(async ({ ctx, input }) => {
      const operatorId = readLoginChallenge(input.challenge);
      const again = () => new TRPCError({ code: "UNAUTHORIZED", message: "This login has expired: enter your password again" });
      if (!operatorId) throw again();
      const [op] = await ctx.db.select().from(operators).where(eq(operators.id, operatorId));
      if (!op) throw again();
      const device = deviceOf(ctx.deviceCookie, op.username);
      await checkSecondFactor(ctx.db, { operatorId: op.id, username: op.username }, input.code, ctx.clientAddress, device);
      await startSession(ctx, op.id);
      ctx.setCookie(deviceCookie(device ? ctx.deviceCookie! : newDeviceToken(op.username), ctx.secureCookies));
      return { username: op.username, role: op.role };
    }),

  /** An operator changes their own password; every other session of theirs ends. */
  changePassword: protectedProcedure
    .meta({ scope: "owner" })
    .input(z.object({ currentPassword: z.string().max(512, "Password must be at most 512 characters"), newPassword: passwordSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(changeOwnPassword(ctx.db, ctx.operator, input, ctx.clientAddress))),

  logout: protectedProcedure.meta({ scope: "owner", enrolment: true }).mutation(async ({ ctx }) => {
    await revokeSession(ctx.db, ctx.operator.sessionId);
    ctx.setCookie(clearSessionCookie());
    return { ok: true };
  }),

  me: protectedProcedure.meta({ enrolment: true }).query(({ ctx }) => ({ username: ctx.operator.username, role: ctx.operator.role })),
});
