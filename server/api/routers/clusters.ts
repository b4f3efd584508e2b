import { z } from "zod";
import { publishAfterCommit } from "@/server/changes";
import { createCluster, getCluster, listClusters, renameCluster, setAllowedPrivateDestinations } from "@/server/topology/clusters";
import { createDemoCluster } from "@/server/demo/seed";
import { allowedPrivateDestinationsSchema, idSchema, nameSchema } from "@/core/validation";
import { adminProcedure, topologyWriteProcedure, createTRPCRouter, protectedProcedure } from "../trpc";

export const clustersRouter = createTRPCRouter({
  list: protectedProcedure.query(({ ctx }) => listClusters(ctx.db)),

  get: protectedProcedure.input(z.object({ clusterId: idSchema })).query(({ ctx, input }) => getCluster(ctx.db, input.clusterId)),

  create: topologyWriteProcedure
    .input(z.object({ name: nameSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(createCluster(ctx.db, ctx.operator, input))),

  rename: topologyWriteProcedure
    .input(z.object({ clusterId: idSchema, name: nameSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(renameCluster(ctx.db, ctx.operator, input))),

  /**
   * Exact private destinations (ip[:port] / cidr[:port]) subscribers may reach through the
   * cluster's servers; [] closes them all. Admins signed in only: a hole in the trust boundary
   * is not for API tokens.
   */
  setAllowedPrivateDestinations: adminProcedure
    .input(z.object({ clusterId: idSchema, destinations: allowedPrivateDestinationsSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(setAllowedPrivateDestinations(ctx.db, ctx.operator, input))),

  /** A ready-made demo cluster (6 servers, 4 routes, 2 unassigned inbounds) to explore or test with. */
  createDemo: topologyWriteProcedure
    .input(z.object({ name: nameSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(createDemoCluster(ctx.db, ctx.operator, input))),
});
