import { z } from "zod";
import { createOperator, deleteOperator, listOperators, resetOperatorPassword, setOperatorRole } from "@/server/accounts/operators";
import { publishAfterCommit } from "@/server/changes";
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
});
