/**
 * tRPC setup: the context of a request, and the kinds of procedure. Every procedure
 * except setup and login needs a session or an API token (401 otherwise); writes need admin
 * or owner (403). An API token may call a procedure only if the procedure declares a scope
 * the token has (ProcedureMeta.scope); owner-only procedures refuse every token.
 */
import "server-only";
import type { IncomingMessage, ServerResponse } from "node:http";
import { initTRPC, TRPCError } from "@trpc/server";
import superjson from "superjson";
import { ZodError } from "zod";
import { type Db } from "@/db/client";
import type { ApiScope } from "@/core/api-tokens";
import { getDatabase } from "@/server/db";
import { findSession, readCookie, SESSION_COOKIE, type SessionOperator } from "@/server/auth/sessions";
import { DEVICE_COOKIE } from "@/server/auth/device";
import { fieldError, isDatabaseDown, DATABASE_DOWN_MESSAGE } from "@/server/db-errors";
import { findBadText } from "@/core/text-safety";
import { authenticateApiToken, type ApiTokenPrincipal } from "@/server/accounts/api-tokens";
import { twoFactorRequired } from "@/server/accounts/two-factor";
import { env } from "@/server/env";
import { bearerCredential, clientAddress, isHttps, type ProxyTrust } from "@/server/http/client";
import { TokenBuckets } from "@/server/dataplane/rate-limit";

export interface Context {
  db: Db;
  /** The session could not be checked because the database is unreachable. */
  databaseDown?: boolean;
  /** The operator of the session, or for an API token "token:<name>" with its creator's role. */
  operator: SessionOperator | null;
  /** Set when the request came with `Authorization: Bearer` and the token is good. */
  apiToken?: ApiTokenPrincipal | null;
  /** Why the request's bearer token was refused (401, or 429 while throttled). */
  apiTokenError?: TRPCError | null;
  clientAddress: string;
  /** The rb_device cookie (server/auth/device.ts), read for login throttling; never with a bearer token. */
  deviceCookie?: string;
  userAgent: string | undefined;
  secureCookies: boolean;
  setCookie(cookie: string): void;
}

/**
 * What an API token needs to call a procedure. Session callers are not affected.
 * - a scope: the token must have it (`read` never opens a mutation);
 * - "owner": no token, whatever its scopes (the team, passwords, API tokens themselves);
 * - absent on a mutation: no token either, so a write nobody declared stays closed.
 */
export interface ProcedureMeta {
  scope?: ApiScope | "owner";
  /**
   * Open to a signed-in operator who has no second factor while the owner requires one
   * (enrolling, who am I, logging out): everything else answers 403 until they enrol.
   */
  enrolment?: boolean;
}

