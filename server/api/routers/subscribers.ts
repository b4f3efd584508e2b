/** Subscribers of a cluster: the users whose VPN apps fetch /sub/<token>. */
import { z } from "zod";
import { publishAfterCommit } from "@/server/domain/changes";
import {
  createSubscriber,
  deleteSubscriber,
  listSubscribers,
  rotateSubscriberToken,
  setSubscriberEnabled,
  updateSubscriber,
} from "@/server/domain/subscribers";
import { expirySchema, idSchema, nameSchema, trafficLimitGbSchema } from "@/server/validation";
import { adminProcedure, createTRPCRouter, protectedProcedure } from "../trpc";

const subscriberFields = {
  name: nameSchema,
  expiresAt: expirySchema.default(null),
  trafficLimitGb: trafficLimitGbSchema.default(null),
};

export const subscribersRouter = createTRPCRouter({
  /** Subscribers, newest first; tokens only for those who may change things. */
  list: protectedProcedure
    .input(z.object({ clusterId: idSchema, search: z.string().max(200).optional() }))
    .query(({ ctx, input }) => listSubscribers(ctx.db, input, ctx.operator.role !== "viewer")),

  create: adminProcedure
    .input(z.object({ clusterId: idSchema, ...subscriberFields }))
    .mutation(({ ctx, input }) => publishAfterCommit(createSubscriber(ctx.db, ctx.operator, input))),

  update: adminProcedure
    .input(z.object({ subscriberId: idSchema, ...subscriberFields }))
    .mutation(({ ctx, input }) => publishAfterCommit(updateSubscriber(ctx.db, ctx.operator, input))),

  setEnabled: adminProcedure
    .input(z.object({ subscriberId: idSchema, enabled: z.boolean() }))
    .mutation(({ ctx, input }) => publishAfterCommit(setSubscriberEnabled(ctx.db, ctx.operator, input))),

  /** A new subscription token: the old link stops working at once. */
  rotateToken: adminProcedure
    .input(z.object({ subscriberId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(rotateSubscriberToken(ctx.db, ctx.operator, input))),

  delete: adminProcedure
    .input(z.object({ subscriberId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(deleteSubscriber(ctx.db, ctx.operator, input))),
});
