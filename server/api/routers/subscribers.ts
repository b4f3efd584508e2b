/** Subscribers of a cluster: the users whose VPN apps fetch /sub/<token>. */
import { TRPCError } from "@trpc/server";
import { and, desc, eq, ilike } from "drizzle-orm";
import { z } from "zod";
import { clusters, subscribers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { publishChange } from "@/server/bus";
import { foreignKeyViolation, uniqueViolation } from "@/server/db-errors";
import { bulkUpdateSubscribers, listSubscriberPage, ONLINE_INTERVALS, SelectionChangedError } from "@/server/domain/subscriber-list";
import { newSubscriptionToken } from "@/server/domain/tokens";
import { expirySchema, GIB, idSchema, nameSchema, subscriberBulkSchema, subscriberPageSchema, trafficLimitGbSchema } from "@/server/validation";
import type { DbOrTx } from "@/db/client";
import { adminProcedure, createTRPCRouter, protectedProcedure } from "../trpc";
import { fieldError } from "./_errors";

export { ONLINE_INTERVALS };

/** Names are unique per cluster, case-insensitively (subscribers_name_ci). */
function duplicateName(err: unknown, name: string): unknown {
  if (uniqueViolation(err) === "subscribers_name_ci") return fieldError("CONFLICT", "name", `A subscriber named "${name}" already exists in this cluster`);
  return err;
}

const subscriberFields = {
  name: nameSchema,
  expiresAt: expirySchema.default(null),
  trafficLimitGb: trafficLimitGbSchema.default(null),
};

type Row = typeof subscribers.$inferSelect;

function auditView(s: Row) {
  return { name: s.name, expiresAt: s.expiresAt?.toISOString() ?? null, trafficLimitBytes: s.trafficLimitBytes, enabled: s.enabled };
}

async function lockSubscriber(tx: DbOrTx, id: string): Promise<Row> {
  const [row] = await tx.select().from(subscribers).where(eq(subscribers.id, id)).for("update");
  if (!row) throw new TRPCError({ code: "NOT_FOUND", message: "This subscriber no longer exists" });
  return row;
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

export const subscribersRouter = createTRPCRouter({
  /** One page of subscribers, searched, filtered and sorted by the database (any size). */
  page: protectedProcedure.input(subscriberPageSchema).query(({ ctx, input }) => listSubscriberPage(ctx.db, input, { showSecrets: ctx.operator.role !== "viewer" })),

  /** Enable, disable, extend, reset usage or delete the selected subscribers, or all a filter matches. */
  bulk: adminProcedure.input(subscriberBulkSchema).mutation(async ({ ctx, input }) => {
    try {
      const result = await bulkUpdateSubscribers(ctx.db, ctx.operator, input);
      for (const e of result.events) publishChange(e.kind, e.clusterId);
      return { affected: result.affected };
    } catch (err) {
      if (err instanceof SelectionChangedError) throw new TRPCError({ code: "CONFLICT", message: err.message });
      throw err;
    }
  }),

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
        trafficLimitBytes: s.trafficLimitBytes,
        trafficUsedBytes: s.trafficUsedBytes,
        trafficUpBytes: s.trafficUpBytes,
        trafficDownBytes: s.trafficDownBytes,
        lastSeenAt: s.lastSeenAt,
        online: s.lastSeenAt !== null && now - s.lastSeenAt.getTime() <= onlineWindowMs,
        createdAt: s.createdAt,
      }));
    }),

  create: adminProcedure.input(z.object({ clusterId: idSchema, ...subscriberFields })).mutation(async ({ ctx, input }) => {
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
      throw duplicateName(err, input.name);
    }
  }),

  update: adminProcedure.input(z.object({ subscriberId: idSchema, ...subscriberFields })).mutation(async ({ ctx, input }) => {
    const clusterId = await ctx.db.transaction(async (tx) => {
      const before = await lockSubscriber(tx, input.subscriberId);
      const [after] = await tx
        .update(subscribers)
        .set({
          name: input.name,
          expiresAt: input.expiresAt,
          trafficLimitBytes: input.trafficLimitGb === null ? null : Math.round(input.trafficLimitGb * GIB),
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
    }).catch((err: unknown) => {
      throw duplicateName(err, input.name);
    });
    publishChange("subscribers", clusterId);
    return { ok: true };
  }),

  setEnabled: adminProcedure.input(z.object({ subscriberId: idSchema, enabled: z.boolean() })).mutation(async ({ ctx, input }) => {
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

  /** A new subscription token: the old link stops working at once. */
  rotateToken: adminProcedure.input(z.object({ subscriberId: idSchema })).mutation(async ({ ctx, input }) => {
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

  delete: adminProcedure.input(z.object({ subscriberId: idSchema })).mutation(async ({ ctx, input }) => {
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