export async function createContext(
  { req, res }: { req: IncomingMessage; res: ServerResponse },
  trust: ProxyTrust = { trustProxy: env().TRUST_PROXY },
): Promise<Context> {
  const database = await getDatabase();
  const address = clientAddress(req, trust);
  // A request with a bearer token is that token and nothing else: its cookies are not read,
  // which is what lets such requests skip the browser origin check (server/api/trpc-http.ts).
  const bearer = bearerCredential(req.headers.authorization);
  let operator: SessionOperator | null = null;
  let apiToken: ApiTokenPrincipal | null = null;
  let apiTokenError: TRPCError | null = null;
  let databaseDown = false;
  try {
    if (bearer !== undefined) {
      const auth = await authenticateApiToken(database.db, bearer, address);
      if (auth.ok) ({ operator, token: apiToken } = auth);
      else apiTokenError = auth.error;
    } else {
      operator = await findSession(database.db, readCookie(req.headers.cookie, SESSION_COOKIE));
    }
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
    apiToken,
    apiTokenError,
    clientAddress: address,
    deviceCookie: bearer === undefined ? readCookie(req.headers.cookie, DEVICE_COOKIE) : undefined,
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

/** Keys superjson will not serialize (it throws, and the answer would be a 500). */
const PROTOTYPE_KEYS = new Set(["__proto__", "constructor", "prototype"]);

const t = initTRPC.context<Context>().meta<ProcedureMeta>().create({
  transformer: superjson,
  isDev,
  errorFormatter({ shape, error }) {
    const zod = error.cause instanceof ZodError ? error.cause : null;
    const first = zod?.issues[0];
    // An input refused by its schema: tRPC's message is then the issues as JSON. Scripts and
    // API clients read the message, so it names the first field in words ("input" = root).
    // A 500's message is the thrown error's, e.g. "Failed query: insert into … params: …":
    // it stays in the server log (server/api/trpc-http.ts), clients get a plain sentence.
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
        // superjson refuses to send an object with a key it takes for prototype pollution
        // (a field named "constructor" in a hostile input): such a field is named in the message only.
        fieldErrors: zod ? Object.fromEntries(zod.issues.map((i) => [i.path.join("."), i.message]).filter(([field]) => !PROTOTYPE_KEYS.has(field!))) : null,
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

/** A bearer token that was refused refuses the whole request, public procedures included. */
const refusedToken = t.middleware(({ ctx, next }) => {
  if (ctx.apiTokenError) throw ctx.apiTokenError;
  return next();
});

/**
 * No string of any input may hold U+0000 or a lone surrogate (core/text-safety.ts): refused
 * here, before the procedure's schema runs (every `.input()` comes after this middleware in
 * the chain), with a 400 naming the field, e.g. "search: contains a NUL byte (U+0000)".
 */
const refuseBadText = t.middleware(async ({ getRawInput, next }) => {
  const bad = findBadText(await getRawInput());
  if (bad) {
    const field = bad.path || "input";
    const { cause } = fieldError("BAD_REQUEST", bad.path, bad.reason[0]!.toUpperCase() + bad.reason.slice(1));
    throw new TRPCError({ code: "BAD_REQUEST", message: `${field}: ${bad.reason}`, cause });
  }
  return next();
});

export const publicProcedure = t.procedure.use(databaseErrors).use(refusedToken).use(refuseBadText);

/** Why an API token may not call this procedure, or null if it may. */
export function tokenRefusal(token: ApiTokenPrincipal, meta: ProcedureMeta | undefined, type: "query" | "mutation" | "subscription", path: string): string | null {
  const scope = meta?.scope;
  if (scope === "owner") return `Owner only: API tokens cannot call ${path}, whatever their scopes`;
  if (!scope || (scope === "read" && type === "mutation")) return `${path} is not open to API tokens: sign in to the dashboard`;
  if (!token.scopes.includes(scope)) return `${path} needs the ${scope} scope: this token has ${token.scopes.join(", ")}`;
  return null;
}

/** Said to an operator without a second factor while the owner requires one; the dashboard then shows the enrolment. */
export const TWO_FACTOR_SETUP_MESSAGE = "The owner requires two-factor authentication: set it up first";

/** Signed in, or an API token whose scopes include the procedure's (ProcedureMeta). */
export const protectedProcedure = publicProcedure.meta({ scope: "read" }).use(async ({ ctx, meta, type, path, next }) => {
  if (ctx.databaseDown) throw new TRPCError({ code: "SERVICE_UNAVAILABLE", message: DATABASE_DOWN_MESSAGE });
  if (!ctx.operator) throw new TRPCError({ code: "UNAUTHORIZED", message: "Please log in" });
  if (ctx.apiToken) {
    const refusal = tokenRefusal(ctx.apiToken, meta, type, path);
    if (refusal) throw new TRPCError({ code: "FORBIDDEN", message: refusal });
  } else if (!ctx.operator.twoFactor && !meta?.enrolment && (await twoFactorRequired(ctx.db))) {
    throw new TRPCError({ code: "FORBIDDEN", message: TWO_FACTOR_SETUP_MESSAGE });
  }
  return next({ ctx: { ...ctx, operator: ctx.operator } });
});

/**
 * Changes: admins and owners only; viewers see everything but change nothing. API tokens
 * only where a write scope is declared: the builders below, or `.meta({ scope })`.
 */
export const adminProcedure = protectedProcedure.meta({ scope: undefined }).use(({ ctx, next }) => {
  if (ctx.operator.role === "viewer") {
    const message = ctx.apiToken ? "The operator who created this token is a viewer now: it can only read" : "Viewers cannot change anything: ask an admin";
    throw new TRPCError({ code: "FORBIDDEN", message });
  }
  return next({ ctx });
});

/** Subscriber changes: open to API tokens with `subscribers:write`. */
export const subscribersWriteProcedure = adminProcedure.meta({ scope: "subscribers:write" });
/** Cluster, server, inbound, route and probe changes: open to API tokens with `topology:write`. */
export const topologyWriteProcedure = adminProcedure.meta({ scope: "topology:write" });

export const ownerProcedure = protectedProcedure.meta({ scope: "owner" }).use(({ ctx, next }) => {
  // Also refused here, not only by the scope check: an owner's token is still not the owner.
  if (ctx.apiToken) throw new TRPCError({ code: "FORBIDDEN", message: "Owner only: API tokens cannot call this, whatever their scopes" });
  if (ctx.operator.role !== "owner") throw new TRPCError({ code: "FORBIDDEN", message: "Only the owner can do this" });
  return next({ ctx });
});

/**
 * List queries (the subscribers list and its search) per session, or per API token: a burst of
 * LIST_QUERY_BURST, refilled at LIST_QUERY_REFILL_PER_S. Typing in the search box, paging and
 * filtering stay far below it; a script walking the list thousands of times does not. Kept in
 * memory per instance (each instance of a scale-out counts its own requests).
 */
export const LIST_QUERY_BURST = 60;
export const LIST_QUERY_REFILL_PER_S = 4;
const LIST_LIMITS_KEY = Symbol.for("routeboard.listQueryLimits");
export function listQueryLimits(): TokenBuckets {
  const g = globalThis as typeof globalThis & { [LIST_LIMITS_KEY]?: TokenBuckets };
  g[LIST_LIMITS_KEY] ??= new TokenBuckets();
  return g[LIST_LIMITS_KEY];
}

/** A query over a list: protectedProcedure, rate-limited per session (see listQueryLimits). */
export const listQueryProcedure = protectedProcedure.use(({ ctx, next }) => {
  const retryAfter = listQueryLimits().take(ctx.operator.sessionId, LIST_QUERY_BURST, LIST_QUERY_REFILL_PER_S);
  if (retryAfter > 0) {
    throw new TRPCError({
      code: "TOO_MANY_REQUESTS",
      message: `Too many list queries from this session (at most ${LIST_QUERY_BURST} at once, then ${LIST_QUERY_REFILL_PER_S} a second): try again in ${retryAfter} s`,
      cause: { retryAfter },
    });
  }
  return next();
});
