/**
 * The one error mapper: recognises driver errors (the database is away, a unique or foreign-key
 * constraint was hit) and turns domain errors into the tRPC errors clients act on.
 */
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { NotFoundError, StaleDataError } from "./errors";

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

/**
 * An error as it may be logged: never a query's values. Drizzle's "Failed query: … params: …"
 * message (and every wrapper's copy of it, tRPC's included) keeps the SQL and loses the
 * values; the driver's `params`/`parameters`, `detail` ("Key (name)=(…) already exists"),
 * `where`, `internalQuery` and every other field not listed below are left out, and a data
 * exception's message ("invalid input syntax for type uuid: "…"") loses the value it quotes.
 * Causes are followed (at most 5 deep). Strings (callers logging `err.message`) are scrubbed too.
 */
export function loggableError(err: unknown, depth = 0): unknown {
  if (typeof err === "string") return scrubQueryValues(err);
  if (!err || typeof err !== "object") return err;
  const e = err as Record<string, unknown> & { message?: unknown; stack?: unknown; name?: unknown };
  const raw = typeof e.message === "string" ? e.message : "";
  const code = typeof e.code === "string" ? e.code : undefined;
  const message = scrubQueryValues(raw, code);
  const out: Record<string, unknown> = { type: err.constructor?.name ?? "Object", message };
  for (const k of LOGGABLE_FIELDS) if (typeof e[k] === "string" || typeof e[k] === "number") out[k] = e[k];
  if (typeof e.stack === "string") out.stack = scrubStack(e.stack, raw, message);
  if (e.cause !== undefined && depth < 5) out.cause = loggableError(e.cause, depth + 1);
  if (Array.isArray(e.errors) && depth < 5) out.errors = e.errors.slice(0, 5).map((x) => loggableError(x, depth + 1));
  return out;
}

/** Fields of driver and tRPC errors that say what failed, never with which values. */
const LOGGABLE_FIELDS = ["name", "code", "severity", "constraint", "table", "column", "schema", "dataType", "routine", "query", "errno", "syscall", "address", "port"] as const;

const PARAMS_MARK = "\nparams: ";

/** Drizzle's "\nparams: …" and everything after it go; a data exception's quoted value too. */
export function scrubQueryValues(s: string, code?: string): string {
  let out = s;
  const at = out.indexOf(PARAMS_MARK);
  if (at >= 0) out = `${out.slice(0, at)}${PARAMS_MARK}[not logged]`;
  // Class 22 (data exception) messages end by quoting the value: `…for type uuid: "…"`.
  if (code?.startsWith("22")) out = out.replace(/: ".*$/s, ": [value not logged]");
  return out;
}

function scrubStack(stack: string, rawMessage: string, message: string): string {
  if (rawMessage === message) return stack;
  const at = rawMessage ? stack.indexOf(rawMessage) : -1;
  if (at >= 0) return stack.slice(0, at) + message + stack.slice(at + rawMessage.length);
  // The message is not where expected: keep only the frames.
  return [message, ...stack.split("\n").filter((l) => /^\s+at /.test(l))].join("\n");
}
