/**
 * Opens the database: PGlite in a data directory, or PostgreSQL when a URL is given. Both run
 * the same migration folder at start. The process-wide handle built from the environment is
 * server/db.ts; this module takes its settings as arguments so db/ depends on nothing above it.
 */
import "server-only";
import { mkdirSync, accessSync, constants as fsConstants } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import * as schema from "./schema";

export type Schema = typeof schema;
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
/** A transaction or the database itself: both take the same queries. */
export type DbOrTx = Parameters<Parameters<Db["transaction"]>[0]>[0] | Db;

export interface Database {
  db: Db;
  kind: "pglite" | "postgres";
  /** Plain SQL for what drizzle does not cover (LISTEN/NOTIFY, advisory locks, health). */
  ping(): Promise<void>;
  /** PostgreSQL connection string, for a dedicated LISTEN client; undefined on PGlite. */
  url?: string;
  /**
   * PGlite only: its data folder as a gzipped tar, taken while no query runs (PGlite's
   * dumpDataDir holds its query lock), so it is consistent; and how many migrations it has.
   */
  dump?(): Promise<{ tarGz: Uint8Array; migrationsApplied: number }>;
  close(): Promise<void>;
}

/** The database could not be opened or migrated: start-up stops with this one line. */
export class DatabaseOpenError extends Error {
  override name = "DatabaseOpenError";
}

export const MIGRATIONS_FOLDER = path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations");

export interface OpenOptions {
  databaseUrl?: string;
  dataDir: string;
  migrate?: boolean;
  /** PostgreSQL only: connections of the app's pool (the health ping has one more of its own). Default 10. */
  poolSize?: number;
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  const database = opts.databaseUrl ? await openPostgres(opts.databaseUrl, opts.poolSize ?? 10) : await openPglite(opts.dataDir);
  if (opts.migrate !== false) {
    try {
      await runMigrations(database);
    } catch (err) {
      await database.close().catch(() => {});
      throw new DatabaseOpenError(`Database migration failed: ${(err as Error).message}`);
    }
  }
  return database;
}

async function openPglite(dataDir: string): Promise<Database> {
  const dir = path.resolve(dataDir, "pglite");
  try {
    mkdirSync(dir, { recursive: true });
    accessSync(dir, fsConstants.W_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "error";
    throw new DatabaseOpenError(
      `Data folder ${path.resolve(dataDir)} is not writable (${code}): set DATA_DIR to a folder this user can write, or set DATABASE_URL`,
    );
  }
  const { PGlite } = await import("@electric-sql/pglite");
  const { drizzle } = await import("drizzle-orm/pglite");
  let client: InstanceType<typeof PGlite>;
  try {
    client = new PGlite(dir);
    await client.waitReady;
  } catch (err) {
    throw new DatabaseOpenError(`Cannot open the embedded database in ${dir}: ${(err as Error).message}`);
  }
  const db = drizzle(client, { schema }) as unknown as Db;
  return {
    db,
    kind: "pglite",
    ping: async () => {
      await client.query("select 1");
    },
    dump: async () => {
      const applied = await client.query<{ n: number }>("select count(*)::int as n from drizzle.__drizzle_migrations");
      // Writes what is in the WAL into the tables first, so a restore starts without replaying it.
      await client.query("checkpoint");
      const blob = await client.dumpDataDir("gzip");
      return { tarGz: new Uint8Array(await blob.arrayBuffer()), migrationsApplied: applied.rows[0]?.n ?? 0 };
    },
    close: () => client.close(),
  };
}

async function openPostgres(url: string, poolSize: number): Promise<Database> {
  const pg = (await import("pg")).default;
  const { drizzle } = await import("drizzle-orm/node-postgres");
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: 5000 });
  // An idle client dying (database restart) must not crash the process; queries will retry.
  pool.on("error", () => {});
  try {
    await pool.query("select 1");
  } catch (err) {
    await pool.end().catch(() => {});
    throw new DatabaseOpenError(`Cannot reach the database at ${describeUrl(url)} (${describeError(err)}): check DATABASE_URL and that PostgreSQL is running`);
  }
  const db = drizzle(pool, { schema }) as unknown as Db;
  // Its own connection: /api/health says whether the database answers, and must not wait for
  // one of those the app's work holds (under a thousand agents' reports it did, for seconds).
  const pingPool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 5000 });
  pingPool.on("error", () => {});
  return {
    db,
    kind: "postgres",
    url,
    ping: async () => {
      await pingPool.query("select 1");
    },
    close: async () => {
      await Promise.all([pool.end(), pingPool.end()]);
    },
  };
}

async function runMigrations(database: Database): Promise<void> {
  if (database.kind === "pglite") {
    const { migrate } = await import("drizzle-orm/pglite/migrator");
    await migrate(database.db as never, { migrationsFolder: MIGRATIONS_FOLDER });
    return;
  }
  const { migrate } = await import("drizzle-orm/node-postgres/migrator");
  const { sql } = await import("drizzle-orm");
  // Several instances may start together: one migrates, the others wait for it.
  await database.db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(727274001)`);
    await migrate(tx as never, { migrationsFolder: MIGRATIONS_FOLDER });
  });
}

function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || 5432}${u.pathname}`;
  } catch {
    return "DATABASE_URL";
  }
}

export function describeError(err: unknown): string {
  const e = err as { code?: string; message?: string; errors?: unknown[] };
  if (e.code && /^[A-Z]/.test(e.code)) return e.code;
  if (Array.isArray(e.errors) && e.errors.length > 0) return describeError(e.errors[0]);
  return e.message ?? String(err);
}
