/** The subscribers list query, its bulk actions and unique names, against a real database. */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { and, eq, inArray, sql } from "drizzle-orm";
import { TRPCError } from "@trpc/server";
import { auditLog, clusters, inbounds, operators, routes, servers, subscriberAssignments, subscribers } from "@/db/schema";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { adminAndViewer } from "@/server/api/testing";
import { onChange, type ChangeEvent } from "@/server/bus";
import { buildClusterConfigs } from "@/server/dataplane/config";
import { SUBSCRIBER_SORT_KEYS, SUBSCRIBER_STATUSES, type SubscriberPageQuery } from "@/core/validation";
import { createCaller } from "@/server/api/root";
import { operatorContext } from "@/server/api/testing";
import { LIST_QUERY_BURST, LIST_QUERY_REFILL_PER_S } from "@/server/api/trpc";
import { bulkUpdateSubscribers, filterSql, listSubscriberPage, SelectionChangedError, subscriberStatus } from "./subscriber-list";

async function failure(p: Promise<unknown>): Promise<{ code: string; message: string; fieldErrors: Record<string, string> }> {
  try {
    await p;
  } catch (err) {
    if (!(err instanceof TRPCError)) return { code: `not a TRPCError: ${String(err)}`, message: "", fieldErrors: {} };
    const cause = err.cause as { issues?: Array<{ path: PropertyKey[]; message: string }> } | undefined;
    return { code: err.code, message: err.message, fieldErrors: Object.fromEntries((cause?.issues ?? []).map((i) => [i.path.join("."), i.message])) };
  }
  return { code: "no error", message: "", fieldErrors: {} };
}

// Whole milliseconds: timestamps round-trip exactly, so "expiry == now" is exact.
const NOW = Date.parse("2026-11-30T12:00:00.000Z");
const GB = 1024 ** 3;
const uuid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;

type SubRow = typeof subscribers.$inferInsert;

