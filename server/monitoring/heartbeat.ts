/**
 * Agent heartbeats stored (issue 24, core/heartbeat.ts): the latest time per server, and a
 * recompute for a server whose confirmed loss a heartbeat ends. The agent route and its
 * batching are server/dataplane/heartbeat-http.ts.
 */
import "server-only";
import { sql } from "drizzle-orm";
import type { Db } from "@/db/client";
import { pgArray } from "@/db/pg-array";
import { recomputeServers } from "./status";
import { rowsOf } from "@/db/rows";

/**
 * Stores the latest heartbeat of each server (a later time never goes back: several
 * instances may write out of order) and recomputes the servers whose confirmed loss it ends.
 * Returns the clusters whose statuses changed.
 */
export async function recordHeartbeats(db: Db, items: ReadonlyMap<string, number>): Promise<Set<string>> {
  const changed = new Set<string>();
  if (items.size === 0) return changed;
  const ids = [...items.keys()].sort();
  const at = ids.map((id) => new Date(items.get(id)!).toISOString());
  await db.transaction(async (tx) => {
    const res = await tx.execute(sql`
      insert into server_health (server_id, heartbeat_at)
      select v.id, v.at from unnest(${pgArray(ids)}::uuid[], ${pgArray(at)}::timestamptz[]) as v(id, at)
      where exists (select 1 from servers s where s.id = v.id)
      on conflict (server_id) do update set heartbeat_at = greatest(server_health.heartbeat_at, excluded.heartbeat_at)
      returning server_id, heartbeat_lost_at`);
    const rows = rowsOf<{ server_id: string; heartbeat_lost_at: string | Date | null }>(res);
    // Only servers whose loss was confirmed need a recompute: the heartbeat ends it, and the
    // mark is cleared so that later heartbeats cost nothing more.
    const ended = rows.filter((r) => r.heartbeat_lost_at !== null).map((r) => r.server_id);
    if (ended.length === 0) return;
    await tx.execute(sql`update server_health set heartbeat_lost_at = null where server_id = any(${pgArray(ended)}::uuid[])`);
    const results = await recomputeServers(tx, ended, (id) => items.get(id) ?? Date.now());
    for (const r of results.values()) if (r.changed) changed.add(r.clusterId);
  });
  return changed;
}
