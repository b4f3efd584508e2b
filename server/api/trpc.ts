/**
 * tRPC setup: the context of a request, and the three kinds of procedure. Every procedure
 * except setup and login needs a session (401 otherwise); writes need admin or owner (403).
 */
import "server-only";
import type { IncomingMessage, ServerResponse } from "node:http";
import { initTRPC, TRPCError } from "@trpc/server";
import superjson from "superjson";
import { ZodError } from "zod";
import { getDatabase, type Db } from "@/db/client";
import { findSession, readCookie, SESSION_COOKIE, type SessionOperator } from "@/server/auth/sessions";
import { isDatabaseDown, DATABASE_DOWN_MESSAGE } from "@/server/db-errors";
import { env } from "@/server/env";
import { clientAddress, isHttps, type ProxyTrust } from "@/server/http/client";

export interface Context {
  db: Db;
  /** The session could not be checked because the database is unreachable. */
  databaseDown?: boolean;
  operator: SessionOperator | null;
  clientAddress: string;
  userAgent: string | undefined;
  secureCookies: boolean;
  setCookie(cookie: string): void;
}

export async function createContext(
  { req, res }: { req: IncomingMessage; res: ServerResponse },
  trust: ProxyTrust = { trustProxy: env().TRUST_PROXY },
): Promise<Context> {
  const database = await getDatabase();
  const token = readCookie(req.headers.cookie, SESSION_COOKIE);
  let operator: SessionOperator | null = null;
  let databaseDown = false;
  try {
    operator = await findSession(database.db, token);
  } catch (err) {
    if (!isDatabaseDown(err)) throw err;
    // The session cannot be checked: procedures say the database is away, not "log in".
    databaseDown = true;
  }
  const cookies: string[] = [];
  return {
    db: database.db,
    databaseDown,
    operator,
    clientAddress: clientAddress(req, trust),
    userAgent: req.headers["user-agent"],
    secureCookies: isHttps(req, trust),
    setCookie(cookie) {
      cookies.push(cookie);
      res.setHeader("set-cookie", cookies);
    },
  };
}

// Stack traces and 500 messages only in development; operators and scripts get the message.
const isDev = process.env.NODE_ENV === "development";

const t = initTRPC.context<Context>().create({
  transformer: superjson,
  isDev,
  errorFormatter({ shape, error }) {
    const zod = error.cause instanceof ZodError ? error.cause : null;
    const first = zod?.issues[0];
    // An input refused by its schema: tRPC's message is then the issues as JSON. Scripts and
    // API clients read the message, so it names the first field in words ("input" = root).
    // A 500's message is the thrown error's, e.g. "Failed query: insert into … params: …":
    // it stays in the server log (server/http/trpc.ts), clients get a plain sentence.
    const internal = error.code === "INTERNAL_SERVER_ERROR" && !isDev;
    const message = internal
      ? "Something went wrong on the server; the error is in its log"
      : zod && first && error.message === zod.message
        ? `${first.path.join(".") || "input"}: ${first.message}`
        : shape.message;
    return {
      ...shape,
      message,
      data: {
        ...shape.data,
        // Field → message, so forms show each message next to its field.
        fieldErrors: zod ? Object.fromEntries(zod.issues.map((i) => [i.path.join("."), i.message])) : null,
      },
    };
  },
});

export const createTRPCRouter = t.router;
export const createCallerFactory = t.createCallerFactory;

/** A database that went away becomes a clear 503, not a stack trace. */
const databaseErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok && isDatabaseDown(result.error.cause ?? result.error)) {
    throw new TRPCError({ code: "SERVICE_UNAVAILABLE", message: DATABASE_DOWN_MESSAGE, cause: result.error });
  }
  return result;
});

export const publicProcedure = t.procedure.use(databaseErrors);

export const protectedProcedure = publicProcedure.use(({ ctx, next }) => {
  if (ctx.databaseDown) throw new TRPCError({ code: "SERVICE_UNAVAILABLE", message: DATABASE_DOWN_MESSAGE });
  if (!ctx.operator) throw new TRPCError({ code: "UNAUTHORIZED", message: "Please log in" });
  return next({ ctx: { ...ctx, operator: ctx.operator } });
});

/** Changes: admins and owners only; viewers see everything but change nothing. */
export const adminProcedure = protectedProcedure.use(({ ctx, next }) => {
  if (ctx.operator.role === "viewer") {
    throw new TRPCError({ code: "FORBIDDEN", message: "Viewers cannot change anything: ask an admin" });
  }
  return next({ ctx });
});

export const ownerProcedure = protectedProcedure.use(({ ctx, next }) => {
  if (ctx.operator.role !== "owner") throw new TRPCError({ code: "FORBIDDEN", message: "Only the owner can do this" });
  return next({ ctx });
});
