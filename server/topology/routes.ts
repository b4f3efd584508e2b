/** Routes: create (with an optional pool of inbounds), edit, delete. Moves and reorders are in moves.ts. */
import { TRPCError } from "@trpc/server";
import { and, eq, inArray, max, sql } from "drizzle-orm";
import type { Db } from "@/db/client";
import { clusters, inbounds, routes } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { fieldError, uniqueViolation } from "@/server/db-errors";
import { written, type Actor, type Written } from "@/server/changes";
import { moveChanges } from "@/core/topology";
import type { LineName } from "@/core/format";
import { assignInboundToRoute } from "./moves";

export interface RouteFields {
  name: string;
  flag: string | null;
  algorithm: (typeof routes.$inferSelect)["algorithm"];
}

function routeView(r: typeof routes.$inferSelect) {
  return { id: r.id, clusterId: r.clusterId, name: r.name, flag: r.flag, algorithm: r.algorithm, lineName: r.lineName as LineName, position: r.position, version: r.version };
}
export type RouteView = ReturnType<typeof routeView>;

/** Runs a route write, turning a taken name into CONFLICT on the name field. */
async function namedRoute<T>(name: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    const c = uniqueViolation(err);
    if (c === "routes_name_ci" || c === true) throw fieldError("CONFLICT", "name", `A route named "${name}" already exists in this cluster`);
    throw err;
  }
}

/** A new route at the end of the cluster's order; the inbounds of `inboundIds` move into it. */
export function createRoute(db: Db, actor: Actor, input: RouteFields & { clusterId: string; lineName?: LineName; inboundIds: string[] }): Promise<Written<RouteView>> {
  return namedRoute(input.name, async () => {
    const result = await db.transaction(async (tx) => {
      const [cluster] = await tx.select({ id: clusters.id }).from(clusters).where(eq(clusters.id, input.clusterId)).for("update");
      if (!cluster) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
      const [{ top } = { top: null }] = await tx.select({ top: max(routes.position) }).from(routes).where(eq(routes.clusterId, input.clusterId));
      const [route] = await tx
        .insert(routes)
        .values({ clusterId: input.clusterId, name: input.name, flag: input.flag, algorithm: input.algorithm, lineName: input.lineName ?? "inbound", position: top === null ? 0 : top + 1 })
        .returning();
      const ids = [...new Set(input.inboundIds)];
      if (ids.length > 0) {
        const found = await tx
          .select({ id: inbounds.id })
          .from(inbounds)
          .where(and(eq(inbounds.clusterId, input.clusterId), inArray(inbounds.id, ids)));
        if (found.length !== ids.length) {
          throw fieldError("NOT_FOUND", "inboundIds", "Some of the chosen inbounds no longer exist in this cluster: reopen the wizard");
        }
      }
      await recordAudit(tx, actor, {
        clusterId: input.clusterId,
        action: "route.create",
        entityType: "route",
        entityId: route!.id,
        summary: `Created route ${route!.name}${ids.length ? ` with ${ids.length} inbound${ids.length === 1 ? "" : "s"}` : " (empty)"}`,
        after: { name: route!.name, flag: route!.flag, algorithm: route!.algorithm, lineName: route!.lineName, position: route!.position, inboundIds: ids },
      });
      for (const inboundId of ids) await assignInboundToRoute(tx, actor, { inboundId, toRouteId: route!.id });
      return routeView(route!);
    });
    return written(result, { kind: "topology", clusterId: input.clusterId });
  });
}

export function updateRoute(db: Db, actor: Actor, input: RouteFields & { routeId: string; lineName?: LineName | undefined }): Promise<Written<RouteView>> {
  return namedRoute(input.name, async () => {
    const result = await db.transaction(async (tx) => {
      const [before] = await tx.select().from(routes).where(eq(routes.id, input.routeId)).for("update");
      if (!before) throw new TRPCError({ code: "NOT_FOUND", message: "This route no longer exists" });
      const [after] = await tx
        .update(routes)
        .set({ name: input.name, flag: input.flag, algorithm: input.algorithm, ...(input.lineName ? { lineName: input.lineName } : {}), version: sql`${routes.version} + 1`, updatedAt: new Date() })
        .where(eq(routes.id, input.routeId))
        .returning();
      await recordAudit(tx, actor, {
        clusterId: before.clusterId,
        action: "route.update",
        entityType: "route",
        entityId: before.id,
        summary: before.name === after!.name ? `Edited route ${after!.name}` : `Edited route ${before.name} (now ${after!.name})`,
        before: { name: before.name, flag: before.flag, algorithm: before.algorithm, lineName: before.lineName },
        after: { name: after!.name, flag: after!.flag, algorithm: after!.algorithm, lineName: after!.lineName },
      });
      return routeView(after!);
    });
    return written(result, { kind: "topology", clusterId: result.clusterId });
  });
}

/** Deletes a route: its inbounds become unassigned (and, leaving it, lose a fallback mark). */
export async function deleteRoute(db: Db, actor: Actor, input: { routeId: string }): Promise<Written<{ clusterId: string; unassigned: number }>> {
  const result = await db.transaction(async (tx) => {
    const [route] = await tx.select().from(routes).where(eq(routes.id, input.routeId)).for("update");
    if (!route) throw new TRPCError({ code: "NOT_FOUND", message: "This route no longer exists" });
    const freed = await tx
      .update(inbounds)
      .set({ ...moveChanges(null), version: sql`${inbounds.version} + 1`, updatedAt: new Date() })
      .where(eq(inbounds.routeId, route.id))
      .returning({ id: inbounds.id, name: inbounds.name });
    await tx.delete(routes).where(eq(routes.id, route.id));
    await recordAudit(tx, actor, {
      clusterId: route.clusterId,
      action: "route.delete",
      entityType: "route",
      entityId: route.id,
      summary: `Deleted route ${route.name}${freed.length ? `; ${freed.length} inbound${freed.length === 1 ? "" : "s"} now unassigned` : ""}`,
      before: { name: route.name, flag: route.flag, algorithm: route.algorithm, position: route.position, inbounds: freed.map((i) => i.name) },
    });
    return { clusterId: route.clusterId, unassigned: freed.length };
  });
  return written(result, { kind: "topology", clusterId: result.clusterId });
}
