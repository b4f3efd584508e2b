/**
 * Test and fleet tooling: synthetic clusters (bench, bench-ui), simulated fleets (fleet, demo,
 * soak) and the assignment counts they poll. These procedures rewrite addresses, ports and
 * agent tokens of whole clusters in one call, so they are mounted only when
 * ROUTEBOARD_DEVTOOLS=1 (server/api/root.ts); without it they do not exist at all.
 */
import { z } from "zod";
import { publishAfterCommit } from "@/server/changes";
import { assignmentCountsByServer, createSyntheticCluster, enrolFleet, MAX_FLEET_SERVERS, takeOverFleet } from "@/server/topology/tooling";
import { idSchema, nameSchema } from "@/core/validation";
import { adminProcedure, createTRPCRouter, protectedProcedure } from "../trpc";

export const toolingRouter = createTRPCRouter({
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
    .mutation(({ ctx, input }) => publishAfterCommit(createSyntheticCluster(ctx.db, ctx.operator, input))),

  /**
   * Servers for a simulated fleet: `servers` servers named sim-01… on 127.0.0.1, each with
   * `inboundsPerServer` inbounds on free local ports, in the given cluster (or the cluster
   * named `clusterName`, created when missing). Existing sim-NN servers are reused (new
   * token, new ports). A cluster without routes gets a "Fleet" route holding the inbounds.
   */
  enrolFleet: adminProcedure
    .input(
      z.object({
        clusterId: idSchema.optional(),
        clusterName: nameSchema.optional(),
        servers: z.number().int().min(1).max(MAX_FLEET_SERVERS),
        inboundsPerServer: z.number().int().min(1).max(8).default(1),
      }),
    )
    .mutation(({ ctx, input }) => publishAfterCommit(enrolFleet(ctx.db, ctx.operator, input))),

  /**
   * Takes over the cluster's existing servers for a local simulated fleet: every server
   * moves to 127.0.0.1 with a fresh agent token, and every inbound to a distinct free local
   * port. Returns the fleet plan (tokens are shown only here).
   */
  rotateAgentTokens: adminProcedure
    .input(z.object({ clusterId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(takeOverFleet(ctx.db, ctx.operator, input))),

  /** Subscribers assigned per server (the balancer's stored choices), for the fleet's load. */
  assignmentCounts: protectedProcedure
    .input(z.object({ clusterId: idSchema }))
    .query(({ ctx, input }) => assignmentCountsByServer(ctx.db, input.clusterId)),
});
