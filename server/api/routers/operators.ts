import { TRPCError } from "@trpc/server";
import { and, asc, eq, ne } from "drizzle-orm";
import { z } from "zod";
import { operators, sessions } from "@/db/schema";
import { hashPassword } from "@/server/auth/password";
import { revokeOperatorSessions } from "@/server/auth/sessions";
import { assertStrongPassword } from "@/server/auth/strength";
import { clearUserFailures } from "@/server/auth/throttle";
import { recordAudit } from "@/server/audit";
import { uniqueViolation } from "@/server/db-errors";
import { idSchema, operatorRoleSchema, passwordSchema, usernameSchema } from "@/core/validation";
import { fieldError } from "./_errors";
import { createTRPCRouter, ownerProcedure } from "../trpc";

/** The owner manages the team: admins change things, viewers only look. */
export const operatorsRouter = createTRPCRouter({
  list: ownerProcedure.query(({ ctx }) =>
    ctx.db
      .select({ id: operators.id, username: operators.username, role: operators.role, createdAt: operators.createdAt })
      .from(operators)
      .orderBy(asc(operators.createdAt)),
  ),

  create: ownerProcedure
    .input(z.object({ username: usernameSchema, password: passwordSchema, role: z.enum(["admin", "viewer"]) }))
    .mutation(async ({ ctx, input }) => {
      assertStrongPassword(input.password, [input.username]);
      const passwordHash = await hashPassword(input.password);
      try {
        return await ctx.db.transaction(async (tx) => {
          const [op] = await tx.insert(operators).values({ username: input.username, passwordHash, role: input.role }).returning();
          await recordAudit(tx, ctx.operator, {
            clusterId: null,
            action: "operator.create",
            entityType: "operator",
            entityId: op!.id,
            summary: `Added ${input.role} ${input.username}`,
            after: { username: input.username, role: input.role },
          });
          return { id: op!.id, username: op!.username, role: op!.role };
        });
      } catch (err) {
        if (uniqueViolation(err)) throw new TRPCError({ code: "CONFLICT", message: `Username ${input.username} is taken` });
        throw err;
      }
    }),

  delete: ownerProcedure.input(z.object({ operatorId: idSchema })).mutation(async ({ ctx, input }) => {
    if (input.operatorId === ctx.operator.operatorId) {
      throw new TRPCError({ code: "BAD_REQUEST", message: "You cannot delete your own account" });
    }
    await ctx.db.transaction(async (tx) => {
      const [op] = await tx.select().from(operators).where(eq(operators.id, input.operatorId));
      if (!op) throw new TRPCError({ code: "NOT_FOUND", message: "No such operator" });
      if (op.role === "owner") throw new TRPCError({ code: "BAD_REQUEST", message: "The owner account cannot be deleted" });
      await tx.delete(sessions).where(eq(sessions.operatorId, op.id));
      await tx.delete(operators).where(eq(operators.id, op.id));
      await recordAudit(tx, ctx.operator, {
        clusterId: null,
        action: "operator.delete",
        entityType: "operator",
        entityId: op.id,
        summary: `Removed ${op.role} ${op.username}`,
        before: { username: op.username, role: op.role },
      });
    });
    return { ok: true };
  }),

  /** Promote or demote. The last owner cannot step down: somebody must manage the team. */
  setRole: ownerProcedure.input(z.object({ operatorId: idSchema, role: operatorRoleSchema })).mutation(async ({ ctx, input }) => {
    return ctx.db.transaction(async (tx) => {
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
          throw fieldError("BAD_REQUEST", "role", op.id === ctx.operator.operatorId ? "You are the only owner: make someone else owner first" : "The only owner cannot be demoted");
        }
      }
      await tx.update(operators).set({ role: input.role }).where(eq(operators.id, op.id));
      // Sessions carry no role (it is read per request), so the change applies at once.
      await recordAudit(tx, ctx.operator, {
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
  }),

  /** Sets a new password for someone who lost theirs; all their sessions end. */
  resetPassword: ownerProcedure.input(z.object({ operatorId: idSchema, password: passwordSchema })).mutation(async ({ ctx, input }) => {
    const [op] = await ctx.db.select().from(operators).where(eq(operators.id, input.operatorId));
    if (!op) throw new TRPCError({ code: "NOT_FOUND", message: "No such operator" });
    assertStrongPassword(input.password, [op.username]);
    const passwordHash = await hashPassword(input.password);
    await ctx.db.transaction(async (tx) => {
      await tx.update(operators).set({ passwordHash }).where(eq(operators.id, op.id));
      // An owner resetting their own password keeps the session they are using.
      await revokeOperatorSessions(tx, op.id, op.id === ctx.operator.operatorId ? ctx.operator.sessionId : undefined);
      await clearUserFailures(tx, op.username);
      // The password never goes into the audit log, not even hashed.
      await recordAudit(tx, ctx.operator, {
        clusterId: null,
        action: "operator.password.reset",
        entityType: "operator",
        entityId: op.id,
        summary: `Reset the password of ${op.username}; their sessions were ended`,
      });
    });
    return { ok: true };
  }),
});
