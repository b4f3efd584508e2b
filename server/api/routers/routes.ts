/** Routes: create (with an optional pool of inbounds), edit, delete. Moves are in the topology router. */
import { z } from "zod";
import { publishAfterCommit } from "@/server/changes";
import { createRoute, deleteRoute, updateRoute } from "@/server/topology/routes";
import { algorithmSchema, flagSchema, idSchema, lineNameSchema, nameSchema } from "@/core/validation";
import { DEFAULT_ALGORITHM, DEFAULT_LINE_NAME } from "@/core/format";
import { topologyWriteProcedure, createTRPCRouter } from "../trpc";

const routeFields = { name: nameSchema, flag: flagSchema.default(null), algorithm: algorithmSchema.default(DEFAULT_ALGORITHM) };

export const routesRouter = createTRPCRouter({
  create: topologyWriteProcedure
    .input(z.object({ clusterId: idSchema, ...routeFields, lineName: lineNameSchema.default(DEFAULT_LINE_NAME), inboundIds: z.array(idSchema).max(1000).default([]) }))
    .mutation(({ ctx, input }) => publishAfterCommit(createRoute(ctx.db, ctx.operator, input))),

  update: topologyWriteProcedure
    // lineName left out keeps the route's (clients that predate it do not reset it).
    .input(z.object({ routeId: idSchema, ...routeFields, lineName: lineNameSchema.optional() }))
    .mutation(({ ctx, input }) => publishAfterCommit(updateRoute(ctx.db, ctx.operator, input))),

  /** Deletes a route: its inbounds become unassigned (and lose a fallback mark). */
  delete: topologyWriteProcedure
    .input(z.object({ routeId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(deleteRoute(ctx.db, ctx.operator, input))),
});
