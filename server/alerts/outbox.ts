/**
 * The alert outbox (durable): events are rows of alert_events, written inside the transaction
 * of the change they report (a status change, a rejected config, a traffic fold), with one
 * alert_deliveries row per target that wants them. A crash after the commit loses nothing:
 * the worker (worker.ts) sends whatever is pending when it starts. State compared over time
 * (route panic, subscriber blocks) is stored next to the events it produced, in the same
 * transaction, so a restart neither repeats nor forgets one.
 */
import { inArray, sql } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { rowsOf } from "@/db/rows";
import { alertDeliveries, alertEvents, clusters, routeAlertState, servers } from "@/db/schema";
import { isRouteInPanic } from "@/core/panic";
import { effectiveStatus, isAvailable } from "@/core/status";
import { routePanicTransition, serverTransitionEvent, type AnyAlertEventType } from "./events";

export interface NewAlertEvent {
  type: AnyAlertEventType;
  clusterId: string | null;
  data: Record<string, unknown>;
}


/**
 * Stores events and their deliveries to every enabled target that wants them (its cluster or
 * every cluster, and the event type). `onlyTarget` sends to that one target whatever it wants
 * (the Send test button). Returns the event ids.
 */
export async function enqueueAlerts(tx: DbOrTx, events: readonly NewAlertEvent[], nowMs: number, onlyTarget?: string): Promise<string[]> {
  if (events.length === 0) return [];
  const clusterIds = [...new Set(events.map((e) => e.clusterId).filter((c): c is string => c !== null))];
  const names = new Map(
    clusterIds.length ? (await tx.select({ id: clusters.id, name: clusters.name }).from(clusters).where(inArray(clusters.id, clusterIds))).map((c) => [c.id, c.name]) : [],
  );
  const at = new Date(nowMs);
  const rows = await tx
    .insert(alertEvents)
    .values(events.map((e) => ({ type: e.type, clusterId: e.clusterId, clusterName: e.clusterId ? (names.get(e.clusterId) ?? null) : null, occurredAt: at, data: e.data })))
    .returning({ id: alertEvents.id });
  const ids = rows.map((r) => r.id);
  if (onlyTarget) {
    await tx.insert(alertDeliveries).values(ids.map((eventId) => ({ eventId, targetId: onlyTarget, nextAttemptAt: at })));
  } else {
    await tx.execute(sql`
      insert into alert_deliveries (event_id, target_id, next_attempt_at)
      select e.id, t.id, ${at.toISOString()}::timestamptz
      from alert_events e
      join alert_targets t on t.enabled and (t.cluster_id is null or t.cluster_id = e.cluster_id) and e.type = any(t.events)
      where e.id = any(${`{${ids.join(",")}}`}::uuid[])
      on conflict do nothing`);
  }
  return ids;
}

export interface ServerTransition {
  serverId: string;
  clusterId: string;
  from: string;
  to: string;
  reason: string;
  /** Whether a check had passed before this change (false up to and including the first success). */
  hadSucceeded: boolean;
}

/**
 * server.down / server.up for status changes, in the transaction that wrote them (called by
 * server/monitoring/status.ts's recompute). Changes that are no outage edge are ignored.
 */
export async function recordServerTransitions(tx: DbOrTx, changes: readonly ServerTransition[], nowMs: number): Promise<void> {
  const edges = changes.map((c) => ({ c, type: serverTransitionEvent(c.from, c.to, c.hadSucceeded) })).filter((x) => x.type !== null);
  if (edges.length === 0) return;
  const info = new Map(
    (await tx.select({ id: servers.id, name: servers.name, address: servers.address }).from(servers).where(inArray(servers.id, edges.map((e) => e.c.serverId)))).map((s) => [s.id, s]),
  );
  await enqueueAlerts(
    tx,
    edges.map(({ c, type }) => ({
      type: type!,
      clusterId: c.clusterId,
      data: { server: info.get(c.serverId) ?? { id: c.serverId, name: null, address: null }, from: c.from, to: c.to, reason: c.reason },
    })),
    nowMs,
  );
}

