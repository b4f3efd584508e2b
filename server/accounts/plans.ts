/**
 * Plans (issue 27 point 2): which routes of its cluster a subscriber gets, and the limits a
 * subscriber created on the plan starts with. A subscriber has one plan; a cluster has a
 * default plan (new subscribers that name none). `allRoutes` means every route of the cluster,
 * those created later included; otherwise the plan's routes (plan_routes).
 *
 * What a plan gives is enforced twice: the subscription lists only the plan's routes
 * (server/subscription/answer.ts) and the agents accept a subscriber only on the inbounds of
 * those routes (server/dataplane/config.ts). A change of a plan's routes is a "topology" change
 * (agents get full configs, every answer is decided again); moving a subscriber to another
 * plan is a "subscribers" change naming them (agents get a delta).
 */
import { TRPCError } from "@trpc/server";
import { and, asc, count, eq, inArray } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { clusters, planRoutes, plans, routes, subscribers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { fieldError, uniqueViolation } from "@/server/db-errors";
import { MAX_NAMED_SUBSCRIBERS, written, type Actor, type Change, type Written } from "@/server/changes";
import { GIB, type PlanFields } from "@/core/validation";
import type { ResetStrategy } from "@/server/usage/limits";

export type PlanRow = typeof plans.$inferSelect;

export interface PlanView {
  id: string;
  clusterId: string;
  name: string;
  allRoutes: boolean;
  /** The plan's routes in route order (empty for allRoutes). */
  routeIds: string[];
  trafficLimitBytes: number | null;
  expiryDays: number | null;
  trafficResetStrategy: ResetStrategy;
  trafficResetDay: number | null;
  deviceLimit: number | null;
  isDefault: boolean;
  subscriberCount: number;
}

const DAY_MS = 86_400_000;

function duplicateName(err: unknown, name: string): unknown {
  if (uniqueViolation(err) === "plans_name_ci") return fieldError("CONFLICT", "name", `A plan named "${name}" already exists in this cluster`);
  return err;
}

function auditView(p: PlanRow, routeIds: readonly string[]) {
  return {
    name: p.name,
    allRoutes: p.allRoutes,
    routeIds: p.allRoutes ? [] : [...routeIds],
    trafficLimitBytes: p.trafficLimitBytes,
    expiryDays: p.expiryDays,
    trafficResetStrategy: p.trafficResetStrategy,
    trafficResetDay: p.trafficResetDay,
    deviceLimit: p.deviceLimit,
  };
}

/** The plans of a cluster, by name, with their routes, whether each is the default and how many subscribers each has. */
export async function listPlans(db: DbOrTx, clusterId: string): Promise<PlanView[]> {
  const [[cluster], rows, links, counts] = await Promise.all([
    db.select({ defaultPlanId: clusters.defaultPlanId }).from(clusters).where(eq(clusters.id, clusterId)),
    db.select().from(plans).where(eq(plans.clusterId, clusterId)).orderBy(asc(plans.name), asc(plans.id)),
    db
      .select({ planId: planRoutes.planId, routeId: planRoutes.routeId })
      .from(planRoutes)
      .innerJoin(routes, eq(routes.id, planRoutes.routeId))
      .where(eq(planRoutes.clusterId, clusterId))
      .orderBy(asc(routes.position), asc(routes.createdAt)),
    db.select({ planId: subscribers.planId, n: count() }).from(subscribers).where(eq(subscribers.clusterId, clusterId)).groupBy(subscribers.planId),
  ]);
  if (!cluster) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
  const routeIds = new Map<string, string[]>();
  for (const l of links) routeIds.set(l.planId, [...(routeIds.get(l.planId) ?? []), l.routeId]);
  const n = new Map(counts.map((c) => [c.planId, Number(c.n)]));
  return rows.map((p) => ({
    id: p.id,
    clusterId: p.clusterId,
    name: p.name,
    allRoutes: p.allRoutes,
    routeIds: p.allRoutes ? [] : (routeIds.get(p.id) ?? []),
    trafficLimitBytes: p.trafficLimitBytes,
    expiryDays: p.expiryDays,
    trafficResetStrategy: p.trafficResetStrategy,
    trafficResetDay: p.trafficResetDay,
    deviceLimit: p.deviceLimit,
    isDefault: p.id === cluster.defaultPlanId,
    subscriberCount: n.get(p.id) ?? 0,
  }));
}

/**
 * The plan a subscriber of `clusterId` is put on: `planId` when given (refused, naming
 * `field`, unless it is a plan of that cluster), else the cluster's default plan.
 */
export async function resolvePlan(db: DbOrTx, clusterId: string, planId: string | undefined, field = "planId"): Promise<PlanRow> {
  if (planId !== undefined) {
    const [p] = await db.select().from(plans).where(eq(plans.id, planId));
    if (!p || p.clusterId !== clusterId) throw fieldError("BAD_REQUEST", field, "No such plan in this cluster");
    return p;
  }
  const [row] = await db.select({ plan: plans }).from(clusters).innerJoin(plans, eq(plans.id, clusters.defaultPlanId)).where(eq(clusters.id, clusterId));
  if (!row) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
  return row.plan;
}

/** The limit columns a plan gives a subscriber (its expiry counted from `nowMs`). */
export function planLimits(p: PlanRow, nowMs: number) {
  return {
    trafficLimitBytes: p.trafficLimitBytes,
    expiresAt: p.expiryDays === null ? null : new Date(nowMs + p.expiryDays * DAY_MS),
    trafficResetStrategy: p.trafficResetStrategy,
    trafficResetDay: p.trafficResetDay,
    deviceLimit: p.deviceLimit,
  };
}

/** The route ids all belong to the cluster: refused naming routeIds otherwise. */
async function checkRoutes(tx: DbOrTx, clusterId: string, routeIds: readonly string[]): Promise<void> {
  if (routeIds.length === 0) return;
  const found = await tx
    .select({ id: routes.id })
    .from(routes)
    .where(and(eq(routes.clusterId, clusterId), inArray(routes.id, [...routeIds])));
  if (found.length !== routeIds.length) throw fieldError("BAD_REQUEST", "routeIds", "Some of these routes are not in this cluster (deleted meanwhile?): reload and choose again");
}

function columns(input: PlanFields) {
  return {
    name: input.name,
    allRoutes: input.allRoutes,
    trafficLimitBytes: input.trafficLimitGb === null ? null : Math.round(input.trafficLimitGb * GIB),
    expiryDays: input.expiryDays,
    trafficResetStrategy: input.trafficResetStrategy,
    trafficResetDay: input.trafficResetStrategy === "weekly" || input.trafficResetStrategy === "monthly" ? input.trafficResetDay : null,
    deviceLimit: input.deviceLimit,
  };
}

/** Which routes a plan gives changed: agents' inbounds and every answer of the cluster follow. */
const topologyChange = (clusterId: string): Change => ({ kind: "topology", clusterId });

export async function createPlan(db: Db, actor: Actor, input: PlanFields & { clusterId: string }): Promise<Written<{ id: string }>> {
  const row = await db
    .transaction(async (tx) => {
      const [c] = await tx.select({ id: clusters.id }).from(clusters).where(eq(clusters.id, input.clusterId));
      if (!c) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
      await checkRoutes(tx, input.clusterId, input.routeIds);
      const [p] = await tx
        .insert(plans)
        .values({ clusterId: input.clusterId, ...columns(input) })
        .returning();
      if (input.routeIds.length > 0) await tx.insert(planRoutes).values(input.routeIds.map((routeId) => ({ planId: p!.id, routeId, clusterId: input.clusterId })));
      await recordAudit(tx, actor, {
        clusterId: input.clusterId,
        action: "plan.create",
        entityType: "plan",
        entityId: p!.id,
        summary: `Added plan ${p!.name}`,
        after: auditView(p!, input.routeIds),
      });
      return p!;
    })
    .catch((err: unknown) => {
      throw duplicateName(err, input.name);
    });
  return written({ id: row.id }, topologyChange(input.clusterId));
}

export async function updatePlan(db: Db, actor: Actor, input: PlanFields & { planId: string }): Promise<Written<{ ok: true }>> {
  const clusterId = await db
    .transaction(async (tx) => {
      const [before] = await tx.select().from(plans).where(eq(plans.id, input.planId)).for("update");
      if (!before) throw new TRPCError({ code: "NOT_FOUND", message: "This plan no longer exists" });
      await checkRoutes(tx, before.clusterId, input.routeIds);
      const beforeRoutes = (await tx.select({ routeId: planRoutes.routeId }).from(planRoutes).where(eq(planRoutes.planId, before.id))).map((r) => r.routeId);
      const [after] = await tx
        .update(plans)
        .set({ ...columns(input), version: before.version + 1, updatedAt: new Date() })
        .where(eq(plans.id, before.id))
        .returning();
      await tx.delete(planRoutes).where(eq(planRoutes.planId, before.id));
      if (input.routeIds.length > 0) await tx.insert(planRoutes).values(input.routeIds.map((routeId) => ({ planId: before.id, routeId, clusterId: before.clusterId })));
      await recordAudit(tx, actor, {
        clusterId: before.clusterId,
        action: "plan.update",
        entityType: "plan",
        entityId: before.id,
        summary: `Edited plan ${after!.name}`,
        before: auditView(before, beforeRoutes),
        after: auditView(after!, input.routeIds),
      });
      return before.clusterId;
    })
    .catch((err: unknown) => {
      throw duplicateName(err, input.name);
    });
  // The subscribers' own limits stay: a plan's defaults apply when a subscriber is created on it.
  return written({ ok: true as const }, topologyChange(clusterId));
}

/**
 * Deletes a plan. The cluster's default plan cannot be deleted (make another the default
 * first); a plan with subscribers only when they move to `moveToPlanId`, a plan of the same
 * cluster, in the same transaction.
 */
export async function deletePlan(db: Db, actor: Actor, input: { planId: string; moveToPlanId?: string }): Promise<Written<{ moved: number }>> {
  return db.transaction(async (tx) => {
    const [p] = await tx.select().from(plans).where(eq(plans.id, input.planId)).for("update");
    if (!p) throw new TRPCError({ code: "NOT_FOUND", message: "This plan no longer exists" });
    const [c] = await tx.select({ defaultPlanId: clusters.defaultPlanId }).from(clusters).where(eq(clusters.id, p.clusterId)).for("update");
    if (c?.defaultPlanId === p.id) throw fieldError("BAD_REQUEST", "planId", `${p.name} is the cluster's default plan: make another plan the default first`);
    let moved: Array<{ id: string }> = [];
    let target: PlanRow | null = null;
    if (input.moveToPlanId !== undefined) {
      if (input.moveToPlanId === p.id) throw fieldError("BAD_REQUEST", "moveToPlanId", "Move the subscribers to another plan than the one deleted");
      target = await resolvePlan(tx, p.clusterId, input.moveToPlanId, "moveToPlanId");
      moved = await tx.update(subscribers).set({ planId: target.id, updatedAt: new Date() }).where(eq(subscribers.planId, p.id)).returning({ id: subscribers.id });
    } else {
      const [inUse] = await tx.select({ n: count() }).from(subscribers).where(eq(subscribers.planId, p.id));
      const n = Number(inUse?.n ?? 0);
      if (n > 0) throw fieldError("BAD_REQUEST", "moveToPlanId", `${n} subscriber${n === 1 ? " is" : "s are"} on ${p.name}: choose a plan to move them to`);
    }
    const routeIds = (await tx.select({ routeId: planRoutes.routeId }).from(planRoutes).where(eq(planRoutes.planId, p.id))).map((r) => r.routeId);
    await tx.delete(plans).where(eq(plans.id, p.id));
    await recordAudit(tx, actor, {
      clusterId: p.clusterId,
      action: "plan.delete",
      entityType: "plan",
      entityId: p.id,
      summary: `Deleted plan ${p.name}${target ? `, moving ${moved.length} subscriber${moved.length === 1 ? "" : "s"} to ${target.name}` : ""}`,
      before: auditView(p, routeIds),
      ...(target ? { after: { movedTo: target.id, moved: moved.length } } : {}),
    });
    const changes: Change[] = [topologyChange(p.clusterId)];
    if (moved.length > 0) {
      changes.push({ kind: "subscribers", clusterId: p.clusterId, ...(moved.length <= MAX_NAMED_SUBSCRIBERS ? { subscriberIds: moved.map((m) => m.id) } : {}) });
    }
    return written({ moved: moved.length }, ...changes);
  });
}

/** The plan new subscribers of the cluster get when they name none. Existing subscribers keep theirs. */
export async function setDefaultPlan(db: Db, actor: Actor, input: { clusterId: string; planId: string }): Promise<Written<{ ok: true }>> {
  await db.transaction(async (tx) => {
    const [c] = await tx.select().from(clusters).where(eq(clusters.id, input.clusterId)).for("update");
    if (!c) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
    const p = await resolvePlan(tx, input.clusterId, input.planId);
    if (c.defaultPlanId === p.id) return;
    await tx.update(clusters).set({ defaultPlanId: p.id, updatedAt: new Date() }).where(eq(clusters.id, c.id));
    await recordAudit(tx, actor, {
      clusterId: c.id,
      action: "cluster.set-default-plan",
      entityType: "cluster",
      entityId: c.id,
      summary: `Made ${p.name} the default plan of ${c.name}`,
      before: { defaultPlanId: c.defaultPlanId },
      after: { defaultPlanId: p.id },
    });
  });
  return written({ ok: true as const }, topologyChange(input.clusterId));
}
