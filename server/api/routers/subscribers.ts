/** Subscribers of a cluster: the users whose VPN apps fetch /sub/<token>. */
import { z } from "zod";
import { publishAfterCommit } from "@/server/changes";
import { bulkUpdateSubscribers, listSubscriberPage, ONLINE_INTERVALS } from "@/server/accounts/subscriber-list";
import { usagePeriods } from "@/server/usage/limits";
import { subscriberUsageByServer } from "@/server/usage/reported-usage";
import {
  createSubscriber,
  deleteSubscriber,
  EXPIRY_IN_PAST,
  listSubscribers,
  resetSubscriberUsage,
  rotateSubscriberToken,
  setSubscriberEnabled,
  updateSubscriber,
} from "@/server/accounts/subscribers";
import { expirySchema, holdDaysSchema, idSchema, nameSchema, refineSubscriberLimits, resetDaySchema, resetStrategySchema, subscriberBulkSchema, subscriberPageSchema, trafficLimitGbSchema } from "@/core/validation";
import { subscribersWriteProcedure, createTRPCRouter, listQueryProcedure, protectedProcedure } from "../trpc";

export { ONLINE_INTERVALS };

const subscriberFields = {
  name: nameSchema,
  expiresAt: expirySchema.default(null),
  trafficLimitGb: trafficLimitGbSchema.default(null),
  trafficResetStrategy: resetStrategySchema.default("never"),
  trafficResetDay: resetDaySchema.default(null),
  holdDays: holdDaysSchema.default(null),
};

export const subscribersRouter = createTRPCRouter({
  /** One page of subscribers, searched, filtered and sorted by the database (any size). */
  page: listQueryProcedure.input(subscriberPageSchema).query(({ ctx, input }) => listSubscriberPage(ctx.db, input, { showSecrets: ctx.operator.role !== "viewer" })),

  /** Enable, disable, extend, reset usage or delete the selected subscribers, or all a filter matches. */
  bulk: subscribersWriteProcedure
    .input(subscriberBulkSchema)
    .mutation(({ ctx, input }) => publishAfterCommit(bulkUpdateSubscribers(ctx.db, ctx.operator, input))),

  /** Subscribers, newest first; tokens only for those who may change things. */
  list: listQueryProcedure
    .input(z.object({ clusterId: idSchema, search: z.string().max(200).optional() }))
    .query(({ ctx, input }) => listSubscribers(ctx.db, input, ctx.operator.role !== "viewer")),

  create: subscribersWriteProcedure
    .input(
      z.object({ clusterId: idSchema, ...subscriberFields }).superRefine((v, ctx) => {
        if (v.expiresAt && v.expiresAt.getTime() <= Date.now()) ctx.addIssue({ code: "custom", path: ["expiresAt"], message: EXPIRY_IN_PAST });
        refineSubscriberLimits(v, ctx);
      }),
    )
    .mutation(({ ctx, input }) => publishAfterCommit(createSubscriber(ctx.db, ctx.operator, input))),

  update: subscribersWriteProcedure
    .input(z.object({ subscriberId: idSchema, ...subscriberFields }).superRefine(refineSubscriberLimits))
    .mutation(({ ctx, input }) => publishAfterCommit(updateSubscriber(ctx.db, ctx.operator, input))),

  setEnabled: subscribersWriteProcedure
    .input(z.object({ subscriberId: idSchema, enabled: z.boolean() }))
    .mutation(({ ctx, input }) => publishAfterCommit(setSubscriberEnabled(ctx.db, ctx.operator, input))),

  /** Usage back to 0 now (the finished period is kept): a limited subscriber may connect again. */
  resetUsage: subscribersWriteProcedure
    .input(z.object({ subscriberId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(resetSubscriberUsage(ctx.db, ctx.operator, input))),

  /** Usage of the subscriber's finished periods (one per reset), newest first. */
  usagePeriods: protectedProcedure.input(z.object({ subscriberId: idSchema })).query(({ ctx, input }) => usagePeriods(ctx.db, input.subscriberId)),

  /** The subscriber's usage as each server reported it (issue 21): all kept days, and this period's. */
  usageByServer: protectedProcedure.input(z.object({ subscriberId: idSchema })).query(({ ctx, input }) => subscriberUsageByServer(ctx.db, input.subscriberId)),

  /** A new subscription token: the old link stops working at once. */
  rotateToken: subscribersWriteProcedure
    .input(z.object({ subscriberId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(rotateSubscriberToken(ctx.db, ctx.operator, input))),

  delete: subscribersWriteProcedure
    .input(z.object({ subscriberId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(deleteSubscriber(ctx.db, ctx.operator, input))),
});
