import { z } from "zod";
import { publishAfterCommit } from "@/server/changes";
import { clusterDeletionImpact, createCluster, deleteCluster, getCluster, listClusters, renameCluster, setAllowedPrivateDestinations, setBranding, setDevicelessFetches } from "@/server/topology/clusters";
import { DEVICELESS_FETCHES } from "@/core/devices";
import { createDemoCluster, deleteDemoCluster, forgetLiveDemoOf, liveDemoClusterId } from "@/server/demo/seed";
import { brandingSchema } from "@/core/branding";
import { setDefaultPlan } from "@/server/accounts/plans";
import { allowedPrivateDestinationsSchema, idSchema, nameSchema } from "@/core/validation";
import { adminProcedure, topologyWriteProcedure, createTRPCRouter, protectedProcedure } from "../trpc";

export const clustersRouter = createTRPCRouter({
  /** `demo`: the live demo cluster (simulated agents on this machine; "Delete demo" removes it). */
  list: protectedProcedure.query(async ({ ctx }) => {
    const [rows, demoId] = await Promise.all([listClusters(ctx.db), liveDemoClusterId(ctx.db)]);
    return rows.map((c) => ({ ...c, demo: c.id === demoId }));
  }),

  get: protectedProcedure.input(z.object({ clusterId: idSchema })).query(async ({ ctx, input }) => {
    const [cluster, demoId] = await Promise.all([getCluster(ctx.db, input.clusterId), liveDemoClusterId(ctx.db)]);
    return { ...cluster, demo: cluster.id === demoId };
  }),

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

  /** Subscribers with a device limit whose app sends no device id: served (allow) or refused (core/devices.ts). */
  setDevicelessFetches: topologyWriteProcedure
    .input(z.object({ clusterId: idSchema, devicelessFetches: z.enum(DEVICELESS_FETCHES, { error: "Fetches without a device id must be allow or refuse" }) }))
    .mutation(({ ctx, input }) => publishAfterCommit(setDevicelessFetches(ctx.db, ctx.operator, input))),

  /** The plan new subscribers get when they name none (also plans.setDefault); existing subscribers keep theirs. */
  setDefaultPlan: topologyWriteProcedure
    .input(z.object({ clusterId: idSchema, planId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(setDefaultPlan(ctx.db, ctx.operator, input))),

  /** What deleting the cluster takes with it: the confirmation dialog lists these counts. */
  deletionImpact: protectedProcedure.input(z.object({ clusterId: idSchema })).query(({ ctx, input }) => clusterDeletionImpact(ctx.db, input.clusterId)),

  /**
   * Deletes a cluster with its servers, inbounds, routes and subscribers, the demo included
   * (its simulated agents stop on the change). `confirmName` must be the cluster's name.
   * Admins signed in only: no API token scope opens it, as a leaked token must not be able
   * to wipe a fleet.
   */
  delete: adminProcedure
    .input(z.object({ clusterId: idSchema, confirmName: z.string({ error: "Type the cluster's name to delete it" }).max(1000, "The typed name is too long") }))
    .mutation(({ ctx, input }) => publishAfterCommit(deleteCluster(ctx.db, ctx.operator, input, forgetLiveDemoOf))),

  /** The subscribers' public page brand: title, logo, support link, colours (core/branding.ts). */
  setBranding: topologyWriteProcedure
    .input(z.object({ clusterId: idSchema, branding: brandingSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(setBranding(ctx.db, ctx.operator, input))),

  /** A ready-made demo cluster (6 servers, 4 routes, 2 unassigned inbounds) to explore or test with. */
  createDemo: topologyWriteProcedure
    .input(z.object({ name: nameSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(createDemoCluster(ctx.db, ctx.operator, input))),

  /**
   * Deletes the live demo cluster and stops its simulated agents; any other cluster is refused.
   * Admins signed in only (no API token): it deletes a whole cluster.
   */
  deleteDemo: adminProcedure
    .input(z.object({ clusterId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(deleteDemoCluster(ctx.db, ctx.operator, input))),
});
