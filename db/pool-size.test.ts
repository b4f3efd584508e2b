/** DATABASE_POOL_SIZE reaches the pool: an instance never holds more connections than it says. */
import os from "node:os";
import { sql } from "drizzle-orm";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "./client";
import { rowsOf } from "./rows";
import { openTestDatabase, type TestDatabase } from "./testing";

const APP = "rb-pool-size-test";

describe.runIf(process.env.TEST_DATABASE_URL)("the PostgreSQL pool's size", () => {
  let t: TestDatabase | undefined;
  let small: Database | undefined;
  afterAll(async () => {
    await small?.close();
    await t?.dispose();
  });

  it("runs at most poolSize queries at once, the rest waiting for a connection", async () => {
    t = await openTestDatabase("postgres", { migrate: false });
    const url = new URL(t.url!);
    url.searchParams.set("application_name", APP);
    small = await openDatabase({ databaseUrl: url.toString(), dataDir: os.tmpdir(), migrate: false, poolSize: 2 });
    const admin = t.db;
    const count = async (extra: ReturnType<typeof sql>) =>
      rowsOf<{ n: number }>(await admin.execute(sql`select count(*)::int as n from pg_stat_activity where application_name = ${APP} ${extra}`))[0]!.n;
    let queries: Array<Promise<number>> = [];
    // Eight queries wait on a lock held here; while they wait, the pool has opened every
    // connection it will: as many as are waiting on the lock.
    await admin.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(4242)`);
      queries = Array.from({ length: 8 }, async () => {
        const r = await small!.db.execute(
          sql`select (select count(*)::int from pg_stat_activity where application_name = ${APP}) as n from (select pg_advisory_xact_lock_shared(4242)) l`,
        );
        return rowsOf<{ n: number }>(r)[0]!.n;
      });
      await expect.poll(() => count(sql`and wait_event_type = 'Lock'`)).toBe(2);
      expect(await count(sql``)).toBe(2);
    });
    // Each query, once it ran, saw the connections of the pool: never more than two.
    const seen = await Promise.all(queries);
    expect(seen).toHaveLength(8);
    expect(Math.max(...seen)).toBe(2);
  });
});
