import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusters, subscribers } from "@/db/schema";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { loadSubscribers, subscriberTrafficPages } from "./snapshot";

describe.each(testDbKinds())("subscribers read a page at a time (%s)", (kind) => {
  let t: TestDatabase;
  let ids: string[];
  beforeAll(async () => {
    t = await openTestDatabase(kind);
    const [c] = await t.db.insert(clusters).values({ name: "Pages" }).returning();
    const rows = await t.db
      .insert(subscribers)
      .values(Array.from({ length: 7 }, (_, k) => ({ clusterId: c!.id, name: `p${k}`, token: `pages-token-${k}`, trafficUsedBytes: k, trafficUpBytes: k, trafficDownBytes: 0 })))
      .returning();
    ids = rows.map((r) => r.id).sort();
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it("every subscriber once, whether pages end on a row or past it; one string per cluster id", async () => {
    for (const pageSize of [1, 2, 7, 100]) {
      const byToken = await loadSubscribers(t.db, undefined, pageSize);
      expect([...byToken.values()].map((s) => s.id).sort()).toEqual(ids);
      expect(new Set([...byToken.values()].map((s) => s.clusterId)).size).toBe(1);
    }
  });

  it("traffic pages cover every subscriber in id order", async () => {
    for (const pageSize of [3, 7]) {
      const seen: string[] = [];
      for await (const page of subscriberTrafficPages(t.db, pageSize)) {
        expect(page.length).toBeLessThanOrEqual(pageSize);
        seen.push(...page.map((p) => p.id));
      }
      expect(seen).toEqual(ids);
    }
  });

  it("named ids: those that exist, none twice", async () => {
    const some = await loadSubscribers(t.db, [ids[0]!, ids[3]!, ids[3]!, "00000000-0000-4000-8000-000000000000"]);
    expect([...some.values()].map((s) => s.id).sort()).toEqual([ids[0], ids[3]].sort());
  });
});
