/**
 * Test databases: a fresh PGlite in a temporary folder always, and a fresh database on the
 * real PostgreSQL server when TEST_DATABASE_URL is set (scripts/test.sh starts one).
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openDatabase, type Database } from "./client";

export interface TestDatabase extends Database {
  dispose(): Promise<void>;
}

export type TestDbKind = "pglite" | "postgres";

export function testDbKinds(): TestDbKind[] {
  return process.env.TEST_DATABASE_URL ? ["pglite", "postgres"] : ["pglite"];
}

export async function openTestDatabase(kind: TestDbKind): Promise<TestDatabase> {
  if (kind === "pglite") {
    const dir = mkdtempSync(path.join(os.tmpdir(), "rb-pglite-"));
    const database = await openDatabase({ dataDir: dir });
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
  const database = await openDatabase({ databaseUrl: url.toString(), dataDir: os.tmpdir() });
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
