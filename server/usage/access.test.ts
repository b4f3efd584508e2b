/**
 * The may-connect rule is written once in TypeScript and once in SQL (access.ts): both run
 * over every combination of enabled, expiry and limit, on a real database, and must agree on
 * every row.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq, sql } from "drizzle-orm";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { clusters, subscribers } from "@/db/schema";
import { accessSql, blockReason, isExpired, isOverLimit, mayConnect } from "./access";

const NOW = Date.UTC(2030, 5, 15, 12, 0, 0);
const EXPIRIES = { never: null, past: NOW - 86_400_000, justPast: NOW - 1, now: NOW, justFuture: NOW + 1, future: NOW + 86_400_000 } as const;
/** [limit, used] */
const USAGE = { noLimit: [null, 0], noLimitHeavy: [null, 10_000], under: [100, 99], at: [100, 100], over: [100, 101], zeroLimit: [0, 0] } as const;

describe.each(testDbKinds())("may-connect in SQL and TypeScript agree (%s)", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  const cases = new Map<string, string>();

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    const [c] = await t.db.insert(clusters).values({ name: "access" }).returning();
    clusterId = c!.id;
    const rows = [];
    for (const enabled of [true, false])
      for (const [e, expiresMs] of Object.entries(EXPIRIES))
        for (const [u, [limit, used]] of Object.entries(USAGE)) {
          const name = `${enabled ? "on" : "off"}/${e}/${u}`;
          rows.push({ clusterId, name, token: name, enabled, expiresAt: expiresMs === null ? null : new Date(expiresMs), trafficLimitBytes: limit, trafficUsedBytes: used, trafficUpBytes: used });
        }
    for (const r of await t.db.insert(subscribers).values(rows).returning({ id: subscribers.id, name: subscribers.name })) cases.set(r.id, r.name);
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it("expired, over the limit and may connect: the same answer for every status, expiry and limit", async () => {
    const { expired, overLimit, mayConnect: mayConnectSql } = accessSql(new Date(NOW));
    const rows = await t.db
      .select({
        id: subscribers.id,
        enabled: subscribers.enabled,
        expiresAt: subscribers.expiresAt,
        trafficLimitBytes: subscribers.trafficLimitBytes,
        trafficUsedBytes: subscribers.trafficUsedBytes,
        expired: sql<boolean>`${expired}`,
        overLimit: sql<boolean>`${overLimit}`,
        mayConnect: sql<boolean>`${mayConnectSql}`,
      })
      .from(subscribers)
      .where(eq(subscribers.clusterId, clusterId));
    expect(rows).toHaveLength(2 * Object.keys(EXPIRIES).length * Object.keys(USAGE).length);
    const disagreements = rows.flatMap((r) => {
      const ts = { expired: isExpired(r, NOW), overLimit: isOverLimit(r), mayConnect: mayConnect(r, NOW) };
      const inSql = { expired: r.expired, overLimit: r.overLimit, mayConnect: r.mayConnect };
      return JSON.stringify(ts) === JSON.stringify(inSql) ? [] : [{ subscriber: cases.get(r.id), ts, inSql }];
    });
    expect(disagreements).toEqual([]);
    // The combinations mean something: each answer occurs.
    expect(new Set(rows.map((r) => `${r.expired}/${r.overLimit}/${r.mayConnect}`)).size).toBeGreaterThanOrEqual(5);
  });

  it("blockReason is the SQL's reasons, expiry first", async () => {
    const { expired, overLimit } = accessSql(new Date(NOW));
    const rows = await t.db
      .select({ id: subscribers.id, expiresAt: subscribers.expiresAt, trafficLimitBytes: subscribers.trafficLimitBytes, trafficUsedBytes: subscribers.trafficUsedBytes, expired: sql<boolean>`${expired}`, overLimit: sql<boolean>`${overLimit}` })
      .from(subscribers)
      .where(eq(subscribers.clusterId, clusterId));
    for (const r of rows) {
      const fromSql = r.expired ? "expired" : r.overLimit ? "limited" : null;
      expect({ subscriber: cases.get(r.id), reason: blockReason(r, NOW)?.kind ?? null }).toEqual({ subscriber: cases.get(r.id), reason: fromSql });
    }
  });
});
