/**
 * POST /api/import: subscribers from another panel's file (server/import/engine.ts), for the
 * dashboard's Import dialog and `npm run import`. The body is the file itself (up to
 * MAX_IMPORT_BYTES, counted as it streams in: a tRPC body is capped at a megabyte); the query
 * says what it is:
 *
 *   ?cluster=<id>&from=marzban|remnawave|3x-ui|csv[&dryRun=1][&prefix=/sub/][&host=sub.example.com]
 *   X-Marzban-Secret: <secret>   (Marzban API JSON only; a header, so it stays out of access logs)
 *
 * Who: a signed-in admin or owner (the browser origin check of every cookie-carrying write),
 * or an API token with the subscribers:write scope whose creator is not a viewer; viewers
 * are refused. Answers the report as JSON: 200 (dry run, or imported), 422 (rows refused:
 * nothing written), 4xx with {"error"} otherwise.
 */
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { publishAfterCommit } from "@/server/changes";
import { checkOrigin, bearerCredential } from "@/server/http/client";
import { sendJson, type RouteHandler } from "@/server/http/util";
import { env } from "@/server/env";
import { logger } from "@/server/logger";
import { importSubscribers, MAX_IMPORT_BYTES } from "@/server/import/engine";
import { IMPORT_SOURCES } from "@/server/import/rows";
import { twoFactorRequired } from "@/server/accounts/two-factor";
import { createContext, TWO_FACTOR_SETUP_MESSAGE } from "./trpc";

const STATUS: Partial<Record<TRPCError["code"], number>> = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  TOO_MANY_REQUESTS: 429,
  SERVICE_UNAVAILABLE: 503,
};

const querySchema = z.object({
  cluster: z.uuid({ error: "cluster must be a cluster id" }),
  from: z.enum(IMPORT_SOURCES, { error: `from must be one of ${IMPORT_SOURCES.join(", ")}` }),
  dryRun: z.enum(["0", "1", "true", "false"], { error: "dryRun must be 1 or 0" }).optional(),
  prefix: z.string().max(200).optional(),
  host: z.string().max(253).optional(),
});

const noStore = { "cache-control": "no-store" };

function fail(res: Parameters<RouteHandler>[1], code: TRPCError["code"], message: string, headers: Record<string, string> = {}) {
  sendJson(res, STATUS[code] ?? 500, { error: message }, { ...noStore, ...headers });
}

export const importHandler: RouteHandler = async (req, res, url) => {
  if (req.method !== "POST") return fail(res, "BAD_REQUEST", "POST the file to import", { allow: "POST" });
  const trust = { trustProxy: env().TRUST_PROXY };
  // A cookie is a credential the browser attaches on its own: the same origin check as tRPC writes.
  if (bearerCredential(req.headers.authorization) === undefined) {
    const origin = checkOrigin(req, trust);
    if (!origin.ok) return fail(res, "FORBIDDEN", origin.reason);
  }
  const ctx = await createContext({ req, res }, trust);
  if (ctx.apiTokenError) return fail(res, ctx.apiTokenError.code, ctx.apiTokenError.message);
  if (ctx.databaseDown) return fail(res, "SERVICE_UNAVAILABLE", "The database is unreachable");
  if (!ctx.operator) return fail(res, "UNAUTHORIZED", "Please log in, or send Authorization: Bearer <API token with the subscribers:write scope>", { "www-authenticate": "Bearer" });
  if (ctx.apiToken && !ctx.apiToken.scopes.includes("subscribers:write")) return fail(res, "FORBIDDEN", `/api/import needs the subscribers:write scope: this token has ${ctx.apiToken.scopes.join(", ")}`);
  if (ctx.operator.role === "viewer") return fail(res, "FORBIDDEN", ctx.apiToken ? "The operator who created this token is a viewer now: it can only read" : "Viewers cannot change anything: ask an admin");
  if (!ctx.apiToken && !ctx.operator.twoFactor && (await twoFactorRequired(ctx.db))) return fail(res, "FORBIDDEN", TWO_FACTOR_SETUP_MESSAGE);

  const query = querySchema.safeParse(Object.fromEntries(url.searchParams));
  if (!query.success) return fail(res, "BAD_REQUEST", query.error.issues[0]!.message);
  const length = Number(req.headers["content-length"]);
  if (Number.isFinite(length) && length > MAX_IMPORT_BYTES) return fail(res, "PAYLOAD_TOO_LARGE", `The file is ${length} bytes: at most ${MAX_IMPORT_BYTES} per run (split it)`, { connection: "close" });
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_IMPORT_BYTES) {
      req.destroy();
      return fail(res, "PAYLOAD_TOO_LARGE", `The file is larger than ${MAX_IMPORT_BYTES} bytes: at most that per run (split it)`, { connection: "close" });
    }
    parts.push(chunk as Buffer);
  }
  const secretHeader = req.headers["x-marzban-secret"];
  const q = query.data;
  try {
    const report = await publishAfterCommit(
      importSubscribers(ctx.db, ctx.operator, {
        clusterId: q.cluster,
        source: q.from,
        bytes: Buffer.concat(parts),
        dryRun: q.dryRun === "1" || q.dryRun === "true",
        legacyPrefix: q.prefix || null,
        legacyHost: q.host || null,
        marzbanSecret: typeof secretHeader === "string" && secretHeader !== "" ? secretHeader : null,
      }),
    );
    sendJson(res, report.errorCount > 0 ? 422 : 200, report, noStore);
  } catch (err) {
    if (err instanceof TRPCError && STATUS[err.code]) return fail(res, err.code, err.message);
    logger().error({ err }, "import failed");
    fail(res, "INTERNAL_SERVER_ERROR", "The import failed on the server; nothing was written (the error is in its log)");
  }
};
