/** 0005_traffic_journal_arrays folds journal rows of the old shape before changing the table. */
import { afterAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { subscriberTraffic, trafficJournal } from "./schema";
import { openTestDatabaseBefore, testDbKinds, type TestDatabase } from "./testing";

const C = "11111111-1111-4111-8111-111111111111";
const S = "22222222-2222-4222-8222-222222222222";
const U = "55555555-5555-4555-8555-555555555555";
const GONE = "66666666-6666-4666-8666-666666666666";

describe.each(testDbKinds())("migration 0005 on an unfolded journal (%s)", (kind) => {
  let t: (TestDatabase & { migrateRest(): Promise<void> }) | undefined;
  afterAll(async () => {
    await t?.dispose();
  });

  it("adds the old rows' per-day entries to subscriber_traffic (once, summed), then empties the journal", async () => {
    t = await openTestDatabaseBefore(kind, "0005");
    await t.db.execute(sql`insert into clusters (id, name) values (${C}, 'old')`);
    await t.db.execute(sql`insert into servers (id, cluster_id, name, address, agent_token_hash) values (${S}, ${C}, 's', '10.0.0.1', 'h')`);
    await t.db.execute(sql`insert into subscribers (id, cluster_id, name, token) values (${U}, ${C}, 'u', 'tok-old-1')`);
    await t.db.execute(sql`insert into subscriber_traffic (subscriber_id, server_id, day, up_bytes, down_bytes) values (${U}, ${S}, '2026-11-29', 1, 2)`);
    // Two batches journalled before the upgrade, one naming a subscriber deleted since.
    await t.db.execute(sql`insert into traffic_journal (entries) values
      (${JSON.stringify([[U, S, "2026-11-29", 10, 20], [U, S, "2026-11-30", 3, 4]])}::jsonb),
      (${JSON.stringify([[U, S, "2026-11-30", 5, 6], [GONE, S, "2026-11-30", 7, 8]])}::jsonb)`);

    await t.migrateRest();
    const days = await t.db.select().from(subscriberTraffic).orderBy(subscriberTraffic.day);
    expect(days.map((d) => [d.day, d.upBytes, d.downBytes])).toEqual([
      ["2026-11-29", 11, 22],
      ["2026-11-30", 8, 10],
    ]);
    expect(await t.db.select().from(trafficJournal)).toEqual([]);
  });
});
