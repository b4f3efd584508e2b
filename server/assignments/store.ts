/**
 * Stored choices in the database: one row per subscriber (subscriber_assignments) naming the
 * inbound each route gave them. The row names no route: an inbound's current route says which
 * route a stored id answers for (choicesByRoute).
 */
import { sql } from "drizzle-orm";
import type { DbOrTx } from "@/db/client";
import { pgArray } from "@/db/pg-array";
import { inbounds, subscriberAssignments } from "@/db/schema";

/** Which route each inbound is in now: what the fleet snapshot knows of its inbounds. */
export interface InboundRoutes {
  readonly inbounds: ReadonlyMap<string, { readonly routeId: string | null }>;
}

/**
 * Subscribers' stored choices: subscriberId → the inbound ids they were given (one per route).
 * The ids go as one array parameter: on PGlite a list of 50 parameters cost three times as much.
 */
export async function loadAssignments(db: DbOrTx, subscriberIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (subscriberIds.length === 0) return out;
  const rows = await db
    .select({ subscriberId: subscriberAssignments.subscriberId, inboundIds: subscriberAssignments.inboundIds })
    .from(subscriberAssignments)
    .where(sql`${subscriberAssignments.subscriberId} = any(${pgArray(subscriberIds)}::uuid[])`);
  for (const r of rows) out.set(r.subscriberId, r.inboundIds);
  return out;
}

/** Every subscriber that has a stored row (read as one string: 10,000 ids in a few ms on PGlite). */
export async function loadSubscribersWithChoices(db: DbOrTx): Promise<Set<string>> {
  const res = await db.execute(sql`select string_agg(${subscriberAssignments.subscriberId}::text, ',') as ids from ${subscriberAssignments}`);
  const ids = (res as unknown as { rows: Array<{ ids: string | null }> }).rows[0]?.ids;
  return new Set(ids ? ids.split(",") : []);
}

/**
 * Stored inbound ids as routeId → inboundId, by each inbound's current route. Ids of deleted
 * or unassigned inbounds are skipped; a route holding two of them (an inbound was moved into
 * it) gets neither, so it is decided again.
 */
export function choicesByRoute(topology: InboundRoutes, inboundIds: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  const twice = new Set<string>();
  for (const id of inboundIds) {
    const routeId = topology.inbounds.get(id)?.routeId;
    if (!routeId) continue;
    if (out.has(routeId) && out.get(routeId) !== id) twice.add(routeId);
    out.set(routeId, id);
  }
  for (const r of twice) out.delete(r);
  return out;
}

/**
 * Stores each subscriber's whole set of choices (one row each). A few hundred rows go as one
 * text parameter split by the database ("id:inbound,inbound,…;…"): a first-fetch burst
 * stores 100 ids per subscriber, and one parameter costs far less to build, send and parse
 * than a VALUES list with an array literal per row.
 */
export async function storeAssignments(db: DbOrTx, choices: ReadonlyMap<string, readonly string[]>, at: Date): Promise<void> {
  const rows = [...choices];
  for (let i = 0; i < rows.length; i += 500) {
    // Ids are uuids: no ":", "," or ";" inside one.
    const payload = rows
      .slice(i, i + 500)
      .map(([subscriberId, inboundIds]) => `${subscriberId}:${inboundIds.join(",")}`)
      .join(";");
    await db.execute(sql`
      insert into ${subscriberAssignments} (subscriber_id, inbound_ids, updated_at)
      select r[1]::uuid, string_to_array(r[2], ',')::uuid[], ${at.toISOString()}::timestamptz
      from (select string_to_array(x, ':') as r from unnest(string_to_array(${payload}::text, ';')) as x) t
      on conflict (subscriber_id) do update set inbound_ids = excluded.inbound_ids, updated_at = excluded.updated_at`);
  }
}

/** Subscribers whose stored choice is each inbound of a cluster (the diagram's "users"). */
/** Per server of the cluster, the subscribers whose stored choice names one of its inbounds (the live demo's simulated users). */
export async function assignedSubscribersByServer(db: DbOrTx, clusterId: string): Promise<Map<string, string[]>> {
  const res = await db.execute(sql`
    select distinct i.server_id as "serverId", sa.subscriber_id as "subscriberId"
    from ${subscriberAssignments} sa
    cross join lateral unnest(sa.inbound_ids) as c(inbound_id)
    join ${inbounds} i on i.id = c.inbound_id
    where i.cluster_id = ${clusterId}
    order by 1, 2`);
  const out = new Map<string, string[]>();
  for (const r of (res as unknown as { rows: Array<{ serverId: string; subscriberId: string }> }).rows) {
    const list = out.get(r.serverId) ?? [];
    list.push(r.subscriberId);
    out.set(r.serverId, list);
  }
  return out;
}

export async function countAssignmentsByInbound(db: DbOrTx, clusterId: string): Promise<Array<{ inboundId: string; serverId: string; n: number }>> {
  const res = await db.execute(sql`
    select i.id as "inboundId", i.server_id as "serverId", count(*)::int as n
    from ${subscriberAssignments} sa
    cross join lateral unnest(sa.inbound_ids) as c(inbound_id)
    join ${inbounds} i on i.id = c.inbound_id
    where i.cluster_id = ${clusterId}
    group by i.id, i.server_id`);
  return (res as unknown as { rows: Array<{ inboundId: string; serverId: string; n: number }> }).rows.map((r) => ({ ...r, n: Number(r.n) }));
}
