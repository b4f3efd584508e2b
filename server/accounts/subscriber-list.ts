/**
 * The subscribers list of a cluster at any size: search, filters, sorting and paging done by
 * the database, and bulk actions on the selected rows or on everything a filter matches.
 *
 * Statuses are exclusive, in the order the list shows them: disabled, then the reason
 * subscriber-access.ts gives (expired before limited), else active. `statusSql` is the same
 * rule in SQL; subscriber-list.test.ts checks that the two agree on the edge cases.
 */
import { TRPCError } from "@trpc/server";
import { and, asc, desc, eq, inArray, sql, type SQL } from "drizzle-orm";
import type { Db, DbOrTx } from "@/db/client";
import { clusters, inbounds, planRoutes, plans, routes, servers, subscribers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { MAX_NAMED_SUBSCRIBERS, written, type Actor, type Written } from "@/server/changes";
import { StaleDataError } from "@/server/errors";
import { accessSql, blockReason, type SubscriberAccess } from "@/server/usage/access";
import { limitColumns, resetUsage, type ResetStrategy } from "@/server/usage/limits";
import { choicesByRoute, loadAssignments, type InboundRoutes } from "@/server/assignments/store";
import { planLimits, resolvePlan } from "./plans";
import type { SubscriberBulkInput, SubscriberPageQuery, SubscriberStatus } from "@/core/validation";


/** "Online now" = traffic reported within this many report intervals (agents report deltas). */
export const ONLINE_INTERVALS = 2;

export function onlineWindowMs(reportIntervalS: number): number {
  return ONLINE_INTERVALS * reportIntervalS * 1000;
}

export function subscriberStatus(s: SubscriberAccess, nowMs: number): SubscriberStatus {
  if (!s.enabled) return "disabled";
  return blockReason(s, nowMs)?.kind ?? "active";
}

/** subscriberStatus in SQL, as a condition on the subscribers table at `now`. */
export function statusSql(status: SubscriberStatus, now: Date): SQL {
  const { expired, overLimit, mayConnect } = accessSql(now);
  switch (status) {
    case "disabled":
      return sql`not ${subscribers.enabled}`;
    case "expired":
      return sql`(${subscribers.enabled} and ${expired})`;
    case "limited":
      return sql`(${subscribers.enabled} and not ${expired} and ${overLimit})`;
    case "active":
      return mayConnect;
  }
}

export interface SubscriberFilter {
  search?: string;
  status?: SubscriberStatus;
  online?: boolean;
  planId?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * The rows of a cluster a filter matches. Search: a case-insensitive substring of the name;
 * for callers who may see secrets (`secrets`: not viewers), also the whole subscription token
 * (case-sensitive) or the whole VLESS UUID. Never a part of a token: matching prefixes let a
 * viewer read any token one character at a time (issue 21, point 4).
 */
export function filterSql(clusterId: string, f: SubscriberFilter, now: Date, windowMs: number, opts: { secrets: boolean } = { secrets: false }): SQL {
  const parts: SQL[] = [eq(subscribers.clusterId, clusterId)];
  const q = f.search?.trim();
  if (q) {
    const name = sql`${subscribers.nameLower} like lower(${`%${escapeLike(q)}%`})`;
    if (!opts.secrets) parts.push(name);
    else if (UUID.test(q)) parts.push(sql`(${name} or ${subscribers.vlessUuid} = ${q.toLowerCase()}::uuid)`);
    else parts.push(sql`(${name} or ${subscribers.token} = ${q})`);
  }
  if (f.status) parts.push(statusSql(f.status, now));
  if (f.planId) parts.push(eq(subscribers.planId, f.planId));
  if (f.online !== undefined) {
    const since = new Date(now.getTime() - windowMs);
    const online = sql`(${subscribers.lastSeenAt} is not null and ${subscribers.lastSeenAt} >= ${since})`;
    parts.push(f.online ? online : sql`not ${online}`);
  }
  return and(...parts)!;
}

/**
 * Order by a sort key; the id breaks ties in the same direction, so each index serves both,
 * and the descending order is exactly the ascending one reversed (nulls included).
 */
function orderBy(sort: SubscriberPageQuery["sort"], dir: "asc" | "desc"): SQL[] {
  const d = dir === "asc" ? asc : desc;
  switch (sort) {
    case "usage":
      return [d(subscribers.trafficUsedBytes), d(subscribers.id)];
    case "created":
      return [d(subscribers.createdAt), d(subscribers.id)];
    case "name":
      return [d(sql`lower(${subscribers.name})`), d(subscribers.id)];
    // Never seen = longest ago: first going up, last going down.
    case "lastSeen":
      return dir === "asc" ? [sql`${subscribers.lastSeenAt} asc nulls first`, asc(subscribers.id)] : [sql`${subscribers.lastSeenAt} desc nulls last`, desc(subscribers.id)];
    // No expiry = latest: last going up, first going down (PostgreSQL's own null order).
    case "expiry":
      return [d(subscribers.expiresAt), d(subscribers.id)];
  }
}

async function clusterWindowMs(db: DbOrTx, clusterId: string): Promise<number> {
  const [c] = await db.select({ reportIntervalS: clusters.reportIntervalS }).from(clusters).where(eq(clusters.id, clusterId));
  return onlineWindowMs(c?.reportIntervalS ?? 60);
}

/** The inbound a subscriber has now in one route, from the balancer's stored choice. */
export interface RouteChoice {
  routeId: string;
  route: string;
  inboundId: string;
  inbound: string;
  server: string;
}

/**
 * Each subscriber's stored choices, by route in route order; null = no choice stored yet (the
 * app has not fetched), by choicesByRoute (server/assignments/store.ts) over the inbounds
 * read here: ids of deleted or unassigned inbounds are skipped, and a route holding two of
 * them has no choice.
 */
export async function routeChoicesOf(db: DbOrTx, subscriberIds: string[]): Promise<Map<string, RouteChoice[] | null>> {
  const out = new Map<string, RouteChoice[] | null>(subscriberIds.map((id) => [id, null]));
  const stored = await loadAssignments(db, subscriberIds);
  const allIds = [...new Set([...stored.values()].flat())];
  const details = allIds.length
    ? await db
        .select({ id: inbounds.id, inbound: inbounds.name, routeId: inbounds.routeId, route: routes.name, position: routes.position, server: servers.name })
        .from(inbounds)
        .innerJoin(routes, eq(routes.id, inbounds.routeId))
        .innerJoin(servers, eq(servers.id, inbounds.serverId))
        .where(inArray(inbounds.id, allIds))
    : [];
  const byId = new Map(details.map((d) => [d.id, d]));
  const topology: InboundRoutes = { inbounds: byId };
  const gives = await planRoutesOf(db, [...stored.keys()]);
  for (const [subscriberId, ids] of stored) {
    out.set(
      subscriberId,
      [...choicesByRoute(topology, ids).values()]
        .map((id) => byId.get(id)!)
        // A choice stored under a plan the subscriber has left is not what their app gets now.
        .filter((d) => gives(subscriberId, d.routeId!))
        .sort((a, b) => a.position - b.position || a.route.localeCompare(b.route))
        .map((d) => ({ routeId: d.routeId!, route: d.route, inboundId: d.id, inbound: d.inbound, server: d.server })),
    );
  }
  return out;
}

/** Whether a subscriber's plan gives a route (all-routes plans give every route). */
async function planRoutesOf(db: DbOrTx, subscriberIds: string[]): Promise<(subscriberId: string, routeId: string) => boolean> {
  if (subscriberIds.length === 0) return () => true;
  const rows = await db
    .select({ id: subscribers.id, planId: subscribers.planId, allRoutes: plans.allRoutes })
    .from(subscribers)
    .innerJoin(plans, eq(plans.id, subscribers.planId))
    .where(inArray(subscribers.id, subscriberIds));
  const restricted = rows.filter((r) => !r.allRoutes);
  const planIds = [...new Set(restricted.map((r) => r.planId!))];
  const links = planIds.length ? await db.select({ planId: planRoutes.planId, routeId: planRoutes.routeId }).from(planRoutes).where(inArray(planRoutes.planId, planIds)) : [];
  const given = new Set(links.map((l) => `${l.planId} ${l.routeId}`));
  const planOf = new Map(restricted.map((r) => [r.id, r.planId!]));
  return (subscriberId, routeId) => {
    const planId = planOf.get(subscriberId);
    return planId === undefined || given.has(`${planId} ${routeId}`);
  };
}

export interface SubscriberListRow {
  id: string;
  clusterId: string;
  name: string;
  /** Null for viewers. */
  token: string | null;
  vlessUuid: string | null;
  enabled: boolean;
  status: SubscriberStatus;
  expiresAt: Date | null;
  trafficLimitBytes: number | null;
  trafficResetStrategy: ResetStrategy;
  trafficResetDay: number | null;
  nextResetAt: Date | null;
  /** Days from the first connection: the subscriber is on hold until then. */
  holdDays: number | null;
  /** Devices that may fetch the subscription (core/devices.ts); null = no limit. */
  deviceLimit: number | null;
  /** The operator's note (imported from another panel). */
  note: string | null;
  trafficUsedBytes: number;
  trafficUpBytes: number;
  trafficDownBytes: number;
  lastSeenAt: Date | null;
  online: boolean;
  createdAt: Date;
  /** Null: no stored choice yet (the app has not fetched its subscription). */
  routes: RouteChoice[] | null;
  planId: string | null;
  /** The plan's name (the list's plan chip). */
  planName: string | null;
}

export interface SubscriberPage {
  items: SubscriberListRow[];
  /** Subscribers the filter matches, on every page. */
  total: number;
  page: number;
  pageSize: number;
  pageCount: number;
}

/** One page of a cluster's subscribers; route choices are read for that page only. */
export async function listSubscriberPage(database: Db, q: SubscriberPageQuery, opts: { showSecrets: boolean; nowMs?: number }): Promise<SubscriberPage> {
  // One snapshot: the count, the page read from its nearer end and the route choices agree.
  return database.transaction((db) => readPage(db, q, opts), { isolationLevel: "repeatable read", accessMode: "read only" });
}

async function readPage(db: DbOrTx, q: SubscriberPageQuery, opts: { showSecrets: boolean; nowMs?: number }): Promise<SubscriberPage> {
  const nowMs = opts.nowMs ?? Date.now();
  const now = new Date(nowMs);
  const windowMs = await clusterWindowMs(db, q.clusterId);
  const where = filterSql(q.clusterId, q, now, windowMs, { secrets: opts.showSecrets });
  const offset = (q.page - 1) * q.pageSize;
  const count = async () => Number((await db.select({ n: sql<number>`count(*)::int` }).from(subscribers).where(where))[0]?.n ?? 0);
  let total: number;
  let rows: Array<typeof subscribers.$inferSelect>;
  if (q.search?.trim()) {
    // A search reads every name of the cluster anyway: count in the same scan.
    const found = await db
      .select({ s: subscribers, total: sql<number>`count(*) over ()` })
      .from(subscribers)
      .where(where)
      .orderBy(...orderBy(q.sort, q.dir))
      .limit(q.pageSize)
      .offset(offset);
    rows = found.map((f) => f.s);
    total = found.length > 0 ? Number(found[0]!.total) : offset === 0 ? 0 : await count();
  } else {
    total = await count();
    // A page past the middle is read from the other end (the reverse order, then turned
    // back): an offset walks the index, so the last page costs what the first one does.
    const fromEnd = offset > total / 2;
    const limit = fromEnd ? Math.max(0, Math.min(q.pageSize, total - offset)) : q.pageSize;
    rows =
      limit === 0
        ? []
        : await db
            .select()
            .from(subscribers)
            .where(where)
            .orderBy(...orderBy(q.sort, fromEnd ? (q.dir === "asc" ? "desc" : "asc") : q.dir))
            .limit(limit)
            .offset(fromEnd ? total - offset - limit : offset);
    if (fromEnd) rows.reverse();
  }
  // One after the other: `db` is a transaction here, whose client runs one query at a time.
  const choices = await routeChoicesOf(
    db,
    rows.map((r) => r.id),
  );
  const planNames = await planNamesOf(db, q.clusterId);
  return {
    total,
    page: q.page,
    pageSize: q.pageSize,
    pageCount: Math.max(1, Math.ceil(total / q.pageSize)),
    items: rows.map((s) => listRow(s, choices.get(s.id) ?? null, { showSecrets: opts.showSecrets, nowMs, windowMs, planNames })),
  };
}

/** A cluster's plan names by id (a cluster has a handful of plans). */
async function planNamesOf(db: DbOrTx, clusterId: string): Promise<Map<string, string>> {
  const rows = await db.select({ id: plans.id, name: plans.name }).from(plans).where(eq(plans.clusterId, clusterId));
  return new Map(rows.map((r) => [r.id, r.name]));
}

function listRow(
  s: typeof subscribers.$inferSelect,
  routes: RouteChoice[] | null,
  opts: { showSecrets: boolean; nowMs: number; windowMs: number; planNames: ReadonlyMap<string, string> },
): SubscriberListRow {
  return {
    id: s.id,
    clusterId: s.clusterId,
    name: s.name,
    token: opts.showSecrets ? s.token : null,
    vlessUuid: opts.showSecrets ? s.vlessUuid : null,
    enabled: s.enabled,
    status: subscriberStatus(s, opts.nowMs),
    expiresAt: s.expiresAt,
    trafficLimitBytes: s.trafficLimitBytes,
    trafficResetStrategy: s.trafficResetStrategy,
    trafficResetDay: s.trafficResetDay,
    nextResetAt: s.nextResetAt,
    holdDays: s.holdDays,
    deviceLimit: s.deviceLimit,
    note: s.note,
    trafficUsedBytes: s.trafficUsedBytes,
    trafficUpBytes: s.trafficUpBytes,
    trafficDownBytes: s.trafficDownBytes,
    lastSeenAt: s.lastSeenAt,
    online: s.lastSeenAt !== null && s.lastSeenAt.getTime() >= opts.nowMs - opts.windowMs,
    createdAt: s.createdAt,
    routes,
    planId: s.planId,
    planName: s.planId ? (opts.planNames.get(s.planId) ?? null) : null,
  };
}

/** One subscriber as the list shows it (the subscriber's own page reads this); NOT_FOUND when gone. */
export async function getSubscriberRow(db: Db, subscriberId: string, opts: { showSecrets: boolean; nowMs?: number }): Promise<SubscriberListRow> {
  const [s] = await db.select().from(subscribers).where(eq(subscribers.id, subscriberId));
  if (!s) throw new TRPCError({ code: "NOT_FOUND", message: "This subscriber no longer exists" });
  const [windowMs, choices, planNames] = await Promise.all([clusterWindowMs(db, s.clusterId), routeChoicesOf(db, [s.id]), planNamesOf(db, s.clusterId)]);
  return listRow(s, choices.get(s.id) ?? null, { showSecrets: opts.showSecrets, nowMs: opts.nowMs ?? Date.now(), windowMs, planNames });
}

/** The reset columns of a plan's reset strategy, the next reset counted from now. */
function limitColumnsFor(strategy: ResetStrategy, day: number | null, nowMs: number) {
  const { holdDays: _hold, ...cols } = limitColumns({ trafficResetStrategy: strategy, trafficResetDay: day, holdDays: null }, nowMs);
  return cols;
}

/** The confirmation named a different number of subscribers than the action would touch now. */
export class SelectionChangedError extends StaleDataError {
  override name = "SelectionChangedError";
  constructor(
    readonly expected: number,
    readonly actual: number,
  ) {
    super(`The selection now matches ${actual} subscriber${actual === 1 ? "" : "s"}, not ${expected}: nothing was changed. Check the list and confirm again.`);
  }
}

const BULK_VERB: Record<SubscriberBulkInput["action"]["kind"], { action: string; past: string }> = {
  enable: { action: "subscriber.bulk-enable", past: "Enabled" },
  disable: { action: "subscriber.bulk-disable", past: "Disabled" },
  extend: { action: "subscriber.bulk-extend", past: "Extended the expiry of" },
  resetUsage: { action: "subscriber.bulk-reset-usage", past: "Reset the usage of" },
  delete: { action: "subscriber.bulk-delete", past: "Deleted" },
  setPlan: { action: "subscriber.bulk-set-plan", past: "Changed the plan of" },
};

/**
 * One bulk action in one transaction and one statement: the rows are chosen by the same
 * condition the list uses, so "all N matching" is exactly what the operator saw counted.
 * Extending keeps "never expires" as it is, and counts from now for the already expired.
 */
export async function bulkUpdateSubscribers(db: Db, actor: Actor, input: SubscriberBulkInput, opts: { nowMs?: number } = {}): Promise<Written<{ affected: number }>> {
  const now = new Date(opts.nowMs ?? Date.now());
  return db.transaction(async (tx) => {
    const where = input.selection.ids
      ? and(eq(subscribers.clusterId, input.clusterId), inArray(subscribers.id, input.selection.ids))!
      : // Only admins and owners bulk-edit: they may see tokens, so the list they saw matched them too.
        filterSql(input.clusterId, input.selection.matching ?? {}, now, await clusterWindowMs(tx, input.clusterId), { secrets: true });
    const a = input.action;
    const stamp = { updatedAt: now };
    let touched: Array<{ id: string; name: string }>;
    let planName = "";
    if (a.kind === "setPlan") {
      // A plan of this cluster only (refused naming the field); the subscribers' own limits stay
      // unless the operator asked for the plan's (applyLimits): see README "Plans".
      const plan = await resolvePlan(tx, input.clusterId, a.planId, "action.planId");
      planName = plan.name;
      const limits = planLimits(plan, now.getTime());
      touched = await tx
        .update(subscribers)
        .set({
          planId: plan.id,
          ...(a.applyLimits
            ? {
                trafficLimitBytes: limits.trafficLimitBytes,
                deviceLimit: limits.deviceLimit,
                ...limitColumnsFor(limits.trafficResetStrategy, limits.trafficResetDay, now.getTime()),
              }
            : {}),
          ...stamp,
        })
        .where(where)
        .returning({ id: subscribers.id, name: subscribers.name });
    } else if (a.kind === "enable" || a.kind === "disable") {
      touched = await tx
        .update(subscribers)
        .set({ enabled: a.kind === "enable", ...stamp })
        .where(where)
        .returning({ id: subscribers.id, name: subscribers.name });
    } else if (a.kind === "extend") {
      touched = await tx
        .update(subscribers)
        .set({
          expiresAt: sql`case when ${subscribers.expiresAt} is null then null else greatest(${subscribers.expiresAt}, ${now}::timestamptz) + make_interval(days => ${a.days}::int) end`,
          ...stamp,
        })
        .where(where)
        .returning({ id: subscribers.id, name: subscribers.name });
    } else if (a.kind === "resetUsage") {
      // Each finished period is kept (server/usage/limits.ts); the entry below is the audit.
      touched = await tx.select({ id: subscribers.id, name: subscribers.name }).from(subscribers).where(where);
      await resetUsage(
        tx,
        touched.map((t) => t.id),
        "bulk",
        { nowMs: now.getTime(), audit: false },
      );
    } else {
      touched = await tx.delete(subscribers).where(where).returning({ id: subscribers.id, name: subscribers.name });
    }
    if (input.expectedCount !== undefined && touched.length !== input.expectedCount) throw new SelectionChangedError(input.expectedCount, touched.length);
    if (touched.length === 0) return written({ affected: 0 });
    const verb = BULK_VERB[a.kind];
    touched.sort((x, y) => x.name.localeCompare(y.name) || x.id.localeCompare(y.id));
    const names = touched.slice(0, 10).map((t) => t.name);
    const more = touched.length - names.length;
    await recordAudit(tx, actor, {
      clusterId: input.clusterId,
      action: verb.action,
      entityType: "subscriber",
      summary: `${verb.past} ${touched.length} subscriber${touched.length === 1 ? "" : "s"}${a.kind === "extend" ? ` by ${a.days} day${a.days === 1 ? "" : "s"}` : ""}${a.kind === "setPlan" ? ` to ${planName}${a.applyLimits ? " with its limits" : ""}` : ""}: ${names.join(", ")}${more > 0 ? ` and ${more} more` : ""}`,
      after: {
        count: touched.length,
        ...(a.kind === "extend" ? { days: a.days } : {}),
        ...(a.kind === "setPlan" ? { planId: a.planId, applyLimits: a.applyLimits } : {}),
        ...(input.selection.matching ? { matching: input.selection.matching } : {}),
        ids: touched.slice(0, 1000).map((t) => t.id),
      },
    });
    // A few named subscribers let the config hub patch its build (server/dataplane/config-hub.ts).
    const named = touched.length <= MAX_NAMED_SUBSCRIBERS ? { subscriberIds: touched.map((t) => t.id) } : {};
    return written({ affected: touched.length }, { kind: "subscribers", clusterId: input.clusterId, ...named });
  });
}
