import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { loadTopology } from "@/server/domain/topology";
import { idSchema } from "@/server/validation";
import { createTRPCRouter, protectedProcedure } from "../trpc";

export const topologyRouter = createTRPCRouter({
  get: protectedProcedure.input(z.object({ clusterId: idSchema })).query(async ({ ctx, input }) => {
    const topology = await loadTopology(ctx.db, input.clusterId);
    if (!topology) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
    return topology;
  }),
});
