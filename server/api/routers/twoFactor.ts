import { z } from "zod";
import { beginEnrolment, confirmEnrolment, disableTwoFactor, twoFactorStatus } from "@/server/accounts/two-factor";
import { publishAfterCommit } from "@/server/changes";
import { createTRPCRouter, protectedProcedure } from "../trpc";

/**
 * An operator's own second factor (issue 27, point 5). Signed-in operators only, never an API
 * token ("owner" scope), and open while the owner requires a second factor they lack.
 */
const ownProcedure = protectedProcedure.meta({ scope: "owner", enrolment: true });
const codeSchema = z.object({ code: z.string().max(64, "Code must be at most 64 characters") });

export const twoFactorRouter = createTRPCRouter({
  status: ownProcedure.query(({ ctx }) => twoFactorStatus(ctx.db, ctx.operator.operatorId)),

  /** A new secret (text and the otpauth URI its QR code holds); not in effect until confirmed. */
  begin: ownProcedure.mutation(({ ctx }) => beginEnrolment(ctx.db, ctx.operator)),

  /** A code from the new secret turns it on; the answer holds the ten recovery codes, shown once. */
  confirm: ownProcedure.input(codeSchema).mutation(({ ctx, input }) => publishAfterCommit(confirmEnrolment(ctx.db, ctx.operator, input, ctx.clientAddress))),

  /** Turns it off with a current code or a recovery code (refused while the owner requires it). */
  disable: ownProcedure.input(codeSchema).mutation(({ ctx, input }) => publishAfterCommit(disableTwoFactor(ctx.db, ctx.operator, input, ctx.clientAddress))),
});
