/**
 * Errors that belong to one form field. The cause is a ZodError, so tRPC's errorFormatter
 * puts the message in data.fieldErrors and the form shows it next to that field, exactly as
 * for a validation failure.
 */
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { NotFoundError, StaleDataError } from "@/server/domain/moves";

export function fieldError(code: TRPCError["code"], field: string, message: string): TRPCError {
  const cause = z
    .any()
    .superRefine((_v, ctx) => ctx.addIssue({ code: "custom", path: [field], message }))
    .safeParse(null).error;
  return new TRPCError({ code, message, cause });
}

/** Domain errors of moves.ts as tRPC errors. */
export function domainError(err: unknown): unknown {
  if (err instanceof NotFoundError) return new TRPCError({ code: "NOT_FOUND", message: err.message });
  if (err instanceof StaleDataError) return new TRPCError({ code: "CONFLICT", message: err.message });
  return err;
}