describe.each(testDbKinds())("subscribers list on %s", (kind) => {
  let t: TestDatabase;
  let admin: Awaited<ReturnType<typeof adminAndViewer>>["admin"];
  let viewer: Awaited<ReturnType<typeof adminAndViewer>>["viewer"];
  const events: ChangeEvent[] = [];
  let stop: () => void;

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    ({ admin, viewer } = await adminAndViewer(t.db));
    stop = onChange((e) => events.push(e));
  });
  afterAll(async () => {
    stop?.();
    await t?.dispose();
  });

  /** A fresh cluster (report interval 60 s: online = seen within 120 s) with these subscribers. */
  async function cluster(rows: Array<Partial<SubRow> & { name: string }>): Promise<{ clusterId: string; ids: string[] }> {
    const [c] = await t.db.insert(clusters).values({ name: `c-${Math.random().toString(36).slice(2)}` }).returning();
    const inserted = rows.length
      ? await t.db
          .insert(subscribers)
          .values(rows.map((r, i) => ({ token: `tok-${c!.id.slice(0, 8)}-${i}`, ...r, clusterId: c!.id })))
          .returning({ id: subscribers.id })
      : [];
    return { clusterId: c!.id, ids: inserted.map((r) => r.id) };
  }

  const page = (q: Partial<SubscriberPageQuery> & { clusterId: string }) =>
    listSubscriberPage(t.db, { sort: "created", dir: "desc", page: 1, pageSize: 50, ...q }, { showSecrets: true, nowMs: NOW });

  describe("status filter in SQL agrees with subscriber-access.ts", () => {
    it("on the edge cases: exactly at the limit, expiry == now, null limit, limit 0, disabled and blocked", async () => {
      const cases: Array<Partial<SubRow> & { name: string }> = [
        { name: "plain" },
        { name: "expires-now", expiresAt: new Date(NOW) },
        { name: "expires-1ms-later", expiresAt: new Date(NOW + 1) },
        { name: "expired-1ms-ago", expiresAt: new Date(NOW - 1) },
        { name: "at-limit", trafficLimitBytes: 100, trafficUsedBytes: 100, trafficUpBytes: 40, trafficDownBytes: 60 },
        { name: "one-under-limit", trafficLimitBytes: 100, trafficUsedBytes: 99, trafficUpBytes: 99 },
        { name: "over-limit", trafficLimitBytes: 100, trafficUsedBytes: 101, trafficDownBytes: 101 },
        { name: "null-limit-big-usage", trafficLimitBytes: null, trafficUsedBytes: 10 * GB, trafficUpBytes: 10 * GB },
        { name: "limit-0-unused", trafficLimitBytes: 0 },
        { name: "expired-and-over-limit", expiresAt: new Date(NOW), trafficLimitBytes: 1, trafficUsedBytes: 5, trafficUpBytes: 5 },
        { name: "disabled-expired-over", enabled: false, expiresAt: new Date(NOW - 1000), trafficLimitBytes: 1, trafficUsedBytes: 5, trafficUpBytes: 5 },
        { name: "disabled", enabled: false },
      ];
      const { clusterId } = await cluster(cases);
      const all = await t.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId));
      const expected = new Map(all.map((s) => [s.name, subscriberStatus(s, NOW)]));
      // The table is read as written: a sanity check on a few of the cases themselves.
      expect(expected.get("expires-now")).toBe("expired");
      expect(expected.get("at-limit")).toBe("limited");
      expect(expected.get("expired-and-over-limit")).toBe("expired");
      expect(expected.get("null-limit-big-usage")).toBe("active");
      for (const status of SUBSCRIBER_STATUSES) {
        const rows = await t.db.select({ name: subscribers.name }).from(subscribers).where(filterSql(clusterId, { status }, new Date(NOW), 120_000));
        const want = [...expected].filter(([, s]) => s === status).map(([n]) => n);
        expect(rows.map((r) => r.name).sort(), status).toEqual(want.sort());
        // And through the list, which labels each row with the TS rule.
        const listed = await page({ clusterId, status });
        expect(listed.items.every((r) => r.status === status)).toBe(true);
        expect(listed.total).toBe(want.length);
      }
    });
  });

  describe("paging", () => {
    it("splits the matches into pages with nothing missed or repeated, and an empty page past the end", async () => {
      const { clusterId, ids } = await cluster(Array.from({ length: 7 }, (_, i) => ({ name: `p${i}`, trafficUsedBytes: 5, trafficUpBytes: 5 })));
      const seen: string[] = [];
      for (const p of [1, 2, 3]) {
        const r = await page({ clusterId, sort: "usage", dir: "desc", page: p, pageSize: 3 });
        expect(r.total).toBe(7);
        expect(r.pageCount).toBe(3);
        expect(r.items).toHaveLength(p === 3 ? 1 : 3);
        seen.push(...r.items.map((i) => i.id));
      }
      expect(new Set(seen).size).toBe(7);
      expect(seen.sort()).toEqual([...ids].sort());
      const past = await page({ clusterId, page: 4, pageSize: 3 });
      expect(past.items).toEqual([]);
      expect(past.total).toBe(7);
      const exact = await page({ clusterId, pageSize: 7 });
      expect([exact.items.length, exact.pageCount]).toEqual([7, 1]);
      // Past the end of a search: no rows, still the count.
      const searchedPast = await page({ clusterId, search: "P", page: 4, pageSize: 3 });
      expect([searchedPast.items, searchedPast.total]).toEqual([[], 7]);
      const searched = await page({ clusterId, search: "P", sort: "name", dir: "desc", page: 3, pageSize: 3 });
      expect([searched.items.map((i) => i.name), searched.total]).toEqual([["p0"], 7]);
      const none = await page({ clusterId, search: "nobody-has-this" });
      expect([none.items, none.total, none.pageCount]).toEqual([[], 0, 1]);
    });
  });

  describe("sorting", () => {
    it("sorts by each key in both directions, ties broken by id the same way", async () => {
      const d = (min: number) => new Date(NOW - min * 60_000);
      const { clusterId } = await cluster([
        { id: uuid(1), name: "delta", trafficUsedBytes: 10, trafficUpBytes: 10, lastSeenAt: d(5), expiresAt: d(-100), createdAt: d(50) },
        { id: uuid(2), name: "Alpha", trafficUsedBytes: 10, trafficUpBytes: 10, lastSeenAt: null, expiresAt: null, createdAt: d(50) },
        { id: uuid(3), name: "charlie", trafficUsedBytes: 30, trafficUpBytes: 30, lastSeenAt: d(5), expiresAt: d(-100), createdAt: d(40) },
        { id: uuid(4), name: "bravo", trafficUsedBytes: 0, lastSeenAt: null, expiresAt: null, createdAt: d(60) },
        { id: uuid(5), name: "echo", trafficUsedBytes: 30, trafficUpBytes: 30, lastSeenAt: d(1), expiresAt: d(-10), createdAt: d(40) },
      ]);
      const want: Record<string, string[]> = {
        // ascending; descending is the exact reverse (the id tie-break turns too)
        usage: ["bravo", "delta", "Alpha", "charlie", "echo"],
        lastSeen: ["Alpha", "bravo", "delta", "charlie", "echo"], // never seen = longest ago
        expiry: ["echo", "delta", "charlie", "Alpha", "bravo"], // never expires = last
        created: ["bravo", "delta", "Alpha", "charlie", "echo"],
        name: ["Alpha", "bravo", "charlie", "delta", "echo"], // case-insensitive
      };
      for (const sort of SUBSCRIBER_SORT_KEYS) {
        const up = await page({ clusterId, sort, dir: "asc" });
        const down = await page({ clusterId, sort, dir: "desc" });
        expect(up.items.map((r) => r.name), `${sort} asc`).toEqual(want[sort]);
        expect(down.items.map((r) => r.name), `${sort} desc`).toEqual([...want[sort]!].reverse());
        // Pages of one agree with the whole order (stable across pages).
        const singles: string[] = [];
        for (let p = 1; p <= 5; p++) singles.push((await page({ clusterId, sort, dir: "asc", page: p, pageSize: 1 })).items[0]!.name);
        expect(singles).toEqual(want[sort]);
      }
    });
  });

  describe("filters and search", () => {
    it("filters by online now (the cluster's report interval) and by status, combined", async () => {
      const { clusterId } = await cluster([
        { name: "now", lastSeenAt: new Date(NOW - 1000) },
        { name: "edge", lastSeenAt: new Date(NOW - 120_000) },
        { name: "just-gone", lastSeenAt: new Date(NOW - 120_001) },
        { name: "never" },
        { name: "online-disabled", enabled: false, lastSeenAt: new Date(NOW) },
      ]);
      const names = async (f: Partial<SubscriberPageQuery>) => (await page({ clusterId, sort: "name", dir: "asc", ...f })).items.map((r) => r.name);
      expect(await names({ online: true })).toEqual(["edge", "now", "online-disabled"]);
      expect(await names({ online: false })).toEqual(["just-gone", "never"]);
      expect(await names({ online: true, status: "active" })).toEqual(["edge", "now"]);
      expect(await names({ status: "disabled" })).toEqual(["online-disabled"]);
      const r = await page({ clusterId, search: "now" });
      expect(r.items[0]!.online).toBe(true);
      await t.db.update(clusters).set({ reportIntervalS: 30 }).where(eq(clusters.id, clusterId));
      expect(await names({ online: true })).toEqual(["now", "online-disabled"]);
    });

    it("searches names (substring, any case), whole tokens and whole VLESS UUIDs; LIKE characters are literal", async () => {
      const { clusterId } = await cluster([
        { name: "Alice Smith", token: "AbCdEf123456" },
        { name: "bob", token: "zzzAlice0000", vlessUuid: "9b2c1e7a-1111-4222-8333-444455556666" },
        { name: "100% carol", token: "qqq" },
      ]);
      const names = async (search: string) => (await page({ clusterId, search, sort: "name", dir: "asc" })).items.map((r) => r.name);
      expect(await names("LICE s")).toEqual(["Alice Smith"]);
      expect(await names("AbCdEf123456")).toEqual(["Alice Smith"]);
      expect(await names("abcdef123456")).toEqual([]); // tokens are case-sensitive
      expect(await names("zzzAlice0000")).toEqual(["bob"]);
      // Never a part of a token: a prefix matched one character at a time gave any token away.
      expect(await names("AbCd")).toEqual([]);
      expect(await names("zzzA")).toEqual([]);
      expect(await names("Ef12")).toEqual([]);
      expect(await names("9B2C1E7A-1111-4222-8333-444455556666")).toEqual(["bob"]);
      expect(await names("9b2c1e7a")).toEqual([]);
      expect(await names("%")).toEqual(["100% carol"]);
      expect(await names("_")).toEqual([]);
      expect(await names("  bob  ")).toEqual(["bob"]);
    });

    it("matches tokens and VLESS UUIDs only for those who may see them: a viewer's search never does (issue 21, point 4)", async () => {
      const { clusterId } = await cluster([
        { name: "Tess", token: "Vt0k3nSecretValue", vlessUuid: "7b2c1e7a-1111-4222-8333-444455556666" },
        { name: "Uma", token: "Vt0k3nOther" },
      ]);
      const asViewer = async (search: string) => (await viewer.subscribers.page({ clusterId, search })).items.map((r) => r.name);
      const asAdmin = async (search: string) => (await admin.subscribers.page({ clusterId, search })).items.map((r) => r.name);
      // What the attack did: try each next character and watch the count.
      for (const probe of ["V", "Vt", "Vt0k3n", "Vt0k3nS", "Vt0k3nSecretValue", "7b2c1e7a-1111-4222-8333-444455556666"]) {
        expect(await asViewer(probe), probe).toEqual([]);
        expect((await viewer.subscribers.page({ clusterId, search: probe })).total, probe).toBe(0);
      }
      expect(await asAdmin("Vt0k3nSecretValue")).toEqual(["Tess"]);
      expect(await asAdmin("7b2c1e7a-1111-4222-8333-444455556666")).toEqual(["Tess"]);
      expect(await asAdmin("Vt0k3n")).toEqual([]);
      // Names are searched for everybody.
      expect(await asViewer("tes")).toEqual(["Tess"]);
    });
  });

  describe("list queries are rate-limited per session (issue 21, point 4)", () => {
    it(`allows a burst of ${LIST_QUERY_BURST}, then refuses with TOO_MANY_REQUESTS and Retry-After seconds; other sessions are not affected`, async () => {
      const { clusterId } = await cluster([{ name: "r1" }]);
      const [op] = await t.db.insert(operators).values({ username: `rate-${Math.random().toString(36).slice(2, 8)}`, passwordHash: "x", role: "viewer" }).returning();
      const session = (id: string) => createCaller({ ...operatorContext(t.db, op!.id, op!.username, "viewer"), operator: { sessionId: id, operatorId: op!.id, username: op!.username, role: "viewer", twoFactor: false } });
      const mine = session(`rate-a-${op!.id}`);
      // The clock stands still (only Date), so no token comes back while the burst is spent
      // however slow the 60 queries are.
      vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
      try {
        for (let i = 0; i < LIST_QUERY_BURST; i++) await mine.subscribers.page({ clusterId, search: `r${i}` });
        const refused = await failure(mine.subscribers.page({ clusterId, search: "r" }));
        expect(refused.code).toBe("TOO_MANY_REQUESTS");
        expect(refused.message).toBe("Too many list queries from this session (at most 60 at once, then 4 a second): try again in 1 s");
        // The older list procedure shares the budget.
        expect((await failure(mine.subscribers.list({ clusterId }))).code).toBe("TOO_MANY_REQUESTS");
        // The same operator in another session (another browser) is not held back.
        expect((await session(`rate-b-${op!.id}`).subscribers.page({ clusterId })).total).toBe(1);
        // A second later, four more.
        vi.setSystemTime(Date.now() + 1000);
        for (let i = 0; i < LIST_QUERY_REFILL_PER_S; i++) expect((await mine.subscribers.page({ clusterId })).total).toBe(1);
        expect((await failure(mine.subscribers.page({ clusterId }))).code).toBe("TOO_MANY_REQUESTS");
      } finally {
        vi.useRealTimers();
      }
    });
  });

  describe("routes per row", () => {
    it("shows each route's server and inbound from the stored choice, or null when none is stored", async () => {
      const { clusterId, ids } = await cluster([{ name: "fetched" }, { name: "fresh" }, { name: "moved" }]);
      const [srv] = await t.db.insert(servers).values({ clusterId, name: "fi-hel-1", address: "10.0.0.1", agentTokenHash: `h-${clusterId}` }).returning();
      const [r1, r2] = await t.db
        .insert(routes)
        .values([
          { clusterId, name: "Finland", position: 0 },
          { clusterId, name: "Germany", position: 1 },
        ])
        .returning();
      const [a, b, c] = await t.db
        .insert(inbounds)
        .values([
          { clusterId, serverId: srv!.id, routeId: r1!.id, name: "hel-443", port: 443 },
          { clusterId, serverId: srv!.id, routeId: r2!.id, name: "hel-8443", port: 8443 },
          { clusterId, serverId: srv!.id, routeId: r2!.id, name: "hel-9443", port: 9443 },
        ])
        .returning();
      await t.db.insert(subscriberAssignments).values([
        { subscriberId: ids[0]!, inboundIds: [b!.id, a!.id, uuid(999)] },
        // Two inbounds now in one route (one was moved there): no choice in that route.
        { subscriberId: ids[2]!, inboundIds: [a!.id, b!.id, c!.id] },
      ]);
      const r = await page({ clusterId, sort: "name", dir: "asc" });
      const by = new Map(r.items.map((i) => [i.name, i.routes]));
      expect(by.get("fetched")).toEqual([
        { routeId: r1!.id, route: "Finland", inboundId: a!.id, inbound: "hel-443", server: "fi-hel-1" },
        { routeId: r2!.id, route: "Germany", inboundId: b!.id, inbound: "hel-8443", server: "fi-hel-1" },
      ]);
      expect(by.get("fresh")).toBeNull();
      expect(by.get("moved")).toEqual([{ routeId: r1!.id, route: "Finland", inboundId: a!.id, inbound: "hel-443", server: "fi-hel-1" }]);
    });
  });

  describe("the page procedure", () => {
    it("refuses bad input with the field named, and hides tokens from viewers", async () => {
      const { clusterId } = await cluster([{ name: "v1" }]);
      for (const [input, field] of [
        [{ clusterId, pageSize: 0 }, "pageSize"],
        [{ clusterId, pageSize: 201 }, "pageSize"],
        [{ clusterId, pageSize: 2.5 }, "pageSize"],
        [{ clusterId, sort: "bogus" }, "sort"],
        [{ clusterId, dir: "up" }, "dir"],
        [{ clusterId, page: 0 }, "page"],
        [{ clusterId, status: "sleeping" }, "status"],
        [{ clusterId: "nope" }, "clusterId"],
      ] as const) {
        const f = await failure(admin.subscribers.page(input as never));
        expect(f.code, JSON.stringify(input)).toBe("BAD_REQUEST");
        expect(Object.keys(f.fieldErrors), JSON.stringify(input)).toEqual([field]);
      }
      expect((await failure(admin.subscribers.page({ clusterId, sort: "bogus" as never }))).fieldErrors.sort).toBe("Sort must be one of usage, lastSeen, expiry, created, name");
      const asViewer = await viewer.subscribers.page({ clusterId });
      expect(asViewer.items[0]!.token).toBeNull();
      expect(asViewer.items[0]!.vlessUuid).toBeNull();
      expect((await admin.subscribers.page({ clusterId })).items[0]!.token).toMatch(/^tok-/);
    });
  });

  describe("bulk actions", () => {
    const usersOf = async (clusterId: string) => (await buildClusterConfigs(t.db, clusterId, Date.now())).users.map((u) => u.email).sort();
    const auditOf = (clusterId: string) => t.db.select().from(auditLog).where(eq(auditLog.clusterId, clusterId));

    it("disables and enables the selected rows in one audited change that updates the agents' config", async () => {
      const { clusterId, ids } = await cluster([{ name: "a" }, { name: "b" }, { name: "c" }]);
      expect(await usersOf(clusterId)).toEqual([...ids].sort());
      events.length = 0;
      const r = await admin.subscribers.bulk({ clusterId, selection: { ids: [ids[0]!, ids[2]!] }, action: { kind: "disable" }, expectedCount: 2 });
      expect(r.affected).toBe(2);
      expect(await usersOf(clusterId)).toEqual([ids[1]]);
      expect(events.filter((e) => e.kind === "subscribers" && e.clusterId === clusterId)).toHaveLength(1);
      const [entry] = await auditOf(clusterId);
      expect(entry).toMatchObject({ action: "subscriber.bulk-disable", operatorName: "ada", summary: "Disabled 2 subscribers: a, c" });
      expect((entry!.after as { count: number; ids: string[] }).ids.sort()).toEqual([ids[0], ids[2]].sort());
      await admin.subscribers.bulk({ clusterId, selection: { ids }, action: { kind: "enable" } });
      expect(await usersOf(clusterId)).toEqual([...ids].sort());
      expect((await auditOf(clusterId)).map((a) => a.action).sort()).toEqual(["subscriber.bulk-disable", "subscriber.bulk-enable"]);
    });

    it("acts on all a filter matches, and refuses (changing nothing) when that is no longer the confirmed count", async () => {
      const { clusterId } = await cluster([{ name: "team-1" }, { name: "team-2" }, { name: "team-3" }, { name: "other" }]);
      const f = await failure(admin.subscribers.bulk({ clusterId, selection: { matching: { search: "team" } }, action: { kind: "delete" }, expectedCount: 2 }));
      expect(f.code).toBe("CONFLICT");
      expect(f.message).toMatch(/now matches 3 subscribers, not 2/);
      expect(await t.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId))).toHaveLength(4);
      expect(await auditOf(clusterId)).toEqual([]);
      const r = await admin.subscribers.bulk({ clusterId, selection: { matching: { search: "team" } }, action: { kind: "delete" }, expectedCount: 3 });
      expect(r.affected).toBe(3);
      expect((await t.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId))).map((s) => s.name)).toEqual(["other"]);
      expect((await auditOf(clusterId))[0]!.summary).toBe("Deleted 3 subscribers: team-1, team-2, team-3");
    });

    it("never touches another cluster's subscribers, even by id", async () => {
      const one = await cluster([{ name: "mine" }]);
      const two = await cluster([{ name: "theirs" }]);
      const r = await admin.subscribers.bulk({ clusterId: one.clusterId, selection: { ids: [...one.ids, ...two.ids] }, action: { kind: "disable" } });
      expect(r.affected).toBe(1);
      expect((await t.db.select().from(subscribers).where(eq(subscribers.id, two.ids[0]!)))[0]!.enabled).toBe(true);
    });

    it("extends expiry by N days: from the expiry, or from now when already expired; never-expiring stays so", async () => {
      const { clusterId, ids } = await cluster([
        { name: "future", expiresAt: new Date(NOW + 86_400_000) },
        { name: "past", expiresAt: new Date(NOW - 5 * 86_400_000) },
        { name: "never" },
      ]);
      const r = await bulkUpdateSubscribers(t.db, null, { clusterId, selection: { ids }, action: { kind: "extend", days: 30 } }, { nowMs: NOW });
      expect(r).toEqual({ result: { affected: 3 }, changes: [{ kind: "subscribers", clusterId, subscriberIds: expect.arrayContaining(ids) }] });
      const rows = new Map((await t.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId))).map((s) => [s.name, s.expiresAt?.getTime() ?? null]));
      expect(rows.get("future")).toBe(NOW + 31 * 86_400_000);
      expect(rows.get("past")).toBe(NOW + 30 * 86_400_000);
      expect(rows.get("never")).toBeNull();
      expect((await auditOf(clusterId))[0]!.summary).toBe("Extended the expiry of 3 subscribers by 30 days: future, never, past");
    });

    it("resets usage to zero, so a limited subscriber is back in the agents' config", async () => {
      const { clusterId, ids } = await cluster([
        { name: "heavy", trafficLimitBytes: GB, trafficUsedBytes: 2 * GB, trafficUpBytes: GB, trafficDownBytes: GB },
        { name: "light", trafficUsedBytes: 7, trafficUpBytes: 3, trafficDownBytes: 4 },
      ]);
      expect(await usersOf(clusterId)).toEqual([ids[1]]);
      expect((await page({ clusterId, status: "limited" })).total).toBe(1);
      const r = await admin.subscribers.bulk({ clusterId, selection: { matching: {} }, action: { kind: "resetUsage" }, expectedCount: 2 });
      expect(r.affected).toBe(2);
      const rows = await t.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId));
      expect(rows.map((s) => [s.trafficUsedBytes, s.trafficUpBytes, s.trafficDownBytes])).toEqual([
        [0, 0, 0],
        [0, 0, 0],
      ]);
      expect(await usersOf(clusterId)).toEqual([...ids].sort());
      expect((await auditOf(clusterId))[0]!.action).toBe("subscriber.bulk-reset-usage");
    });

    it("an empty selection changes and records nothing", async () => {
      const { clusterId } = await cluster([{ name: "x" }]);
      events.length = 0;
      const r = await admin.subscribers.bulk({ clusterId, selection: { matching: { status: "expired" } }, action: { kind: "disable" } });
      expect(r.affected).toBe(0);
      expect(await auditOf(clusterId)).toEqual([]);
      expect(events.filter((e) => e.clusterId === clusterId)).toEqual([]);
    });

    it("refuses bad input with the field named, and viewers", async () => {
      const { clusterId, ids } = await cluster([{ name: "y" }]);
      const cases: Array<[unknown, string]> = [
        [{ clusterId, selection: { ids: [] }, action: { kind: "disable" } }, "selection.ids"],
        [{ clusterId, selection: { ids: ["x"] }, action: { kind: "disable" } }, "selection.ids.0"],
        [{ clusterId, selection: {}, action: { kind: "disable" } }, "selection"],
        [{ clusterId, selection: { ids, matching: {} }, action: { kind: "disable" } }, "selection"],
        [{ clusterId, selection: { ids }, action: { kind: "extend", days: 0 } }, "action.days"],
        [{ clusterId, selection: { ids }, action: { kind: "extend", days: 4000 } }, "action.days"],
        [{ clusterId, selection: { ids }, action: { kind: "explode" } }, "action.kind"],
        [{ clusterId, selection: { matching: { status: "x" } }, action: { kind: "disable" } }, "selection.matching.status"],
      ];
      for (const [input, field] of cases) {
        const f = await failure(admin.subscribers.bulk(input as never));
        expect(f.code, JSON.stringify(input)).toBe("BAD_REQUEST");
        expect(Object.keys(f.fieldErrors), JSON.stringify(input)).toContain(field);
      }
      expect((await failure(viewer.subscribers.bulk({ clusterId, selection: { ids }, action: { kind: "disable" } }))).code).toBe("FORBIDDEN");
      expect((await t.db.select().from(subscribers).where(eq(subscribers.id, ids[0]!)))[0]!.enabled).toBe(true);
    });

    it("the SelectionChangedError names both counts", () => {
      expect(new SelectionChangedError(1, 0).message).toMatch(/matches 0 subscribers, not 1/);
    });
  });

  describe("unique names", () => {
    it("refuses a second subscriber of the same name in any case, naming the field; other clusters may reuse it", async () => {
      const one = await cluster([]);
      const two = await cluster([]);
      const bob = await admin.subscribers.create({ clusterId: one.clusterId, name: "Bob" });
      const dup = await failure(admin.subscribers.create({ clusterId: one.clusterId, name: " bOB " }));
      expect(dup.code).toBe("CONFLICT");
      expect(dup.fieldErrors).toEqual({ name: 'A subscriber named "bOB" already exists in this cluster' });
      await admin.subscribers.create({ clusterId: two.clusterId, name: "bob" });
      const other = await admin.subscribers.create({ clusterId: one.clusterId, name: "Robert" });
      const renamed = await failure(admin.subscribers.update({ subscriberId: other.id, name: "BOB", expiresAt: null, trafficLimitGb: null }));
      expect(renamed.code).toBe("CONFLICT");
      expect(Object.keys(renamed.fieldErrors)).toEqual(["name"]);
      // Changing only the case of one's own name is fine.
      await admin.subscribers.update({ subscriberId: bob.id, name: "BOB", expiresAt: null, trafficLimitGb: null });
      const names = await t.db
        .select({ name: subscribers.name })
        .from(subscribers)
        .where(and(eq(subscribers.clusterId, one.clusterId), inArray(subscribers.id, [bob.id, other.id])))
        .orderBy(sql`lower(${subscribers.name})`);
      expect(names.map((n) => n.name)).toEqual(["BOB", "Robert"]);
    });
  });
});
