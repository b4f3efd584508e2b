/** Subscribers of a cluster: the users whose VPN apps fetch /sub/<token>. */
import { z } from "zod";
import { publishAfterCommit } from "@/server/changes";
import { bulkUpdateSubscribers, getSubscriberRow, listSubscriberPage, ONLINE_INTERVALS } from "@/server/accounts/subscriber-list";
import { listDevices, removeDevice } from "@/server/accounts/devices";
import { usagePeriods } from "@/server/usage/limits";
import { subscriberUsageByServer, subscriberUsageHistory } from "@/server/usage/reported-usage";
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
import { deviceLimitSchema, expirySchema, holdDaysSchema, idSchema, nameSchema, refineSubscriberLimits, resetDaySchema, resetStrategySchema, subscriberBulkSchema, subscriberPageSchema, trafficLimitGbSchema, usageHistoryDaysSchema } from "@/core/validation";
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

  /**
   * A new subscriber on `planId` (absent: the cluster's default plan). Limit fields left out
   * take the plan's defaults; given ones (null = none) win.
   */
  create: subscribersWriteProcedure
    .input(
      z
        .object({
          clusterId: idSchema,
          name: nameSchema,
          planId: idSchema.optional(),
          expiresAt: expirySchema.optional(),
          trafficLimitGb: trafficLimitGbSchema.optional(),
          trafficResetStrategy: resetStrategySchema.optional(),
          trafficResetDay: resetDaySchema.optional(),
          holdDays: holdDaysSchema.default(null),
          deviceLimit: deviceLimitSchema.optional(),
        })
        .superRefine((v, ctx) => {
          if (v.expiresAt && v.expiresAt.getTime() <= Date.now()) ctx.addIssue({ code: "custom", path: ["expiresAt"], message: EXPIRY_IN_PAST });
          // The plan's defaults are checked with the plan (createSubscriber); what was given is checked here.
          if (v.trafficResetStrategy !== undefined || v.expiresAt !== undefined) {
            refineSubscriberLimits({ expiresAt: v.expiresAt ?? null, holdDays: v.holdDays, trafficResetStrategy: v.trafficResetStrategy ?? "never", trafficResetDay: v.trafficResetDay ?? null }, ctx);
          }
        }),
    )
    .mutation(({ ctx, input }) => publishAfterCommit(createSubscriber(ctx.db, ctx.operator, input))),

  update: subscribersWriteProcedure
    // Without deviceLimit (or planId) it stays as it is: scripts written before it keep working.
    // applyPlanLimits: the plan's traffic limit, reset and device limit replace the fields'.
    .input(
      z
        .object({
          subscriberId: idSchema,
          ...subscriberFields,
          deviceLimit: deviceLimitSchema.optional(),
          planId: idSchema.optional(),
          applyPlanLimits: z.boolean({ error: "Apply the plan's limits must be true or false" }).default(false),
        })
        .superRefine(refineSubscriberLimits),
    )
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

  /** One subscriber as the list shows it: the subscriber's own page. */
  get: protectedProcedure
    .input(z.object({ subscriberId: idSchema }))
    .query(({ ctx, input }) => getSubscriberRow(ctx.db, input.subscriberId, { showSecrets: ctx.operator.role !== "viewer" })),

  /** Bytes per UTC day and per server over the last 7, 30 or 90 days (the page's Usage tab). */
  usageHistory: protectedProcedure
    .input(z.object({ subscriberId: idSchema, days: usageHistoryDaysSchema }))
    .query(({ ctx, input }) => subscriberUsageHistory(ctx.db, input)),

  /** The devices that fetched the subscription with a device id, first seen first, and the limit. */
  devices: protectedProcedure.input(z.object({ subscriberId: idSchema })).query(({ ctx, input }) => listDevices(ctx.db, input.subscriberId)),

  /** Forgets one device of this subscriber: its place under the limit is free again. */
  removeDevice: subscribersWriteProcedure
    .input(z.object({ subscriberId: idSchema, deviceId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(removeDevice(ctx.db, ctx.operator, input))),

  /** A new subscription token: the old link stops working at once. */
  rotateToken: subscribersWriteProcedure
    .input(z.object({ subscriberId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(rotateSubscriberToken(ctx.db, ctx.operator, input))),

  delete: subscribersWriteProcedure
    .input(z.object({ subscriberId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(deleteSubscriber(ctx.db, ctx.operator, input))),
});