/** agent.config_rejected for reports whose configError is new (called by applyReports). */
export async function recordConfigRejections(tx: DbOrTx, rejections: ReadonlyArray<{ serverId: string; clusterId: string; error: string }>, nowMs: number): Promise<void> {
  if (rejections.length === 0) return;
  const info = new Map(
    (await tx.select({ id: servers.id, name: servers.name, address: servers.address }).from(servers).where(inArray(servers.id, rejections.map((r) => r.serverId)))).map((s) => [s.id, s]),
  );
  await enqueueAlerts(
    tx,
    rejections.map((r) => ({ type: "agent.config_rejected", clusterId: r.clusterId, data: { server: info.get(r.serverId) ?? { id: r.serverId, name: null, address: null }, error: r.error } })),
    nowMs,
  );
}

/** One panic evaluation at a time across instances: the state compare-and-write is not a single statement. */
const PANIC_LOCK_KEY = 0x5242_4150; // "RBAP"

/**
 * Compares every non-empty route's panic state (DESIGN §2: no inbound on an available server;
 * the same rule as the balancer's routeboard_routes_in_panic gauge) with the stored one, and
 * stores route.panic / route.recovered for the changes, in one transaction. Routes that became
 * empty leave panic silently (users no longer see them). Returns the events stored.
 */
export async function evaluateRoutePanic(db: Db, nowMs: number): Promise<NewAlertEvent[]> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${PANIC_LOCK_KEY})`);
    // One row per inbound; the panic rule itself is core/panic.ts, as on the diagram.
    const members = rowsOf<{ id: string; name: string; cluster_id: string; server_id: string; enabled: boolean; status: string | null }>(
      await tx.execute(sql`
        select r.id, r.name, r.cluster_id, s.id as server_id, s.enabled, h.status
        from routes r
        join inbounds i on i.route_id = r.id
        join servers s on s.id = i.server_id
        left join server_health h on h.server_id = s.id`),
    );
    const byRoute = new Map<string, { id: string; name: string; cluster_id: string; members: { serverId: string; available: boolean }[] }>();
    for (const m of members) {
      let r = byRoute.get(m.id);
      if (!r) byRoute.set(m.id, (r = { id: m.id, name: m.name, cluster_id: m.cluster_id, members: [] }));
      r.members.push({ serverId: m.server_id, available: isAvailable(effectiveStatus(m.enabled, m.status)) });
    }
    const stored = new Map((await tx.select().from(routeAlertState)).map((r) => [r.routeId, r]));
    const at = new Date(nowMs);
    const events: NewAlertEvent[] = [];
    const writes: Array<typeof routeAlertState.$inferInsert> = [];
    for (const r of byRoute.values()) {
      const prev = stored.get(r.id) ?? null;
      stored.delete(r.id);
      const up = r.members.filter((m) => m.available);
      const upServers = new Set(up.map((m) => m.serverId));
      const { next, event } = routePanicTransition(prev, isRouteInPanic(r.members, (id) => upServers.has(id)));
      if (prev && next === prev) continue;
      writes.push({ routeId: r.id, inPanic: next.inPanic, announced: next.announced, changedAt: at });
      if (event) events.push({ type: event, clusterId: r.cluster_id, data: { route: { id: r.id, name: r.name }, inbounds: r.members.length, availableInbounds: up.length } });
    }
    // Left over: routes that are empty now.
    const emptied = [...stored.values()].filter((r) => r.inPanic);
    if (emptied.length > 0) await tx.delete(routeAlertState).where(inArray(routeAlertState.routeId, emptied.map((r) => r.routeId)));
    if (writes.length > 0) {
      await tx
        .insert(routeAlertState)
        .values(writes)
        .onConflictDoUpdate({ target: routeAlertState.routeId, set: { inPanic: sql`excluded.in_panic`, announced: sql`excluded.announced`, changedAt: sql`excluded.changed_at` } });
    }
    await enqueueAlerts(tx, events, nowMs);
    return events;
  });
}
