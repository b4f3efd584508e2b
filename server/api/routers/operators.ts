import { TRPCError } from "@trpc/server";
import { asc, eq } from "drizzle-orm";
import { z } from "zod";
import { operators, sessions } from "@/db/schema";
import { hashPassword } from "@/server/auth/password";
import { recordAudit } from "@/server/audit";
import { uniqueViolation } from "@/server/db-errors";
import { idSchema, passwordSchema, usernameSchema } from "@/server/validation";
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
});
