/**
 * The process-wide database, opened (and migrated) on first use with the settings from the
 * environment. Opened lazily, because `next build` imports modules and must not touch a
 * database; the handle lives on globalThis so a module loaded twice (dev reloads) never opens
 * PGlite twice.
 */
import { openDatabase, type Database, type Db } from "@/db/client";
import { env } from "@/server/env";

const GLOBAL_KEY = Symbol.for("routeboard.database");
type GlobalWithDb = typeof globalThis & { [GLOBAL_KEY]?: Promise<Database> };

export function getDatabase(): Promise<Database> {
  const g = globalThis as GlobalWithDb;
  if (!g[GLOBAL_KEY]) {
    g[GLOBAL_KEY] = (async () => {
      const e = env();
      return openDatabase({ databaseUrl: e.DATABASE_URL, dataDir: e.DATA_DIR, poolSize: e.DATABASE_POOL_SIZE });
    })();
    g[GLOBAL_KEY].catch(() => {
      delete g[GLOBAL_KEY];
    });
  }
  return g[GLOBAL_KEY];
}

export async function getDb(): Promise<Db> {
  return (await getDatabase()).db;
}
