import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { clusters, subscribers } from "@/db/schema";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { loadSubscribers, parseTrafficPage, subscriberTrafficPages } from "./snapshot";

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

  it("traffic pages cover every subscriber in id order, with their totals", async () => {
    const big = 9_007_199_254_740_000; // past 2^32, within a double's whole numbers
    await t.db.update(subscribers).set({ trafficUsedBytes: big, trafficUpBytes: big - 5, trafficDownBytes: 5 }).where(eq(subscribers.id, ids[2]!));
    for (const pageSize of [1, 3, 7, 100]) {
      const seen: string[] = [];
      const totals = new Map<string, number[]>();
      for await (const page of subscriberTrafficPages(t.db, pageSize)) {
        expect(page.ids.length).toBeLessThanOrEqual(pageSize);
        page.ids.forEach((id, k) => totals.set(id, [page.used[k]!, page.up[k]!, page.down[k]!]));
        seen.push(...page.ids);
      }
      expect(seen).toEqual(ids);
      const rows = await t.db.select().from(subscribers);
      for (const r of rows) expect(totals.get(r.id)).toEqual([r.trafficUsedBytes, r.trafficUpBytes, r.trafficDownBytes]);
      expect(totals.get(ids[2]!)).toEqual([big, big - 5, 5]);
    }
  });

  it("parses a traffic page's text, and refuses one it cannot read", () => {
    expect(parseTrafficPage("")).toEqual({ ids: [], used: new Float64Array(0), up: new Float64Array(0), down: new Float64Array(0) });
    const p = parseTrafficPage("a:3:1:2,b:0:0:0");
    expect([p.ids, [...p.used], [...p.up], [...p.down]]).toEqual([["a", "b"], [3, 0], [1, 0], [2, 0]]);
    expect(() => parseTrafficPage("a")).toThrow(/row 0 has no totals/);
    expect(() => parseTrafficPage("a:1:x:2")).toThrow(/row 0 has a total that is not a whole number/);
  });

  it("named ids: those that exist, none twice", async () => {
    const some = await loadSubscribers(t.db, [ids[0]!, ids[3]!, ids[3]!, "00000000-0000-4000-8000-000000000000"]);
    expect([...some.values()].map((s) => s.id).sort()).toEqual([ids[0], ids[3]].sort());
  });
});
