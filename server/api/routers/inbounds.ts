/** Inbounds on servers: create (first one lands in a default route), edit, delete, fallback. */
import { z } from "zod";
import { publishAfterCommit } from "@/server/changes";
import { addInbound, deleteInbound, setInboundFallback, updateInbound } from "@/server/topology/inbounds";
import { idSchema, inboundFieldsSchema } from "@/core/validation";
import { topologyWriteProcedure, createTRPCRouter } from "../trpc";

export const inboundsRouter = createTRPCRouter({
  create: topologyWriteProcedure
    .input(z.object({ serverId: idSchema, routeId: idSchema.nullish() }).and(inboundFieldsSchema))
    .mutation(({ ctx, input }) => publishAfterCommit(addInbound(ctx.db, ctx.operator, input))),

  update: topologyWriteProcedure
    .input(z.object({ inboundId: idSchema }).and(inboundFieldsSchema))
    .mutation(({ ctx, input }) => publishAfterCommit(updateInbound(ctx.db, ctx.operator, input))),

  delete: topologyWriteProcedure
    .input(z.object({ inboundId: idSchema }))
    .mutation(({ ctx, input }) => publishAfterCommit(deleteInbound(ctx.db, ctx.operator, input))),

  /** Marks (or unmarks) the inbound as its route's fallback; one fallback per route. */
  setFallback: topologyWriteProcedure
    .input(z.object({ inboundId: idSchema, isFallback: z.boolean() }))
    .mutation(({ ctx, input }) => publishAfterCommit(setInboundFallback(ctx.db, ctx.operator, input))),
});
