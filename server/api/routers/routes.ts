/** Routes: create (with an optional pool of inbounds), edit, delete. Moves use moves.ts. */
import { TRPCError } from "@trpc/server";
import { and, eq, inArray, max, sql } from "drizzle-orm";
import { z } from "zod";
import { moveChanges } from "@/core/topology";
import { clusters, inbounds, routes } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { publishChange } from "@/server/bus";
import { uniqueViolation } from "@/server/db-errors";
import { assignInboundToRoute } from "@/server/domain/moves";
import { algorithmSchema, flagSchema, idSchema, nameSchema } from "@/core/validation";
import { DEFAULT_ALGORITHM } from "@/core/format";
import { createTRPCRouter, topologyWriteProcedure } from "../trpc";
import { domainError, fieldError } from "./_errors";

const routeFields = { name: nameSchema, flag: flagSchema.default(null), algorithm: algorithmSchema.default(DEFAULT_ALGORITHM) };

function duplicateName(err: unknown, name: string): unknown {
  const c = uniqueViolation(err);
  if (c === "routes_name_ci" || c === true) {
    return fieldError("CONFLICT", "name", `A route named "${name}" already exists in this cluster`);
  }
  return domainError(err);
}

function routeView(r: typeof routes.$inferSelect) {
  return { id: r.id, clusterId: r.clusterId, name: r.name, flag: r.flag, algorithm: r.algorithm, position: r.position, version: r.version };
}

export const routesRouter = createTRPCRouter({
  create: topologyWriteProcedure
    .input(z.object({ clusterId: idSchema, ...routeFields, inboundIds: z.array(idSchema).max(1000).default([]) }))
    .mutation(async ({ ctx, input }) => {
      try {
        const result = await ctx.db.transaction(async (tx) => {
          const [cluster] = await tx.select({ id: clusters.id }).from(clusters).where(eq(clusters.id, input.clusterId)).for("update");
          if (!cluster) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
          const [{ top } = { top: null }] = await tx.select({ top: max(routes.position) }).from(routes).where(eq(routes.clusterId, input.clusterId));
          const [route] = await tx
            .insert(routes)
            .values({ clusterId: input.clusterId, name: input.name, flag: input.flag, algorithm: input.algorithm, position: top === null ? 0 : top + 1 })
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
          await recordAudit(tx, ctx.operator, {
            clusterId: input.clusterId,
            action: "route.create",
            entityType: "route",
            entityId: route!.id,
            summary: `Created route ${route!.name}${ids.length ? ` with ${ids.length} inbound${ids.length === 1 ? "" : "s"}` : " (empty)"}`,
            after: { name: route!.name, flag: route!.flag, algorithm: route!.algorithm, position: route!.position, inboundIds: ids },
          });
          for (const inboundId of ids) await assignInboundToRoute(tx, ctx.operator, { inboundId, toRouteId: route!.id });
          return routeView(route!);
        });
        publishChange("topology", input.clusterId);
        return result;
      } catch (err) {
        throw duplicateName(err, input.name);
      }
    }),

  update: topologyWriteProcedure.input(z.object({ routeId: idSchema, ...routeFields })).mutation(async ({ ctx, input }) => {
    try {
      const result = await ctx.db.transaction(async (tx) => {
        const [before] = await tx.select().from(routes).where(eq(routes.id, input.routeId)).for("update");
        if (!before) throw new TRPCError({ code: "NOT_FOUND", message: "This route no longer exists" });
        const [after] = await tx
          .update(routes)
          .set({ name: input.name, flag: input.flag, algorithm: input.algorithm, version: sql`${routes.version} + 1`, updatedAt: new Date() })
          .where(eq(routes.id, input.routeId))
          .returning();
        await recordAudit(tx, ctx.operator, {
          clusterId: before.clusterId,
          action: "route.update",
          entityType: "route",
          entityId: before.id,
          summary: before.name === after!.name ? `Edited route ${after!.name}` : `Edited route ${before.name} (now ${after!.name})`,
          before: { name: before.name, flag: before.flag, algorithm: before.algorithm },
          after: { name: after!.name, flag: after!.flag, algorithm: after!.algorithm },
        });
        return routeView(after!);
      });
      publishChange("topology", result.clusterId);
      return result;
    } catch (err) {
      throw duplicateName(err, input.name);
    }
  }),

  /** Deletes a route: its inbounds become unassigned (and lose a fallback mark). */
  delete: topologyWriteProcedure.input(z.object({ routeId: idSchema })).mutation(async ({ ctx, input }) => {
    const result = await ctx.db.transaction(async (tx) => {
      const [route] = await tx.select().from(routes).where(eq(routes.id, input.routeId)).for("update");
      if (!route) throw new TRPCError({ code: "NOT_FOUND", message: "This route no longer exists" });
      const freed = await tx
        .update(inbounds)
        .set({ ...moveChanges(null), version: sql`${inbounds.version} + 1`, updatedAt: new Date() })
        .where(eq(inbounds.routeId, route.id))
        .returning({ id: inbounds.id, name: inbounds.name });
      await tx.delete(routes).where(eq(routes.id, route.id));
      await recordAudit(tx, ctx.operator, {
        clusterId: route.clusterId,
        action: "route.delete",
        entityType: "route",
        entityId: route.id,
        summary: `Deleted route ${route.name}${freed.length ? `; ${freed.length} inbound${freed.length === 1 ? "" : "s"} now unassigned` : ""}`,
        before: { name: route.name, flag: route.flag, algorithm: route.algorithm, position: route.position, inbounds: freed.map((i) => i.name) },
      });
      return { clusterId: route.clusterId, unassigned: freed.length };
    });
    publishChange("topology", result.clusterId);
    return result;
  }),
});
