/** DATABASE_POOL_SIZE reaches the pool: an instance never holds more connections than it says. */
import os from "node:os";
import { sql } from "drizzle-orm";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "./client";
import { rowsOf } from "./rows";
import { openTestDatabase, type TestDatabase } from "./testing";

describe.runIf(process.env.TEST_DATABASE_URL)("the PostgreSQL pool's size", () => {
  let t: TestDatabase | undefined;
  let small: Database | undefined;
  afterAll(async () => {
    await small?.close();
    await t?.dispose();
  });

  it("runs at most poolSize queries at once, the rest waiting for a connection", async () => {
    t = await openTestDatabase("postgres", { migrate: false });
    small = await openDatabase({ databaseUrl: t.url!, dataDir: os.tmpdir(), migrate: false, poolSize: 2 });
    const db = small.db;
    // Each query counts the queries running in this database while it runs (itself included),
    // and sleeps a little so that they overlap as far as the pool lets them.
    const counts = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const [row] = rowsOf<{ n: number }>(
          await db.execute(sql`select (select count(*)::int from pg_stat_activity where datname = current_database() and state = 'active' and backend_type = 'client backend') as n, pg_sleep(0.05)`),
        );
        return row!.n;
      }),
    );
    expect(Math.max(...counts)).toBeLessThanOrEqual(2);
    expect(Math.min(...counts)).toBeGreaterThanOrEqual(1);
  });
});
