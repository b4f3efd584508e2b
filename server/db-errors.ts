/**
 * The one error mapper: recognises driver errors (the database is away, a unique or foreign-key
 * constraint was hit) and turns domain errors into the tRPC errors clients act on.
 */
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { NotFoundError, StaleDataError } from "@/server/domain/errors";

/** Recognises "the database is not there" among driver errors, at any depth of `cause`. */
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EPIPE",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
  "08000",
  "08003",
  "08006",
  "08001",
  "08004",
]);

export const DATABASE_DOWN_MESSAGE = "The database is unavailable right now: nothing was saved. Try again in a moment.";

export function isDatabaseDown(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== "object" || depth > 5) return false;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown[] };
  if (typeof e.code === "string" && CONNECTION_CODES.has(e.code)) return true;
  if (typeof e.message === "string" && /Connection terminated|connect ECONNREFUSED|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(e.message)) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isDatabaseDown(x, depth + 1))) return true;
  return isDatabaseDown(e.cause, depth + 1);
}

function pgCode(err: unknown, depth = 0): string | undefined {
  if (!err || typeof err !== "object" || depth > 5) return undefined;
  const e = err as { code?: unknown; cause?: unknown };
  if (typeof e.code === "string" && /^[0-9A-Z]{5}$/.test(e.code)) return e.code;
  return pgCode(e.cause, depth + 1);
}

/**
 * A deadlock (40P01) or serialization failure (40001): PostgreSQL rolled the transaction back,
 * and running it again is expected to succeed.
 */
export function isTransactionConflict(err: unknown): boolean {
  const code = pgCode(err);
  return code === "40P01" || code === "40001";
}

/** The name of the unique constraint or index a write ran into, or undefined. */
export function uniqueViolation(err: unknown): string | true | undefined {
  if (pgCode(err) !== "23505") return undefined;
  let e: unknown = err;
  for (let i = 0; i < 6 && e && typeof e === "object"; i++) {
    const c = (e as { constraint?: unknown }).constraint;
    if (typeof c === "string") return c;
    e = (e as { cause?: unknown }).cause;
  }
  return true;
}

export function foreignKeyViolation(err: unknown): boolean {
  return pgCode(err) === "23503";
}

/**
 * An error that belongs to one form field. The cause is a ZodError, so tRPC's errorFormatter
 * puts the message in data.fieldErrors and the form shows it next to that field, exactly as
 * for a validation failure.
 */
export function fieldError(code: TRPCError["code"], field: string, message: string): TRPCError {
  const cause = z
    .any()
    .superRefine((_v, ctx) => ctx.addIssue({ code: "custom", path: [field], message }))
    .safeParse(null).error;
  return new TRPCError({ code, message, cause });
}

/** Domain errors as the tRPC codes clients act on; anything else unchanged. */
export function toTrpcError(err: unknown): unknown {
  if (err instanceof NotFoundError) return new TRPCError({ code: "NOT_FOUND", message: err.message, cause: err });
  if (err instanceof StaleDataError) return new TRPCError({ code: "CONFLICT", message: err.message, cause: err });
  return err;
}
