/**
 * npm run bench:subscribers — how long the subscribers list takes at 100,000 subscribers on
 * PGlite: the `subscribers.page` procedure as the dashboard calls it (schema, count, page,
 * route choices of the page), for the first page, a search of each kind, each sort in both
 * directions, each filter and a late page. Prints median and p95 per query; figures, not
 * assertions. BENCH_SUBSCRIBERS (default 100000) and BENCH_RUNS (default 21) change the size.
 *
 * Seeded in one INSERT … SELECT from generate_series: usage, last seen, expiry and limits
 * spread so every filter matches a real share (the "matches" column says how many), and
 * every subscriber has a stored choice in each of 3 routes, so each page reads its route
 * details as in a real cluster.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "drizzle-orm";
import { openDatabase } from "@/db/client";
import { clusters, inbounds, routes, servers } from "@/db/schema";
import { adminAndViewer } from "@/server/api/testing";
import { listQueryLimits } from "@/server/api/trpc";
import type { SubscriberPageQuery } from "@/core/validation";

const N = Number(process.env.BENCH_SUBSCRIBERS ?? 100_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 21);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rb-bench-subs-"));
  const database = await openDatabase({ dataDir: dir });
  const db = database.db;
  try {
    const [c] = await db.insert(clusters).values({ name: "Bench", reportIntervalS: 60 }).returning();
    const clusterId = c!.id;
    const [srv] = await db.insert(servers).values({ clusterId, name: "srv-1", address: "10.0.0.1", agentTokenHash: "bench" }).returning();
    const routeRows = await db
      .insert(routes)
      .values([0, 1, 2].map((i) => ({ clusterId, name: `Route ${i}`, position: i })))
      .returning();
    const inboundRows = await db
      .insert(inbounds)
      .values(routeRows.flatMap((r, ri) => [0, 1].map((k) => ({ clusterId, serverId: srv!.id, routeId: r.id, name: `in-${ri}-${k}`, port: 1000 + ri * 10 + k }))))
      .returning();
    const pair = (ri: number) => {
      const [a, b] = inboundRows.filter((i) => i.routeId === routeRows[ri]!.id).map((i) => i.id);
      return sql`array[${a}::uuid, ${b}::uuid]`;
    };

    const t0 = performance.now();
    // i is the row number; hashes of it spread the values without a random seed.
    await db.execute(sql`
      insert into subscribers (cluster_id, name, token, expires_at, traffic_limit_bytes, traffic_used_bytes, traffic_up_bytes, traffic_down_bytes, last_seen_at, enabled, created_at, plan_id)
      select ${clusterId}::uuid,
        'user-' || i || case when i % 7 = 0 then ' Smith' else '' end,
        'tok' || md5(i::text),
        case when i % 10 = 0 then now() - (i % 30 + 1) * interval '1 day' when i % 3 = 0 then null else now() + (i % 365 + 1) * interval '1 day' end,
        case when i % 4 = 0 then null else (i % 50 + 1)::bigint * 1073741824 end,
        u, u / 3, u - u / 3,
        case when i % 3 = 0 then now() - (i % 100) * interval '1 second' when i % 5 = 0 then null else now() - (i % 10000) * interval '1 minute' end,
        i % 20 <> 0,
        now() - (${N} - i) * interval '1 minute',
        (select default_plan_id from clusters where id = ${clusterId}::uuid)
      from (select i, case when i % 20 = 1 then (i % 50 + 2)::bigint * 1073741824 else (abs(hashtext(i::text)) % 40000)::bigint * 1048576 end as u
            from generate_series(1, ${N}) as i) g`);
    await db.execute(sql`
      insert into subscriber_assignments (subscriber_id, inbound_ids)
      select id, array[
        (${pair(0)})[1 + (hashtext(id::text) & 1)],
        (${pair(1)})[1 + (hashtext(id::text || 'b') & 1)],
        (${pair(2)})[1 + (hashtext(id::text || 'c') & 1)]]
      from subscribers`);
    await db.execute(sql`analyze`);
    const seedMs = performance.now() - t0;
    const sample = await db.execute(sql`select token, vless_uuid from subscribers where name = 'user-4241'`);
    const { token, vless_uuid: vlessUuid } = (sample as unknown as { rows: Array<{ token: string; vless_uuid: string }> }).rows[0]!;

    const { admin } = await adminAndViewer(db);
    const base = { clusterId };
    const queries: Array<[string, Partial<SubscriberPageQuery>]> = [
      ["first page (newest first)", {}],
      ["search name substring 'smith'", { search: "smith" }],
      ["search name 'user-4241'", { search: "user-4241" }],
      ["search whole token", { search: token }],
      ["search VLESS UUID", { search: vlessUuid }],
      ["search, no match", { search: "nobody-by-this-name" }],
      ...(["usage", "lastSeen", "expiry", "created", "name"] as const).flatMap((sort) =>
        (["desc", "asc"] as const).map((dir): [string, Partial<SubscriberPageQuery>] => [`sort ${sort} ${dir}`, { sort, dir }]),
      ),
      ...(["active", "limited", "expired", "disabled"] as const).map((status): [string, Partial<SubscriberPageQuery>] => [`filter ${status}`, { status }]),
      ["filter online now", { online: true }],
      ["filter online now, sort usage desc", { online: true, sort: "usage", dir: "desc" }],
      ["filter limited, sort last seen desc", { status: "limited", sort: "lastSeen", dir: "desc" }],
      ["page 2", { page: 2 }],
      [`late page (${Math.ceil(N / 2 / 50)} of ${Math.ceil(N / 50)})`, { page: Math.ceil(N / 2 / 50) }],
      [`last page (${Math.ceil(N / 50)})`, { page: Math.ceil(N / 50) }],
      ["last page, sort usage asc", { page: Math.ceil(N / 50), sort: "usage", dir: "asc" }],
    ];

    console.log(`Subscribers list on PGlite: ${N.toLocaleString("en")} subscribers (seeded in ${(seedMs / 1000).toFixed(1)} s), page size 50, ${RUNS} runs each (first run discarded)`);
    console.log(`${"query".padEnd(42)} ${"matches".padStart(8)} ${"median ms".padStart(10)} ${"p95 ms".padStart(8)}`);
    const results: Array<{ query: string; total: number; medianMs: number; p95Ms: number }> = [];
    for (const [label, q] of queries) {
      const times: number[] = [];
      let total = 0;
      for (let r = 0; r < RUNS; r++) {
        // The query is measured, not the per-session rate limit of list queries.
        listQueryLimits().clear();
        const s = performance.now();
        const res = await admin.subscribers.page({ ...base, ...q });
        const ms = performance.now() - s;
        total = res.total;
        if (res.items.length === 0 && total > 0 && !q.page) throw new Error(`${label}: an empty first page of ${total} matches`);
        if (r > 0) times.push(ms);
      }
      const row = { query: label, total, medianMs: Math.round(pct(times, 50) * 10) / 10, p95Ms: Math.round(pct(times, 95) * 10) / 10 };
      results.push(row);
      console.log(`${label.padEnd(42)} ${String(total).padStart(8)} ${row.medianMs.toFixed(1).padStart(10)} ${row.p95Ms.toFixed(1).padStart(8)}`);
    }
    const worst = results.reduce((a, b) => (b.p95Ms > a.p95Ms ? b : a));
    console.log(`\nslowest p95: ${worst.query} at ${worst.p95Ms} ms; goal < 200 ms: ${results.every((r) => r.medianMs < 200) ? "every median meets it" : "missed"}`);
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
