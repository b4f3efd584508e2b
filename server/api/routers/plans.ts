/** Plans of a cluster (issue 27 point 2): which routes a subscriber gets, and a new subscriber's defaults. */
import { z } from "zod";
import { publishAfterCommit } from "@/server/changes";
import { createPlan, deletePlan, listPlans, setDefaultPlan, updatePlan } from "@/server/accounts/plans";
import { idSchema, planFieldsSchema } from "@/core/validation";
import { createTRPCRouter, protectedProcedure, topologyWriteProcedure } from "../trpc";

export const plansRouter = createTRPCRouter({
  /** The cluster's plans by name, with their routes, the default marked and subscribers counted. */
  list: protectedProcedure.input(z.object({ clusterId: idSchema })).query(({ ctx, input }) => listPlans(ctx.db, input.clusterId)),

  /** What a plan gives decides which servers accept whom: a topology write (API tokens: topology:write). */
  create: topologyWriteProcedure
    .input(z.object({ clusterId: idSchema }).and(planFieldsSchema))
    .mutation(({ ctx, input }) => publishAfterCommit(createPlan(ctx.db, ctx.operator, input))),

  update: topologyWriteProcedure
    .input(z.object({ planId: idSchema }).and(planFieldsSchema))
    .mutation(({ ctx, input }) => publishAfterCommit(updatePlan(ctx.db, ctx.operator, input))),

  /** Refused for the default plan, and while subscribers use it unless moveToPlanId (same cluster) takes them. */
  delete: topologyWriteProcedure
    .input(z.object({ planId: idSchema, moveToPlanId: idSchema.optional() }))
    .mutation(({ ctx, input }) => publishAfterCommit(deletePlan(ctx.db, ctx.operator, input))),

  /** The plan new subscribers get when they name none; existing subscribers keep theirs. */
  setDefault: topologyWriteProcedure
    .input(z.object({ clusterId: idSchema, planId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(setDefaultPlan(ctx.db, ctx.operator, input))),
});
