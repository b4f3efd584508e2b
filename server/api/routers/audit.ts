/** The audit log of a cluster, newest first, paged by id. */
import { z } from "zod";
import { listAuditEntries } from "@/server/accounts/audit-log";
import { idSchema } from "@/core/validation";
import { createTRPCRouter, protectedProcedure } from "../trpc";

export const auditRouter = createTRPCRouter({
  list: protectedProcedure
    .input(
      z.object({
        clusterId: idSchema,
        /** The id of the last entry already shown; the next page is older. */
        cursor: z.number().int().positive().nullish(),
        limit: z.number().int().min(1).max(200).default(50),
      }),
    )
    .query(({ ctx, input }) => listAuditEntries(ctx.db, input)),
});
