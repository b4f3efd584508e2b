/** Subscribers of a cluster: the users whose VPN apps fetch /sub/<token>. */
import { randomUUID } from "node:crypto";
import { TRPCError } from "@trpc/server";
import { and, desc, eq, ilike } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { clusters, subscriberDevices, subscriberLegacyLinks, subscribers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { fieldError, foreignKeyViolation, uniqueViolation } from "@/server/db-errors";
import { written, type Actor, type Written } from "@/server/changes";
import { expiryMovedIntoPast, limitColumns, resetUsage, type ResetStrategy } from "@/server/usage/limits";
import { ONLINE_INTERVALS } from "./subscriber-list";
import { isExpired, isOverLimit } from "@/server/usage/access";
import { newSubscriptionToken } from "@/server/auth/tokens";
import { GIB, subscriberLimitsIssues } from "@/core/validation";
import { planLimits, resolvePlan } from "./plans";


type Row = typeof subscribers.$inferSelect;

export interface SubscriberFields {
  name: string;
  expiresAt: Date | null;
  trafficLimitGb: number | null;
  trafficResetStrategy: ResetStrategy;
  trafficResetDay: number | null;
  holdDays: number | null;
  /** Devices that may fetch the subscription; null = no limit; absent on update = unchanged. */
  deviceLimit?: number | null;
  /** The subscriber's plan; absent on update = unchanged. */
  planId?: string;
  /**
   * On update: also take the plan's traffic limit, reset and device limit (over the fields
   * above). Off by default: moving a subscriber to another plan changes their routes, not
   * what they were sold.
   */
  applyPlanLimits?: boolean;
}

/**
 * A new subscriber's fields: those left out (undefined) take the plan's defaults, those given
 * (null included: "none") win. The expiry comes from the plan's length unless the subscriber
 * is put on hold (the hold sets it at first use).
 */
export type NewSubscriberFields = Omit<SubscriberFields, "expiresAt" | "trafficLimitGb" | "trafficResetStrategy" | "trafficResetDay" | "applyPlanLimits"> & {
  expiresAt?: Date | null;
  trafficLimitGb?: number | null;
  trafficResetStrategy?: ResetStrategy;
  trafficResetDay?: number | null;
};

export const EXPIRY_IN_PAST = "Expiry must be in the future";

function auditView(s: Row) {
  return {
    name: s.name,
    expiresAt: s.expiresAt?.toISOString() ?? null,
    trafficLimitBytes: s.trafficLimitBytes,
    trafficResetStrategy: s.trafficResetStrategy,
    trafficResetDay: s.trafficResetDay,
    holdDays: s.holdDays,
    deviceLimit: s.deviceLimit,
    planId: s.planId,
    enabled: s.enabled,
  };
}

/** Names are unique per cluster, case-insensitively (subscribers_name_ci). */
function duplicateName(err: unknown, name: string): unknown {
  if (uniqueViolation(err) === "subscribers_name_ci") return fieldError("CONFLICT", "name", `A subscriber named "${name}" already exists in this cluster`);
  return err;
}

const limitBytes = (gb: number | null) => (gb === null ? null : Math.round(gb * GIB));

async function lockSubscriber(tx: DbOrTx, id: string): Promise<Row> {
  const [row] = await tx.select().from(subscribers).where(eq(subscribers.id, id)).for("update");
  if (!row) throw new TRPCError({ code: "NOT_FOUND", message: "This subscriber no longer exists" });
  return row;
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** Subscribers, newest first; tokens only when `showTokens` (those who may change things). */
export async function listSubscribers(db: Db, input: { clusterId: string; search?: string }, showTokens: boolean) {
  const q = input.search?.trim();
  const rows = await db
    .select()
    .from(subscribers)
    .where(and(eq(subscribers.clusterId, input.clusterId), q ? ilike(subscribers.name, `%${escapeLike(q)}%`) : undefined))
    .orderBy(desc(subscribers.createdAt), desc(subscribers.id))
    .limit(1000);
  const now = Date.now();
  const [cluster] = await db.select({ reportIntervalS: clusters.reportIntervalS }).from(clusters).where(eq(clusters.id, input.clusterId));
  // Online now: traffic in one of the last two report intervals (agents report deltas).
  const onlineWindowMs = ONLINE_INTERVALS * (cluster?.reportIntervalS ?? 60) * 1000;
  return rows.map((s) => ({
    id: s.id,
    name: s.name,
    token: showTokens ? s.token : null,
    enabled: s.enabled,
    expiresAt: s.expiresAt,
    expired: isExpired(s, now),
    limited: isOverLimit(s),
    trafficLimitBytes: s.trafficLimitBytes,
    trafficResetStrategy: s.trafficResetStrategy,
    trafficResetDay: s.trafficResetDay,
    nextResetAt: s.nextResetAt,
    usagePeriodStart: s.usagePeriodStart,
    holdDays: s.holdDays,
    planId: s.planId,
    trafficUsedBytes: s.trafficUsedBytes,
    trafficUpBytes: s.trafficUpBytes,
    trafficDownBytes: s.trafficDownBytes,
    lastSeenAt: s.lastSeenAt,
    online: s.lastSeenAt !== null && now - s.lastSeenAt.getTime() <= onlineWindowMs,
    createdAt: s.createdAt,
  }));
}

export async function createSubscriber(
  db: Db,
  actor: Actor,
  input: NewSubscriberFields & { clusterId: string },
): Promise<Written<{ id: string; name: string; token: string }>> {
  try {
    const row = await db.transaction(async (tx) => {
      const nowMs = Date.now();
      const plan = await resolvePlan(tx, input.clusterId, input.planId);
      const defaults = planLimits(plan, nowMs);
      const fields = {
        expiresAt: input.expiresAt !== undefined ? input.expiresAt : input.holdDays !== null ? null : defaults.expiresAt,
        trafficLimitBytes: input.trafficLimitGb !== undefined ? limitBytes(input.trafficLimitGb) : defaults.trafficLimitBytes,
        // The strategy and its day go together: the plan's pair, or the one given.
        ...(input.trafficResetStrategy !== undefined
          ? { trafficResetStrategy: input.trafficResetStrategy, trafficResetDay: input.trafficResetDay ?? null }
          : { trafficResetStrategy: defaults.trafficResetStrategy, trafficResetDay: defaults.trafficResetDay }),
        holdDays: input.holdDays,
        deviceLimit: input.deviceLimit !== undefined ? input.deviceLimit : defaults.deviceLimit,
      };
      const issue = subscriberLimitsIssues(fields)[0];
      if (issue) throw fieldError("BAD_REQUEST", issue.path, issue.message);
      const [s] = await tx
        .insert(subscribers)
        .values({
          clusterId: input.clusterId,
          name: input.name,
          token: newSubscriptionToken(),
          planId: plan.id,
          expiresAt: fields.expiresAt,
          trafficLimitBytes: fields.trafficLimitBytes,
          deviceLimit: fields.deviceLimit,
          ...limitColumns(fields, nowMs),
        })
        .returning();
      await recordAudit(tx, actor, {
        clusterId: input.clusterId,
        action: "subscriber.create",
        entityType: "subscriber",
        entityId: s!.id,
        summary: `Added subscriber ${s!.name}`,
        after: auditView(s!),
      });
      return s!;
    });
    return written({ id: row.id, name: row.name, token: row.token }, { kind: "subscribers", clusterId: input.clusterId, subscriberIds: [row.id] });
  } catch (err) {
    if (foreignKeyViolation(err)) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
    throw duplicateName(err, input.name);
  }
}

export async function updateSubscriber(db: Db, actor: Actor, input: SubscriberFields & { subscriberId: string }): Promise<Written<{ ok: true }>> {
  const clusterId = await db.transaction(async (tx) => {
    const before = await lockSubscriber(tx, input.subscriberId);
    // An expiry already passed may be kept as it is, not moved into the past.
    if (expiryMovedIntoPast(before.expiresAt, input.expiresAt, Date.now())) throw fieldError("BAD_REQUEST", "expiresAt", EXPIRY_IN_PAST);
    const plan = input.planId !== undefined ? await resolvePlan(tx, before.clusterId, input.planId) : null;
    // The plan's limits only when asked for (see SubscriberFields.applyPlanLimits).
    const fromPlan = plan && input.applyPlanLimits ? planLimits(plan, Date.now()) : null;
    const limits = fromPlan
      ? { trafficResetStrategy: fromPlan.trafficResetStrategy, trafficResetDay: fromPlan.trafficResetDay, holdDays: input.holdDays }
      : { trafficResetStrategy: input.trafficResetStrategy, trafficResetDay: input.trafficResetDay, holdDays: input.holdDays };
    const [after] = await tx
      .update(subscribers)
      .set({
        name: input.name,
        expiresAt: input.expiresAt,
        trafficLimitBytes: fromPlan ? fromPlan.trafficLimitBytes : limitBytes(input.trafficLimitGb),
        ...(fromPlan ? { deviceLimit: fromPlan.deviceLimit } : input.deviceLimit !== undefined ? { deviceLimit: input.deviceLimit } : {}),
        ...(plan ? { planId: plan.id } : {}),
        ...limitColumns(limits, Date.now(), before),
        updatedAt: new Date(),
      })
      .where(eq(subscribers.id, before.id))
      .returning();
    await recordAudit(tx, actor, {
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
  return written({ ok: true as const }, { kind: "subscribers", clusterId, subscriberIds: [input.subscriberId] });
}

export async function setSubscriberEnabled(db: Db, actor: Actor, input: { subscriberId: string; enabled: boolean }): Promise<Written<{ ok: true }>> {
  const clusterId = await db.transaction(async (tx) => {
    const before = await lockSubscriber(tx, input.subscriberId);
    await tx.update(subscribers).set({ enabled: input.enabled, updatedAt: new Date() }).where(eq(subscribers.id, before.id));
    await recordAudit(tx, actor, {
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
  return written({ ok: true as const }, { kind: "subscribers", clusterId, subscriberIds: [input.subscriberId] });
}

/** Usage back to 0 now (the finished period is kept): a limited subscriber may connect again. */
export async function resetSubscriberUsage(db: Db, actor: Actor, input: { subscriberId: string }): Promise<Written<{ ok: true }>> {
  const out = await db.transaction((tx) => resetUsage(tx, [input.subscriberId], "manual", { operator: actor }));
  if (out.reset === 0) throw new TRPCError({ code: "NOT_FOUND", message: "This subscriber no longer exists" });
  return written({ ok: true as const }, ...out.clusterIds.map((clusterId) => ({ kind: "subscribers" as const, clusterId, subscriberIds: [input.subscriberId] })));
}

/**
 * A new subscription token and a new key: the old link stops working at once, and so do the
 * credentials anyone fetched with it (the UUID, and the Trojan and Shadowsocks secrets derived
 * from it, core/credentials.ts). Rotating only the link would leave a leaked subscription's
 * servers open to whoever read it. Usage stays: counters are kept per subscriber, not per key.
 * The devices listed go (core/devices.ts): each app is counted again at its next fetch.
 */
export async function rotateSubscriberToken(db: Db, actor: Actor, input: { subscriberId: string }): Promise<Written<{ token: string }>> {
  const token = newSubscriptionToken();
  const clusterId = await db.transaction(async (tx) => {
    const before = await lockSubscriber(tx, input.subscriberId);
    // An imported subscriber's own Trojan password and old panel's URLs go with the key: they
    // are the same leaked secret under another name (server/import).
    await tx.update(subscribers).set({ token, vlessUuid: randomUUID(), trojanPassword: null, updatedAt: new Date() }).where(eq(subscribers.id, before.id));
    await tx.delete(subscriberLegacyLinks).where(eq(subscriberLegacyLinks.subscriberId, before.id));
    // Devices that fetched with the old link may be whoever it leaked to: they would keep
    // places under the device limit. The subscriber's own apps are counted again at their
    // first fetch with the new link.
    await tx.delete(subscriberDevices).where(eq(subscriberDevices.subscriberId, before.id));
    await recordAudit(tx, actor, {
      clusterId: before.clusterId,
      action: "subscriber.rotate-token",
      entityType: "subscriber",
      entityId: before.id,
      summary: `Rotated the subscription link and key of ${before.name} (its devices forgotten)`,
    });
    return before.clusterId;
  });
  return written({ token }, { kind: "subscribers", clusterId, subscriberIds: [input.subscriberId] });
}

export async function deleteSubscriber(db: Db, actor: Actor, input: { subscriberId: string }): Promise<Written<{ ok: true }>> {
  const clusterId = await db.transaction(async (tx) => {
    const before = await lockSubscriber(tx, input.subscriberId);
    await tx.delete(subscribers).where(eq(subscribers.id, before.id));
    await recordAudit(tx, actor, {
      clusterId: before.clusterId,
      action: "subscriber.delete",
      entityType: "subscriber",
      entityId: before.id,
      summary: `Deleted subscriber ${before.name}`,
      before: auditView(before),
    });
    return before.clusterId;
  });
  return written({ ok: true as const }, { kind: "subscribers", clusterId, subscriberIds: [input.subscriberId] });
}
