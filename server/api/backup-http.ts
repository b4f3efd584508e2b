/**
 * GET /api/backup: a consistent backup of the embedded database while the app runs (issue 27,
 * point 6), for `npm run backup`. PGlite is one process, so only the running app can dump it:
 * a copy of the data folder taken meanwhile would not be consistent. The answer is the file
 * db/backup.ts describes: the database and the secrets of DATA_DIR.
 *
 * `Authorization: Bearer` an API token with the `backup` scope whose creator is the owner now
 * (a backup holds every secret of the install); nothing else, and no cookie: a script's call.
 * On PostgreSQL it answers 409 naming pg_dump (README, "Backups and upgrades").
 */
import { TRPCError } from "@trpc/server";
import { encodeBackup, migrationTag, readDataFiles } from "@/db/backup";
import { authenticateApiToken } from "@/server/accounts/api-tokens";
import { recordAudit } from "@/server/audit";
import { getDatabase } from "@/server/db";
import { env } from "@/server/env";
import { bearerCredential, clientAddress } from "@/server/http/client";
import { sendJson, type RouteHandler } from "@/server/http/util";
import { logger } from "@/server/logger";

const HTTP_STATUS: Partial<Record<TRPCError["code"], number>> = { UNAUTHORIZED: 401, TOO_MANY_REQUESTS: 429 };

export const backupHandler: RouteHandler = async (req, res) => {
  const noStore = { "cache-control": "no-store" };
  if (req.method !== "GET") return sendJson(res, 405, { error: "GET only" }, { allow: "GET", ...noStore });
  const bearer = bearerCredential(req.headers.authorization);
  if (bearer === undefined) return sendJson(res, 401, { error: "Authorization: Bearer <API token with the backup scope> is required" }, { "www-authenticate": "Bearer", ...noStore });
  const database = await getDatabase();
  const auth = await authenticateApiToken(database.db, bearer, clientAddress(req, { trustProxy: env().TRUST_PROXY }));
  if (!auth.ok) {
    const retryAfter = (auth.error.cause as { retryAfter?: number } | undefined)?.retryAfter;
    return sendJson(res, HTTP_STATUS[auth.error.code] ?? 401, { error: auth.error.message }, { ...noStore, ...(retryAfter ? { "retry-after": String(retryAfter) } : {}) });
  }
  if (!auth.token.scopes.includes("backup")) return sendJson(res, 403, { error: `/api/backup needs the backup scope: this token has ${auth.token.scopes.join(", ")}` }, noStore);
  if (auth.operator.role !== "owner") return sendJson(res, 403, { error: "Only the owner's tokens may take backups: the operator who created this token is not the owner now" }, noStore);
  if (!database.dump) {
    return sendJson(res, 409, { error: "This install runs on PostgreSQL (DATABASE_URL): back it up with pg_dump, as the README says" }, noStore);
  }
  const { tarGz, migrationsApplied } = await database.dump();
  const body = encodeBackup({ createdAt: new Date().toISOString(), database: "pglite", files: readDataFiles(env().DATA_DIR), migration: migrationTag(migrationsApplied) }, tarGz);
  await recordAudit(database.db, auth.operator, {
    clusterId: null,
    action: "backup.create",
    entityType: "install",
    summary: `Took a backup (${body.length} bytes) with API token ${auth.token.name}`,
  });
  logger().info({ bytes: body.length, token: auth.token.name }, "backup taken");
  res.writeHead(200, {
    "content-type": "application/octet-stream",
    "content-length": String(body.length),
    "content-disposition": `attachment; filename="routeboard-${new Date().toISOString().slice(0, 10)}.backup"`,
    ...noStore,
  });
  res.end(body);
};
