/**
 * What each limited subscriber has left, for the agent's own enforcement (issue 25 point 8):
 * the panel answers a report with the remaining bytes of the limited subscribers in it, as of
 * that report (its traffic is in the journal once the report is acknowledged). The agent
 * counts what it reads after that report and removes a user who passes it at once, panel or
 * no panel; the panel stays the authority (its own limit check pushes the user out of every
 * config as before, and a raised limit brings them back).
 */
import "server-only";
import { sql } from "drizzle-orm";
import type { DbOrTx } from "@/db/client";
import { pgArray } from "@/db/pg-array";
import { rowsOf } from "@/db/rows";
import { subscribers, trafficJournal } from "@/db/schema";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface RemainingBytes {
  email: string;
  remainingBytes: number;
}

/**
 * The remaining bytes (limit − used, never below 0) of the limited subscribers of `clusterId`
 * among `emails`. Used is the folded total plus the journal not yet folded into it, so a
 * report's own traffic counts as soon as it is acknowledged.
 */
export async function remainingBytesOf(db: DbOrTx, clusterId: string, emails: readonly string[]): Promise<RemainingBytes[]> {
  const ids = [...new Set(emails.filter((e) => UUID_RE.test(e)).map((e) => e.toLowerCase()))];
  if (ids.length === 0) return [];
  const out: RemainingBytes[] = [];
  for (let k = 0; k < ids.length; k += 10_000) {
    const chunk = ids.slice(k, k + 10_000);
    const rows = await db.execute(sql`
      with lim as (
        select id, traffic_limit_bytes as lim, traffic_used_bytes as used from ${subscribers}
        where id = any(${pgArray(chunk)}::uuid[]) and cluster_id = ${clusterId} and traffic_limit_bytes is not null
      ),
      pending as (
        select x.id, sum(x.up + x.down) as bytes
        from ${trafficJournal} j, unnest(j.sub_ids, j.sub_up, j.sub_down) as x(id, up, down)
        where not j.totals_folded and x.id in (select id from lim)
        group by x.id
      )
      select lim.id::text as id, greatest(lim.lim - lim.used - coalesce(pending.bytes, 0), 0)::text as remaining
      from lim left join pending on pending.id = lim.id`);
    for (const r of rowsOf<{ id: string; remaining: string }>(rows)) out.push({ email: r.id, remainingBytes: Number(r.remaining) });
  }
  return out;
}
