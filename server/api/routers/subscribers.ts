/** Subscribers of a cluster: the users whose VPN apps fetch /sub/<token>. */
import { TRPCError } from "@trpc/server";
import { and, desc, eq, ilike } from "drizzle-orm";
import { z } from "zod";
import { clusters, subscribers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { publishChange } from "@/server/bus";
import { foreignKeyViolation } from "@/server/db-errors";
import { newSubscriptionToken } from "@/server/domain/tokens";
import { expiryMovedIntoPast, limitColumns, resetUsage, usagePeriods } from "@/server/domain/subscriber-limits";
import { expirySchema, GIB, holdDaysSchema, idSchema, nameSchema, refineSubscriberLimits, resetDaySchema, resetStrategySchema, trafficLimitGbSchema } from "@/core/validation";
import { fieldError } from "./_errors";
import type { DbOrTx } from "@/db/client";
import { createTRPCRouter, protectedProcedure, subscribersWriteProcedure } from "../trpc";

/** "Online now" = traffic reported within this many report intervals. */
export const ONLINE_INTERVALS = 2;

const subscriberFields = {
  name: nameSchema,
  expiresAt: expirySchema.default(null),
  trafficLimitGb: trafficLimitGbSchema.default(null),
  trafficResetStrategy: resetStrategySchema.default("never"),
  trafficResetDay: resetDaySchema.default(null),
  holdDays: holdDaysSchema.default(null),
};

const EXPIRY_IN_PAST = "Expiry must be in the future";

type Row = typeof subscribers.$inferSelect;

function auditView(s: Row) {
  return {
    name: s.name,
    expiresAt: s.expiresAt?.toISOString() ?? null,
    trafficLimitBytes: s.trafficLimitBytes,
    trafficResetStrategy: s.trafficResetStrategy,
    trafficResetDay: s.trafficResetDay,
    holdDays: s.holdDays,
    enabled: s.enabled,
  };
}

async function lockSubscriber(tx: DbOrTx, id: string): Promise<Row> {
  const [row] = await tx.select().from(subscribers).where(eq(subscribers.id, id)).for("update");
  if (!row) throw new TRPCError({ code: "NOT_FOUND", message: "This subscriber no longer exists" });
  return row;
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

export const subscribersRouter = createTRPCRouter({
  /** Subscribers, newest first; tokens only for those who may change things. */
  list: protectedProcedure
    .input(z.object({ clusterId: idSchema, search: z.string().max(200).optional() }))
    .query(async ({ ctx, input }) => {
      const q = input.search?.trim();
      const rows = await ctx.db
        .select()
        .from(subscribers)
        .where(and(eq(subscribers.clusterId, input.clusterId), q ? ilike(subscribers.name, `%${escapeLike(q)}%`) : undefined))
        .orderBy(desc(subscribers.createdAt), desc(subscribers.id))
        .limit(1000);
      const showTokens = ctx.operator.role !== "viewer";
      const now = Date.now();
      const [cluster] = await ctx.db.select({ reportIntervalS: clusters.reportIntervalS }).from(clusters).where(eq(clusters.id, input.clusterId));
      // Online now: traffic in one of the last two report intervals (agents report deltas).
      const onlineWindowMs = ONLINE_INTERVALS * (cluster?.reportIntervalS ?? 60) * 1000;
      return rows.map((s) => ({
        id: s.id,
        name: s.name,
        token: showTokens ? s.token : null,
        enabled: s.enabled,
        expiresAt: s.expiresAt,
        expired: s.expiresAt !== null && s.expiresAt.getTime() <= now,
        limited: s.trafficLimitBytes !== null && s.trafficUsedBytes >= s.trafficLimitBytes,
        trafficLimitBytes: s.trafficLimitBytes,
        trafficResetStrategy: s.trafficResetStrategy,
        trafficResetDay: s.trafficResetDay,
        nextResetAt: s.nextResetAt,
        usagePeriodStart: s.usagePeriodStart,
        holdDays: s.holdDays,
        trafficUsedBytes: s.trafficUsedBytes,
        trafficUpBytes: s.trafficUpBytes,
        trafficDownBytes: s.trafficDownBytes,
        lastSeenAt: s.lastSeenAt,
        online: s.lastSeenAt !== null && now - s.lastSeenAt.getTime() <= onlineWindowMs,
        createdAt: s.createdAt,
      }));
    }),

  create: subscribersWriteProcedure
    .input(
      z.object({ clusterId: idSchema, ...subscriberFields }).superRefine((v, ctx) => {
        if (v.expiresAt && v.expiresAt.getTime() <= Date.now()) ctx.addIssue({ code: "custom", path: ["expiresAt"], message: EXPIRY_IN_PAST });
        refineSubscriberLimits(v, ctx);
      }),
    )
    .mutation(async ({ ctx, input }) => {
    try {
      const row = await ctx.db.transaction(async (tx) => {
        const [s] = await tx
          .insert(subscribers)
          .values({
            clusterId: input.clusterId,
            name: input.name,
            token: newSubscriptionToken(),
            expiresAt: input.expiresAt,
            trafficLimitBytes: input.trafficLimitGb === null ? null : Math.round(input.trafficLimitGb * GIB),
            ...limitColumns(input, Date.now()),
          })
          .returning();
        await recordAudit(tx, ctx.operator, {
          clusterId: input.clusterId,
          action: "subscriber.create",
          entityType: "subscriber",
          entityId: s!.id,
          summary: `Added subscriber ${s!.name}`,
          after: auditView(s!),
        });
        return s!;
      });
      publishChange("subscribers", input.clusterId);
      return { id: row.id, name: row.name, token: row.token };
    } catch (err) {
      if (foreignKeyViolation(err)) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
      throw err;
    }
  }),

  update: subscribersWriteProcedure.input(z.object({ subscriberId: idSchema, ...subscriberFields }).superRefine(refineSubscriberLimits)).mutation(async ({ ctx, input }) => {
    const clusterId = await ctx.db.transaction(async (tx) => {
      const before = await lockSubscriber(tx, input.subscriberId);
      if (expiryMovedIntoPast(before.expiresAt, input.expiresAt, Date.now())) throw fieldError("BAD_REQUEST", "expiresAt", EXPIRY_IN_PAST);
      const [after] = await tx
        .update(subscribers)
        .set({
          name: input.name,
          expiresAt: input.expiresAt,
          trafficLimitBytes: input.trafficLimitGb === null ? null : Math.round(input.trafficLimitGb * GIB),
          ...limitColumns(input, Date.now(), before),
          updatedAt: new Date(),
        })
        .where(eq(subscribers.id, before.id))
        .returning();
      await recordAudit(tx, ctx.operator, {
        clusterId: before.clusterId,
        action: "subscriber.update",
        entityType: "subscriber",
        entityId: before.id,
        summary: `Edited subscriber ${after!.name}`,
        before: auditView(before),
        after: auditView(after!),
      });
      return before.clusterId;
    });
    publishChange("subscribers", clusterId);
    return { ok: true };
  }),

  setEnabled: subscribersWriteProcedure.input(z.object({ subscriberId: idSchema, enabled: z.boolean() })).mutation(async ({ ctx, input }) => {
    const clusterId = await ctx.db.transaction(async (tx) => {
      const before = await lockSubscriber(tx, input.subscriberId);
      await tx.update(subscribers).set({ enabled: input.enabled, updatedAt: new Date() }).where(eq(subscribers.id, before.id));
      await recordAudit(tx, ctx.operator, {
        clusterId: before.clusterId,
        action: input.enabled ? "subscriber.enable" : "subscriber.disable",
        entityType: "subscriber",
        entityId: before.id,
        summary: `${input.enabled ? "Enabled" : "Disabled"} subscriber ${before.name}`,
        before: { enabled: before.enabled },
        after: { enabled: input.enabled },
      });
      return before.clusterId;
    });
    publishChange("subscribers", clusterId);
    return { ok: true };
  }),

  /** Usage back to 0 now (the finished period is kept): a limited subscriber may connect again. */
  resetUsage: subscribersWriteProcedure.input(z.object({ subscriberId: idSchema })).mutation(async ({ ctx, input }) => {
    const out = await ctx.db.transaction((tx) => resetUsage(tx, [input.subscriberId], "manual", { operator: ctx.operator }));
    if (out.reset === 0) throw new TRPCError({ code: "NOT_FOUND", message: "This subscriber no longer exists" });
    for (const c of out.clusterIds) publishChange("subscribers", c);
    return { ok: true };
  }),

  /** Usage of the subscriber's finished periods (one per reset), newest first. */
  usagePeriods: protectedProcedure.input(z.object({ subscriberId: idSchema })).query(({ ctx, input }) => usagePeriods(ctx.db, input.subscriberId)),

  /** A new subscription token: the old link stops working at once. */
  rotateToken: subscribersWriteProcedure.input(z.object({ subscriberId: idSchema })).mutation(async ({ ctx, input }) => {
    const token = newSubscriptionToken();
    const clusterId = await ctx.db.transaction(async (tx) => {
      const before = await lockSubscriber(tx, input.subscriberId);
      await tx.update(subscribers).set({ token, updatedAt: new Date() }).where(eq(subscribers.id, before.id));
      await recordAudit(tx, ctx.operator, {
        clusterId: before.clusterId,
        action: "subscriber.rotate-token",
        entityType: "subscriber",
        entityId: before.id,
        summary: `Rotated the subscription link of ${before.name}`,
      });
      return before.clusterId;
    });
    publishChange("subscribers", clusterId);
    return { token };
  }),

  delete: subscribersWriteProcedure.input(z.object({ subscriberId: idSchema })).mutation(async ({ ctx, input }) => {
    const clusterId = await ctx.db.transaction(async (tx) => {
      const before = await lockSubscriber(tx, input.subscriberId);
      await tx.delete(subscribers).where(eq(subscribers.id, before.id));
      await recordAudit(tx, ctx.operator, {
        clusterId: before.clusterId,
        action: "subscriber.delete",
        entityType: "subscriber",
        entityId: before.id,
        summary: `Deleted subscriber ${before.name}`,
        before: auditView(before),
      });
      return before.clusterId;
    });
    publishChange("subscribers", clusterId);
    return { ok: true };
  }),
});
