/**
 * Test databases: a fresh PGlite in a temporary folder always (a copy of a template folder
 * when vitest's global setup made one), and a fresh database on the real PostgreSQL server
 * when TEST_DATABASE_URL is set (scripts/test.sh starts one).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { MIGRATIONS_FOLDER, openDatabase, type Database } from "./client";
import { pgliteTemplateDir } from "./pglite-template";

export interface TestDatabase extends Database {
  dispose(): Promise<void>;
}

export type TestDbKind = "pglite" | "postgres";

export function testDbKinds(): TestDbKind[] {
  return process.env.TEST_DATABASE_URL ? ["pglite", "postgres"] : ["pglite"];
}

/** A fresh database of that kind; `migrate: false` leaves it empty (see openTestDatabaseBefore). */
export async function openTestDatabase(kind: TestDbKind, opts: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const migrate = opts.migrate ?? true;
  if (kind === "pglite") {
    const dir = mkdtempSync(path.join(os.tmpdir(), "rb-pglite-"));
    // A copy of a data folder made once per run spares the initdb (see pglite-template.ts).
    const template = pgliteTemplateDir(migrate ? "migrated" : "empty");
    if (template) cpSync(template, dir, { recursive: true });
    const database = await openDatabase({ dataDir: dir, migrate });
    return {
      ...database,
      dispose: async () => {
        await database.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) throw new Error("TEST_DATABASE_URL is not set");
  const pg = (await import("pg")).default;
  const name = `rb_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const database = await openDatabase({ databaseUrl: url.toString(), dataDir: os.tmpdir(), migrate });
  return {
    ...database,
    dispose: async () => {
      await database.close();
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

/** Runs the migrations of `folder` that the database has not run yet. */
export async function migrateTestDatabase(database: Database, folder = MIGRATIONS_FOLDER): Promise<void> {
  if (database.kind === "pglite") await (await import("drizzle-orm/pglite/migrator")).migrate(database.db as never, { migrationsFolder: folder });
  else await (await import("drizzle-orm/node-postgres/migrator")).migrate(database.db as never, { migrationsFolder: folder });
}

/**
 * A database migrated up to, not including, the migration whose tag starts with `tag`, as an
 * install from before it: a test writes old rows, then `migrateRest()` runs the rest.
 */
export async function openTestDatabaseBefore(kind: TestDbKind, tag: string): Promise<TestDatabase & { migrateRest(): Promise<void> }> {
  const folder = mkdtempSync(path.join(os.tmpdir(), "rb-migrations-"));
  cpSync(MIGRATIONS_FOLDER, folder, { recursive: true });
  const journalPath = path.join(folder, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: Array<{ tag: string }> };
  const cut = journal.entries.findIndex((e) => e.tag.startsWith(tag));
  if (cut < 0) throw new Error(`no migration ${tag}`);
  writeFileSync(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, cut) }));
  const t = await openTestDatabase(kind, { migrate: false });
  await migrateTestDatabase(t, folder);
  return {
    ...t,
    migrateRest: () => migrateTestDatabase(t),
    dispose: async () => {
      await t.dispose();
      rmSync(folder, { recursive: true, force: true });
    },
  };
}
