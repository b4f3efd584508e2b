import { TRPCError } from "@trpc/server";
import { z } from "zod";
import {
  AlertInputError,
  createAlertTarget,
  createAlertTargetSchema,
  deleteAlertTarget,
  listAlertTargets,
  sendTestAlert,
  updateAlertTarget,
  updateAlertTargetSchema,
} from "@/server/alerts/targets";
import { idSchema } from "@/core/validation";
import { fieldError } from "@/server/db-errors";
import { adminProcedure, createTRPCRouter } from "../trpc";

/** Domain input errors as field-named tRPC errors. */
async function mapped<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AlertInputError) {
      if (err.code === "NOT_FOUND") throw new TRPCError({ code: "NOT_FOUND", message: err.message });
      throw fieldError(err.code, err.field, err.message);
    }
    throw err;
  }
}

/** Alert targets (admins and owners): webhooks and Telegram chats that get server/route/subscriber events. */
export const alertsRouter = createTRPCRouter({
  list: adminProcedure.query(({ ctx }) => listAlertTargets(ctx.db)),
  create: adminProcedure.input(createAlertTargetSchema).mutation(({ ctx, input }) => mapped(() => createAlertTarget(ctx.db, ctx.operator, input))),
  update: adminProcedure.input(updateAlertTargetSchema).mutation(({ ctx, input }) => mapped(() => updateAlertTarget(ctx.db, ctx.operator, input))),
  delete: adminProcedure.input(z.object({ targetId: idSchema })).mutation(({ ctx, input }) => mapped(() => deleteAlertTarget(ctx.db, ctx.operator, input.targetId))),
  sendTest: adminProcedure.input(z.object({ targetId: idSchema })).mutation(({ ctx, input }) => mapped(() => sendTestAlert(ctx.db, ctx.operator, input.targetId))),
});
