/**
 * Moving inbounds between routes and reordering routes: the writes behind every drag.
 * Each move carries the version the operator saw; a move made on stale data is refused
 * (StaleDataError), so two operators dragging the same inbound can never both win, and
 * the nullable route_id column means the database never holds an inbound in two routes.
 */
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { moveChanges } from "@/core/topology";
import { clusters, inbounds, routes } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import type { SessionOperator } from "@/server/auth/sessions";
import { written, type Written } from "@/server/changes";
import { NotFoundError, StaleDataError } from "@/server/errors";

export { NotFoundError, StaleDataError };

type Actor = Pick<SessionOperator, "operatorId" | "username"> | null;

export interface MoveResult {
  clusterId: string;
  inboundId: string;
  fromRouteId: string | null;
  toRouteId: string | null;
  version: number;
}

/**
 * Puts one inbound in `toRouteId` (null = unassigned). `expectedVersion` is the inbound's
 * version as the caller last saw it; undefined skips the check (wizard, scripts).
 * Leaving a route drops the fallback mark: a fallback belongs to its route.
 */
export async function assignInboundToRoute(
  tx: DbOrTx,
  actor: Actor,
  input: { inboundId: string; toRouteId: string | null; expectedVersion?: number },
): Promise<MoveResult> {
  const [current] = await tx.select().from(inbounds).where(eq(inbounds.id, input.inboundId)).for("update");
  if (!current) throw new NotFoundError("This inbound no longer exists");
  if (input.expectedVersion !== undefined && current.version !== input.expectedVersion) {
    throw new StaleDataError("Someone else changed this inbound a moment ago: the diagram now shows the latest state");
  }
  let toName = "Unassigned";
  if (input.toRouteId) {
    const [route] = await tx.select().from(routes).where(eq(routes.id, input.toRouteId));
    if (!route) throw new NotFoundError("That route no longer exists");
    if (route.clusterId !== current.clusterId) throw new NotFoundError("That route is in another cluster");
    toName = route.name;
  }
  if (current.routeId === input.toRouteId) {
    return { clusterId: current.clusterId, inboundId: current.id, fromRouteId: current.routeId, toRouteId: current.routeId, version: current.version };
  }
  const [updated] = await tx
    .update(inbounds)
    .set({ ...moveChanges(input.toRouteId), version: sql`${inbounds.version} + 1`, updatedAt: new Date() })
    .where(and(eq(inbounds.id, current.id), eq(inbounds.version, current.version)))
    .returning();
  if (!updated) throw new StaleDataError("Someone else changed this inbound a moment ago: the diagram now shows the latest state");
  let fromName = "Unassigned";
  if (current.routeId) {
    const [from] = await tx.select({ name: routes.name }).from(routes).where(eq(routes.id, current.routeId));
    fromName = from?.name ?? fromName;
  }
  await recordAudit(tx, actor, {
    clusterId: current.clusterId,
    action: "inbound.move",
    entityType: "inbound",
    entityId: current.id,
    summary: `Moved ${current.name} from ${fromName} to ${toName}`,
    before: { routeId: current.routeId, isFallback: current.isFallback },
    after: { routeId: input.toRouteId },
  });
  return { clusterId: current.clusterId, inboundId: current.id, fromRouteId: current.routeId, toRouteId: input.toRouteId, version: updated.version };
}

/**
 * Sets the order of a cluster's routes (= the order of lines in every subscription).
 * `orderedRouteIds` must list exactly the cluster's routes; otherwise the caller was
 * looking at a stale list and the change is refused.
 */
export async function reorderRoutes(tx: DbOrTx, actor: Actor, clusterId: string, orderedRouteIds: string[]): Promise<void> {
  const existing = await tx
    .select({ id: routes.id, name: routes.name, position: routes.position })
    .from(routes)
    .where(eq(routes.clusterId, clusterId))
    .orderBy(asc(routes.position), asc(routes.createdAt))
    .for("update");
  if (existing.length === 0) {
    // No routes: either no such cluster (its audit entry would break the foreign key, a
    // 500 found by the fuzz suite) or nothing to reorder.
    const [cluster] = await tx.select({ id: clusters.id }).from(clusters).where(eq(clusters.id, clusterId));
    if (!cluster) throw new NotFoundError("No such cluster");
  }
  const known = new Set(existing.map((r) => r.id));
  if (new Set(orderedRouteIds).size !== orderedRouteIds.length || orderedRouteIds.length !== known.size || !orderedRouteIds.every((id) => known.has(id))) {
    throw new StaleDataError("The list of routes changed meanwhile: the diagram now shows the latest order");
  }
  if (orderedRouteIds.length > 0) {
    await tx
      .update(routes)
      .set({
        position: sql`case ${sql.join(
          orderedRouteIds.map((id, i) => sql`when ${routes.id} = ${id} then ${i}::int`),
          sql` `,
        )} end`,
        version: sql`${routes.version} + 1`,
        updatedAt: new Date(),
      })
      .where(inArray(routes.id, orderedRouteIds));
  }
  const byId = new Map(existing.map((r) => [r.id, r.name]));
  await recordAudit(tx, actor, {
    clusterId,
    action: "route.reorder",
    entityType: "route",
    summary: `Reordered routes: ${orderedRouteIds.map((id) => byId.get(id)).join(", ")}`,
    before: existing.map((r) => r.id),
    after: orderedRouteIds,
  });
}

/** One drag of an inbound, in its own transaction; a move to where it already is announces nothing. */
export async function moveInbound(
  db: Db,
  actor: Actor,
  input: { inboundId: string; toRouteId: string | null; expectedVersion: number },
): Promise<Written<MoveResult>> {
  const result = await db.transaction((tx) => assignInboundToRoute(tx, actor, input));
  return result.fromRouteId !== result.toRouteId ? written(result, { kind: "topology", clusterId: result.clusterId }) : written(result);
}

/** reorderRoutes in its own transaction. */
export async function setRouteOrder(
  db: Db,
  actor: Actor,
  input: { clusterId: string; orderedRouteIds: string[] },
): Promise<Written<{ clusterId: string; orderedRouteIds: string[] }>> {
  await db.transaction((tx) => reorderRoutes(tx, actor, input.clusterId, input.orderedRouteIds));
  return written({ clusterId: input.clusterId, orderedRouteIds: input.orderedRouteIds }, { kind: "topology", clusterId: input.clusterId });
}
