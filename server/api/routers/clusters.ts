import { TRPCError } from "@trpc/server";
import { asc, count, eq } from "drizzle-orm";
import { z } from "zod";
import { clusters, inbounds, routes, servers, subscribers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { publishChange } from "@/server/bus";
import { uniqueViolation } from "@/server/db-errors";
import { idSchema, nameSchema } from "@/core/validation";
import { seedDemoCluster } from "@/server/demo/seed";
import { createTRPCRouter, protectedProcedure, topologyWriteProcedure } from "../trpc";

export const clustersRouter = createTRPCRouter({
  list: protectedProcedure.query(async ({ ctx }) => {
    const rows = await ctx.db.select().from(clusters).orderBy(asc(clusters.createdAt));
    const counts = async (table: typeof servers | typeof inbounds | typeof routes | typeof subscribers) =>
      new Map(
        (await ctx.db.select({ clusterId: table.clusterId, n: count() }).from(table).groupBy(table.clusterId)).map((r) => [r.clusterId, r.n]),
      );
    const [s, i, r, u] = await Promise.all([counts(servers), counts(inbounds), counts(routes), counts(subscribers)]);
    return rows.map((c) => ({
      id: c.id,
      name: c.name,
      createdAt: c.createdAt,
      servers: s.get(c.id) ?? 0,
      inbounds: i.get(c.id) ?? 0,
      routes: r.get(c.id) ?? 0,
      subscribers: u.get(c.id) ?? 0,
    }));
  }),

  get: protectedProcedure.input(z.object({ clusterId: idSchema })).query(async ({ ctx, input }) => {
    const [cluster] = await ctx.db.select().from(clusters).where(eq(clusters.id, input.clusterId));
    if (!cluster) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
    return { id: cluster.id, name: cluster.name, reportIntervalS: cluster.reportIntervalS };
  }),

  create: topologyWriteProcedure.input(z.object({ name: nameSchema })).mutation(async ({ ctx, input }) => {
    try {
      const created = await ctx.db.transaction(async (tx) => {
        const [c] = await tx.insert(clusters).values({ name: input.name }).returning();
        await recordAudit(tx, ctx.operator, {
          clusterId: c!.id,
          action: "cluster.create",
          entityType: "cluster",
          entityId: c!.id,
          summary: `Created cluster ${c!.name}`,
          after: { name: c!.name },
        });
        return { id: c!.id, name: c!.name };
      });
      // Announced after commit, so a reader woken by the event sees the new row.
      publishChange("topology", created.id);
      return created;
    } catch (err) {
      if (uniqueViolation(err)) throw new TRPCError({ code: "CONFLICT", message: `A cluster named "${input.name}" already exists` });
      throw err;
    }
  }),

  rename: topologyWriteProcedure.input(z.object({ clusterId: idSchema, name: nameSchema })).mutation(async ({ ctx, input }) => {
    try {
      await ctx.db.transaction(async (tx) => {
        const [before] = await tx.select().from(clusters).where(eq(clusters.id, input.clusterId));
        if (!before) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
        await tx.update(clusters).set({ name: input.name, updatedAt: new Date() }).where(eq(clusters.id, input.clusterId));
        await recordAudit(tx, ctx.operator, {
          clusterId: input.clusterId,
          action: "cluster.rename",
          entityType: "cluster",
          entityId: input.clusterId,
          summary: `Renamed cluster ${before.name} to ${input.name}`,
          before: { name: before.name },
          after: { name: input.name },
        });
      });
      publishChange("topology", input.clusterId);
      return { id: input.clusterId, name: input.name };
    } catch (err) {
      if (uniqueViolation(err)) throw new TRPCError({ code: "CONFLICT", message: `A cluster named "${input.name}" already exists` });
      throw err;
    }
  }),

  /** A ready-made demo cluster (6 servers, 4 routes, 2 unassigned inbounds) to explore or test with. */
  createDemo: topologyWriteProcedure.input(z.object({ name: nameSchema })).mutation(async ({ ctx, input }) => {
    try {
      const id = await ctx.db.transaction(async (tx) => {
        const clusterId = await seedDemoCluster(tx as never, input.name);
        await recordAudit(tx, ctx.operator, {
          clusterId,
          action: "cluster.create",
          entityType: "cluster",
          entityId: clusterId,
          summary: `Created demo cluster ${input.name}`,
        });
        return clusterId;
      });
      publishChange("topology", id);
      publishChange("subscribers", id);
      return { id, name: input.name };
    } catch (err) {
      if (uniqueViolation(err)) throw new TRPCError({ code: "CONFLICT", message: `A cluster named "${input.name}" already exists` });
      throw err;
    }
  }),
});
