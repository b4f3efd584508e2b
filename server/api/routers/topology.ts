import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { clusters, inbounds, routes, serverHealth, serverMetrics, servers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { onChange, publishChange, type ChangeEvent, type ChangeKind } from "@/server/bus";
import { uniqueViolation } from "@/server/db-errors";
import { assignInboundToRoute, NotFoundError, reorderRoutes, StaleDataError } from "@/server/domain/moves";
import { newAgentToken } from "@/server/domain/tokens";
import { loadTopology } from "@/server/domain/topology";
import { computeWarnings } from "@/server/domain/warnings";
import { idSchema, nameSchema } from "@/server/validation";
import { adminProcedure, createTRPCRouter, protectedProcedure } from "../trpc";

/** Domain errors of a move become the HTTP-ish codes clients act on. */
function asTrpcError(err: unknown): unknown {
  if (err instanceof StaleDataError) return new TRPCError({ code: "CONFLICT", message: err.message, cause: err });
  if (err instanceof NotFoundError) return new TRPCError({ code: "NOT_FOUND", message: err.message, cause: err });
  return err;
}

/** Kinds of change that alter what the diagram shows. */
// "settings": probe configuration feeds the warnings panel.
const DIAGRAM_KINDS: ReadonlySet<ChangeKind> = new Set(["topology", "health", "metrics", "settings"]);

export interface TopologyChange {
  kinds: ChangeKind[];
  at: number;
}

export const topologyRouter = createTRPCRouter({
  get: protectedProcedure.input(z.object({ clusterId: idSchema })).query(async ({ ctx, input }) => {
    const topology = await loadTopology(ctx.db, input.clusterId);
    if (!topology) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
    return { ...topology, warnings: computeWarnings(topology) };
  }),

  /** Puts an inbound in a route (or in none, toRouteId null), refusing a move made on stale data. */
  moveInbound: adminProcedure
    .input(z.object({ inboundId: idSchema, toRouteId: idSchema.nullable(), expectedVersion: z.number().int().min(0) }))
    .mutation(async ({ ctx, input }) => {
      try {
        const result = await ctx.db.transaction((tx) => assignInboundToRoute(tx, ctx.operator, input));
        if (result.fromRouteId !== result.toRouteId) publishChange("topology", result.clusterId);
        return result;
      } catch (err) {
        throw asTrpcError(err);
      }
    }),

  /** Sets the order of the cluster's routes (= the order of lines in every subscription). */
  reorderRoutes: adminProcedure
    .input(z.object({ clusterId: idSchema, orderedRouteIds: z.array(idSchema).max(10_000) }))
    .mutation(async ({ ctx, input }) => {
      try {
        await ctx.db.transaction((tx) => reorderRoutes(tx, ctx.operator, input.clusterId, input.orderedRouteIds));
      } catch (err) {
        throw asTrpcError(err);
      }
      publishChange("topology", input.clusterId);
      return { clusterId: input.clusterId, orderedRouteIds: input.orderedRouteIds };
    }),

  /**
   * Live changes of one cluster for the dashboard: one small event per burst of changes
   * (topology, health, metrics); the client refetches topology.get on each.
   */
  onChange: protectedProcedure.input(z.object({ clusterId: idSchema })).subscription(async function* ({ input, signal }) {
    const queue: ChangeEvent[] = [];
    let wake: (() => void) | null = null;
    const off = onChange((e) => {
      if (!DIAGRAM_KINDS.has(e.kind)) return;
      if (e.clusterId !== null && e.clusterId !== input.clusterId) return;
      queue.push(e);
      wake?.();
    });
    const onAbort = () => wake?.();
    signal?.addEventListener("abort", onAbort);
    try {
      while (!signal?.aborted) {
        if (queue.length === 0) {
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = null;
          continue;
        }
        const batch = queue.splice(0);
        const change: TopologyChange = { kinds: [...new Set(batch.map((e) => e.kind))], at: Math.max(...batch.map((e) => e.at)) };
        yield change;
      }
    } finally {
      off();
      signal?.removeEventListener("abort", onAbort);
    }
  }),

  /**
   * A synthetic cluster of any size (benchmarks, load tests, trying the diagram at scale):
   * servers with a mix of statuses and load, inbounds spread round-robin over routes, a few
   * left unassigned.
   */
  createSynthetic: adminProcedure
    .input(
      z.object({
        name: nameSchema,
        servers: z.number().int().min(1).max(2000),
        inboundsPerServer: z.number().int().min(0).max(20),
        routes: z.number().int().min(0).max(500),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const statuses = ["healthy", "healthy", "healthy", "healthy", "healthy", "healthy", "pending", "no-data", "probe-failing", "unreachable"];
      try {
        const clusterId = await ctx.db.transaction(async (tx) => {
          const [cluster] = await tx.insert(clusters).values({ name: input.name }).returning();
          const clusterId = cluster!.id;
          const routeRows =
            input.routes === 0
              ? []
              : await tx
                  .insert(routes)
                  .values(Array.from({ length: input.routes }, (_, i) => ({ clusterId, name: `Route ${String(i + 1).padStart(3, "0")}`, position: i })))
                  .returning({ id: routes.id });
          const serverRows: Array<{ id: string }> = [];
          for (let start = 0; start < input.servers; start += 500) {
            const n = Math.min(500, input.servers - start);
            serverRows.push(
              ...(await tx
                .insert(servers)
                .values(
                  Array.from({ length: n }, (_, k) => ({
                    clusterId,
                    name: `srv-${String(start + k + 1).padStart(4, "0")}`,
                    // Loopback: the prober runs against these too, and must never leave the machine in a benchmark.
                    address: `127.2.${Math.floor((start + k) / 250) % 250}.${((start + k) % 250) + 1}`,
                    agentTokenHash: newAgentToken().hash,
                  })),
                )
                .returning({ id: servers.id })),
            );
          }
          const now = new Date();
          for (let start = 0; start < serverRows.length; start += 500) {
            const chunk = serverRows.slice(start, start + 500);
            await tx.insert(serverHealth).values(chunk.map((s, k) => ({ serverId: s.id, status: statuses[(start + k) % statuses.length]!, everSucceeded: true })));
            await tx.insert(serverMetrics).values(
              chunk.map((s, k) => ({
                serverId: s.id,
                reportedAt: now,
                listenerAlive: true,
                serviceRunning: true,
                usersOnline: ((start + k) * 37) % 400,
                rxBps: (((start + k) * 7919) % 900) * 1e6,
                txBps: (((start + k) * 104729) % 800) * 1e6,
                cpu: 0.3,
                memory: 0.5,
              })),
            );
          }
          const inboundValues = serverRows.flatMap((s, si) =>
            Array.from({ length: input.inboundsPerServer }, (_, k) => {
              const n = si * input.inboundsPerServer + k;
              // Every 50th inbound is left unassigned, so the warnings have something to say.
              const routeId = routeRows.length > 0 && n % 50 !== 49 ? routeRows[n % routeRows.length]!.id : null;
              return { clusterId, serverId: s.id, routeId, name: `inbound ${String(n + 1).padStart(5, "0")}`, port: 10_000 + k, sni: "www.example.com" };
            }),
          );
          for (let start = 0; start < inboundValues.length; start += 1000) {
            await tx.insert(inbounds).values(inboundValues.slice(start, start + 1000));
          }
          await recordAudit(tx, ctx.operator, {
            clusterId,
            action: "cluster.create",
            entityType: "cluster",
            entityId: clusterId,
            summary: `Created synthetic cluster ${input.name} (${input.servers} servers, ${inboundValues.length} inbounds, ${input.routes} routes)`,
          });
          return clusterId;
        });
        publishChange("topology", clusterId);
        return { id: clusterId, name: input.name };
      } catch (err) {
        if (uniqueViolation(err)) throw new TRPCError({ code: "CONFLICT", message: `A cluster named "${input.name}" already exists` });
        throw err;
      }
    }),
});
