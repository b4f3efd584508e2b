/**
 * npm run bench:import — imports BENCH_IMPORT_USERS (default 100,000) generated users into an
 * empty cluster on PGlite, once as Marzban's API JSON and once as CSV (each into its own
 * cluster), through the same engine as POST /api/import: parse, check every row, look up
 * clashes, write in one transaction. Prints one JSON object with the seconds of each (the
 * aim: under 60 s each, issue 27 point 1); figures, not assertions.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openDatabase } from "@/db/client";
import { clusters } from "@/db/schema";
import { importSubscribers } from "@/server/import/engine";
import type { ImportSource } from "@/server/import/rows";

const N = Number(process.env.BENCH_IMPORT_USERS ?? 100_000);
const GIB = 1024 ** 3;

function marzbanJson(n: number): string {
  const users = Array.from({ length: n }, (_, i) => ({
    username: `mz_user_${i}`,
    status: i % 10 === 0 ? "disabled" : "active",
    used_traffic: (i % 50) * 1_000_000,
    data_limit: i % 3 === 0 ? 0 : 50 * GIB,
    data_limit_reset_strategy: ["no_reset", "day", "week", "month"][i % 4],
    expire: i % 5 === 0 ? null : 1_893_456_000 + i,
    note: i % 7 === 0 ? `note ${i}` : null,
    on_hold_expire_duration: null,
    created_at: "2025-01-15T10:00:00",
    proxies: { vless: { id: randomUUID(), flow: "" }, trojan: { password: `tp-${i}-${randomUUID()}` } },
    subscription_url: `/sub/token${i.toString(36).padStart(8, "0")}xyz`,
  }));
  return JSON.stringify({ users, total: n });
}

function csv(n: number): string {
  const lines = ["name,uuid,enabled,expires_at,traffic_limit_bytes,used_up_bytes,used_down_bytes,reset_strategy,reset_day,note,sub_token"];
  for (let i = 0; i < n; i++) lines.push(`csv user ${i},${randomUUID()},${i % 9 !== 0},${i % 4 ? "2030-01-01T00:00:00Z" : ""},${i % 2 ? 10 * GIB : ""},${i},${2 * i},${i % 3 ? "monthly" : "never"},${i % 3 ? 1 : ""},"n, ${i}",csvtok${i}`);
  return lines.join("\r\n") + "\r\n";
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rb-bench-import-"));
  const database = await openDatabase({ dataDir: dir });
  const results: Record<string, unknown> = { users: N, database: "pglite" };
  try {
    for (const [source, make] of [
      ["marzban", marzbanJson],
      ["csv", csv],
    ] as Array<[ImportSource, (n: number) => string]>) {
      const body = Buffer.from(make(N), "utf8");
      const [c] = await database.db.insert(clusters).values({ name: `Bench ${source}` }).returning();
      const t0 = performance.now();
      const dry = await importSubscribers(database.db, null, { clusterId: c!.id, source, bytes: body, dryRun: true });
      const t1 = performance.now();
      const real = await importSubscribers(database.db, null, { clusterId: c!.id, source, bytes: body, dryRun: false });
      const t2 = performance.now();
      if (!real.result.imported) throw new Error(`${source}: not imported: ${JSON.stringify(real.result.errors.slice(0, 3))}`);
      results[source] = { fileMB: +(body.length / 1e6).toFixed(1), dryRunS: +((t1 - t0) / 1000).toFixed(1), importS: +((t2 - t1) / 1000).toFixed(1), created: real.result.created, legacyLinks: real.result.legacyLinks, dryRunCreated: dry.result.created };
    }
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(JSON.stringify(results) + "\n");
}

await main();
