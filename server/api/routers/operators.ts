import { z } from "zod";
import { createOperator, deleteOperator, listOperators, resetOperatorPassword, setOperatorRole } from "@/server/accounts/operators";
import { publishAfterCommit } from "@/server/changes";
import { resetTwoFactor, setTwoFactorRequired, twoFactorRequired } from "@/server/accounts/two-factor";
import { idSchema, operatorRoleSchema, passwordSchema, usernameSchema } from "@/core/validation";
import { createTRPCRouter, ownerProcedure } from "../trpc";

/** The owner manages the team: admins change things, viewers only look. */
export const operatorsRouter = createTRPCRouter({
  list: ownerProcedure.query(({ ctx }) => listOperators(ctx.db)),

  create: ownerProcedure
    .input(z.object({ username: usernameSchema, password: passwordSchema, role: z.enum(["admin", "viewer"]) }))
    .mutation(({ ctx, input }) => publishAfterCommit(createOperator(ctx.db, ctx.operator, input))),

  delete: ownerProcedure
    .input(z.object({ operatorId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(deleteOperator(ctx.db, ctx.operator, input))),

  /** Promote or demote. The last owner cannot step down: somebody must manage the team. */
  setRole: ownerProcedure
    .input(z.object({ operatorId: idSchema, role: operatorRoleSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(setOperatorRole(ctx.db, ctx.operator, input))),

  /** Sets a new password for someone who lost theirs; all their sessions end. */
  resetPassword: ownerProcedure
    .input(z.object({ operatorId: idSchema, password: passwordSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(resetOperatorPassword(ctx.db, ctx.operator, input))),

  /** Whether every operator must have a second factor. */
  twoFactorRequired: ownerProcedure.query(({ ctx }) => twoFactorRequired(ctx.db)),

  /** Requires a second factor of every operator (the owner must have one first), or stops requiring it. */
  setTwoFactorRequired: ownerProcedure
    .input(z.object({ required: z.boolean() }))
    .mutation(({ ctx, input }) => publishAfterCommit(setTwoFactorRequired(ctx.db, ctx.operator, input))),

  /** Removes an operator's second factor (a lost phone): they log in with their password and enrol again. */
  resetTwoFactor: ownerProcedure
    .input(z.object({ operatorId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(resetTwoFactor(ctx.db, ctx.operator, input))),
});
