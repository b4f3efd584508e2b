/**
 * The in-memory picture the subscription endpoint answers from: routes in order with their
 * inbounds, servers with availability and load, subscribers by token. Loaded from the
 * database in a few bulk reads and replaced whole when the change bus says it moved, so a
 * request never waits on more than one reload and never sees a half-updated picture.
 */
import { asc, eq, gt, inArray, sql, type SQL } from "drizzle-orm";
import { rowsOf } from "@/db/rows";
import type { DbOrTx } from "@/db/client";
import { readBranding, type Branding } from "@/core/branding";
import { clusters, inbounds, planRoutes, plans, routes, serverAgentState, serverHealth, serverMetrics, servers, subscribers } from "@/db/schema";
import type { RouteInput, ServerMetrics } from "@/server/balancer";
import type { SubscriptionEntry } from "./formats";
import { effectiveStatus, isAvailable } from "@/core/status";
import { routeLineName } from "@/core/format";
import { storedFigure } from "@/core/heartbeat";
import type { InboundProtocol, InboundTransport } from "@/core/inbound-protocols";
import type { DevicelessFetches } from "@/core/devices";

export interface SnapshotInbound {
  id: string;
  serverId: string;
  routeId: string | null;
  name: string;
  port: number;
  security: "reality" | "tls" | "none";
  sni: string | null;
  realityPublicKey: string | null;
  realityShortId: string | null;
  isFallback: boolean;
  /** Protocol, transport and their settings (issue 26): handed to the entry as they are. */
  proto?: Pick<SubscriptionEntry, "protocol" | "transport" | "path" | "host" | "serviceName" | "ssMethod" | "ssServerKey">;
}

export interface SnapshotServer {
  id: string;
  clusterId: string;
  name: string;
  address: string;
  enabled: boolean;
  status: string;
  /** When the server last came back from an outage (ms); the balancer damps fail-back to it. */
  recoveredAtMs: number | null;
  /** Its inbounds it does not serve now (issue 25): inboundId → why; never handed out. */
  unavailableInbounds?: ReadonlyMap<string, string>;
  coefficient: number;
  capacityMbps: number | null;
}

export interface SnapshotCluster {
  id: string;
  name: string;
  /** Fetches without a device id from subscribers with a device limit (core/devices.ts). */
  devicelessFetches?: DevicelessFetches;
  /** The public page's brand; null = neutral (no internal name shown). */
  branding?: Branding | null;
  /** Non-empty and empty routes, in position order (the balancer skips empty ones). */
  routes: RouteInput[];
  /** The plan of subscribers whose own plan is not known (null: every route). */
  defaultPlanId?: string | null;
}

/** Which routes a plan gives (issue 27 point 2). */
export interface SnapshotPlan {
  id: string;
  clusterId: string;
  /** Every route of the cluster, those created later included. */
  allRoutes: boolean;
  /** The plan's routes when not allRoutes. */
  routeIds: ReadonlySet<string>;
}

export interface SnapshotSubscriber {
  id: string;
  clusterId: string;
  name: string;
  token: string;
  vlessUuid: string;
  enabled: boolean;
  expiresAt: Date | null;
  trafficLimitBytes: number | null;
  trafficUsedBytes: number;
  trafficUpBytes: number;
  trafficDownBytes: number;
  nextResetAt: Date | null;
  /** Devices that may fetch the subscription (core/devices.ts); null or absent = no limit. */
  deviceLimit?: number | null;
  /** The Trojan password kept from another panel (server/import); null or absent = derived. */
  trojanPassword?: string | null;
  /** The subscriber's plan: which routes they get; null or absent = the cluster's default plan. */
  planId?: string | null;
}

/** Every cluster's servers, inbounds and routes in memory: what the subscription service answers from. */
export interface FleetSnapshot {
  clusters: Map<string, SnapshotCluster>;
  servers: Map<string, SnapshotServer>;
  inbounds: Map<string, SnapshotInbound>;
  routeNames: Map<string, string>;
  /** A route's flag (ISO 3166-1 alpha-2), when it has one. */
  routeFlags?: Map<string, string | null>;
  /** The line name of each route that names its line itself (line_name "route"); others are absent. */
  routeLineNames?: Map<string, string>;
  /** Every cluster's plans by id; absent (snapshots built by hand in tests) = every subscriber gets every route. */
  plans?: Map<string, SnapshotPlan>;
}

/**
 * The plan a subscriber is on in this topology: their own, else the cluster's default. Null
 * when the topology knows no plans (every route). A plan id the topology does not know (made
 * after it was loaded) is a plan with no routes until the next reload: never more than granted.
 */
export function planOf(topology: FleetSnapshot, sub: Pick<SnapshotSubscriber, "clusterId" | "planId">): SnapshotPlan | null {
  if (!topology.plans) return null;
  const id = sub.planId ?? topology.clusters.get(sub.clusterId)?.defaultPlanId ?? null;
  if (id === null) return null;
  return topology.plans.get(id) ?? { id, clusterId: sub.clusterId, allRoutes: false, routeIds: new Set() };
}

/** The routes of a cluster (in order) a plan gives; null plan = all of them. */
export function routesOfPlan<R extends { routeId: string }>(routes: readonly R[], plan: SnapshotPlan | null): readonly R[] {
  if (!plan || plan.allRoutes) return routes;
  return routes.filter((r) => plan.routeIds.has(r.routeId));
}

export async function loadTopologySnapshot(db: DbOrTx): Promise<FleetSnapshot> {
  const [clusterRows, routeRows, inboundRows, serverRows, planRows, planRouteRows] = await Promise.all([
    db.select({ id: clusters.id, name: clusters.name, devicelessFetches: clusters.devicelessFetches, branding: clusters.branding, defaultPlanId: clusters.defaultPlanId }).from(clusters),
    db.select().from(routes).orderBy(asc(routes.position), asc(routes.createdAt)),
    db.select().from(inbounds).orderBy(asc(inbounds.name)),
    db
      .select({ server: servers, status: serverHealth.status, recoveredAt: serverHealth.recoveredAt, notServed: serverAgentState.unservedInbounds })
      .from(servers)
      .leftJoin(serverHealth, eq(serverHealth.serverId, servers.id))
      .leftJoin(serverAgentState, eq(serverAgentState.serverId, servers.id)),
    db.select({ id: plans.id, clusterId: plans.clusterId, allRoutes: plans.allRoutes }).from(plans),
    db.select({ planId: planRoutes.planId, routeId: planRoutes.routeId }).from(planRoutes),
  ]);
  const topology: FleetSnapshot = {
    clusters: new Map(),
    servers: new Map(),
    inbounds: new Map(),
    routeNames: new Map(),
    routeFlags: new Map(),
    routeLineNames: new Map(),
    plans: new Map(),
  };
  for (const c of clusterRows) {
    topology.clusters.set(c.id, { id: c.id, name: c.name, devicelessFetches: c.devicelessFetches, branding: readBranding(c.branding), routes: [], defaultPlanId: c.defaultPlanId });
  }
  const planRouteIds = new Map<string, Set<string>>();
  for (const pr of planRouteRows) {
    let set = planRouteIds.get(pr.planId);
    if (!set) planRouteIds.set(pr.planId, (set = new Set()));
    set.add(pr.routeId);
  }
  for (const p of planRows) topology.plans!.set(p.id, { id: p.id, clusterId: p.clusterId, allRoutes: p.allRoutes, routeIds: planRouteIds.get(p.id) ?? new Set() });
  for (const { server: s, status, recoveredAt, notServed } of serverRows) {
    topology.servers.set(s.id, {
      id: s.id,
      clusterId: s.clusterId,
      name: s.name,
      address: s.address,
      enabled: s.enabled,
      status: effectiveStatus(s.enabled, status),
      recoveredAtMs: recoveredAt ? recoveredAt.getTime() : null,
      unavailableInbounds: unavailableInbounds(notServed),
      coefficient: s.coefficient,
      capacityMbps: s.capacityMbps,
    });
  }
  const routeInputs = new Map<string, RouteInput & { inbounds: RouteInput["inbounds"][number][] }>();
  for (const r of routeRows) {
    const input = { routeId: r.id, algorithm: r.algorithm, hysteresis: r.hysteresis, name: r.name, inbounds: [] };
    routeInputs.set(r.id, input);
    topology.routeNames.set(r.id, r.name);
    topology.routeFlags?.set(r.id, r.flag ?? null);
    if (r.lineName === "route") topology.routeLineNames?.set(r.id, routeLineName(r.name, r.flag));
    topology.clusters.get(r.clusterId)?.routes.push(input);
  }
  for (const i of inboundRows) {
    topology.inbounds.set(i.id, {
      id: i.id,
      serverId: i.serverId,
      routeId: i.routeId,
      name: i.name,
      port: i.port,
      security: i.security,
      sni: i.sni,
      realityPublicKey: i.realityPublicKey,
      realityShortId: i.realityShortIds[0] ?? null,
      isFallback: i.isFallback,
      proto: {
        protocol: i.protocol as InboundProtocol,
        transport: i.transport as InboundTransport,
        path: i.path,
        host: i.host,
        serviceName: i.serviceName,
        ssMethod: i.ssMethod,
        ssServerKey: i.ssServerKey,
      },
    });
    if (i.routeId) routeInputs.get(i.routeId)?.inbounds.push({ inboundId: i.id, serverId: i.serverId, isFallback: i.isFallback, name: i.name });
  }
  return topology;
}

/**
 * Every server's current status and the inbounds it does not serve (what the topology snapshot
 * would say), for a reload after a "health" event: one small read instead of the whole topology.
 */
export interface ServerStatusRow {
  status: string;
  recoveredAtMs: number | null;
  unavailableInbounds?: ReadonlyMap<string, string>;
}

export async function loadServerStatuses(db: DbOrTx): Promise<Map<string, ServerStatusRow>> {
  const rows = await db
    .select({ id: servers.id, enabled: servers.enabled, status: serverHealth.status, recoveredAt: serverHealth.recoveredAt, notServed: serverAgentState.unservedInbounds })
    .from(servers)
    .leftJoin(serverHealth, eq(serverHealth.serverId, servers.id))
    .leftJoin(serverAgentState, eq(serverAgentState.serverId, servers.id));
  return new Map(
    rows.map((r) => [r.id, { status: effectiveStatus(r.enabled, r.status), recoveredAtMs: r.recoveredAt ? r.recoveredAt.getTime() : null, unavailableInbounds: unavailableInbounds(r.notServed) }]),
  );
}

/** What the agent said it does not serve (server_agent_state), as the balancer reads it; undefined = nothing. */
function unavailableInbounds(notServed: ReadonlyArray<{ inboundId: string; reason: string }> | null): ReadonlyMap<string, string> | undefined {
  if (!notServed || notServed.length === 0) return undefined;
  return new Map(notServed.map((u) => [u.inboundId, u.reason]));
}

function sameReasons(a: ReadonlyMap<string, string> | undefined, b: ReadonlyMap<string, string> | undefined): boolean {
  if ((a?.size ?? 0) !== (b?.size ?? 0)) return false;
  for (const [id, reason] of a ?? []) if (b?.get(id) !== reason) return false;
  return true;
}

/**
 * The topology with new statuses (and inbounds not served): changed servers get new objects (the old snapshot is never
 * mutated, so a request holding it sees one consistent picture). Returns the ids that
 * changed; a server added or removed meanwhile is left to the next topology reload.
 */
export function withStatuses(topology: FleetSnapshot, statuses: ReadonlyMap<string, ServerStatusRow>): { topology: FleetSnapshot; changed: string[] } {
  const changed: string[] = [];
  for (const [id, s] of topology.servers) {
    const row = statuses.get(id);
    // The inbounds it does not serve change the choice as its status does (issue 25).
    if (row !== undefined && (row.status !== s.status || !sameReasons(row.unavailableInbounds, s.unavailableInbounds))) changed.push(id);
  }
  if (changed.length === 0) return { topology, changed };
  const next = new Map(topology.servers);
  for (const id of changed) {
    const s = topology.servers.get(id)!;
    const row = statuses.get(id)!;
    next.set(id, { ...s, status: row.status, recoveredAtMs: row.recoveredAtMs, unavailableInbounds: row.unavailableInbounds });
  }
  return { topology: { ...topology, servers: next }, changed };
}

/** A server's balancing figures: its last load from heartbeats while they are current, else its last report's. */
export interface MetricsRow {
  serverId: string;
  /** When the figure was taken (the load's arrival, or the report's). */
  reportedAt: Date;
  usersOnline: number;
  trafficBps: number;
  peakBps: number;
  /** A report showed its users held back (server/monitoring reported-health.ts). */
  heldBack: boolean;
  /** What the link carried at the last report that showed it (null: not known). */
  heldBackBps: number | null;
}

export async function loadMetricsSnapshot(db: DbOrTx): Promise<Map<string, MetricsRow>> {
  const rows = await db.select().from(serverMetrics);
  return new Map(
    rows.map((m) => {
      // Its load from heartbeats while they are current, else its report (core/heartbeat.ts balancerLoad).
      const f = storedFigure(m);
      return [m.serverId, { serverId: m.serverId, reportedAt: new Date(f.atMs), usersOnline: f.users, trafficBps: f.trafficBps, peakBps: m.peakBps, heldBack: m.heldBackAt !== null, heldBackBps: m.heldBackBps }];
    }),
  );
}

/** What the balancer needs per server: availability (only `healthy` counts, and per inbound: issue 25) and load. */
export function balancerMetrics(topology: FleetSnapshot, metrics: ReadonlyMap<string, MetricsRow>): Map<string, ServerMetrics> {
  const out = new Map<string, ServerMetrics>();
  for (const s of topology.servers.values()) {
    const m = metrics.get(s.id);
    out.set(s.id, {
      enabled: s.enabled,
      available: s.enabled && isAvailable(s.status),
      // Back from an outage then: a move there from a working server is damped for a while (balancer: fail-back dwell).
      availableSinceMs: s.enabled && isAvailable(s.status) && s.recoveredAtMs !== null ? s.recoveredAtMs : undefined,
      unavailableInbounds: s.unavailableInbounds,
      coefficient: s.coefficient,
      capacityOverrideBps: s.capacityMbps ? s.capacityMbps * 1e6 : null,
      learnedPeakBps: m?.peakBps ?? 0,
      heldBack: m?.heldBack ?? false,
      heldBackBps: m?.heldBackBps ?? 0, // 0: not known (seenFullBps counts only a positive rate)
      reportedUsers: m?.usersOnline ?? 0,
      reportedTrafficBps: m?.trafficBps ?? 0,
      reportedAt: m ? m.reportedAt.getTime() : Number.NEGATIVE_INFINITY,
      name: s.name,
    });
  }
  return out;
}

/** Rows per read of a whole table's subscribers: a million are read in steps, never held twice at once. */
const SUBSCRIBER_PAGE = 20_000;
/**
 * Rows per read of the traffic totals: the pass runs while the panel serves, and the kept rows
 * are updated a page per turn of the event loop. At a million subscribers, on 2 busy cores,
 * a page of 20,000 held it for about 70 ms and one of 5,000 for 25–45 ms (each row a lookup
 * in a million-entry map and a visit to a row that is rarely in cache); 2,000 keep a turn
 * near 10–20 ms, at 500 keyset reads per pass.
 */
const TRAFFIC_PAGE = 2_000;

/** The columns the snapshot keeps of a subscriber (not the note, the name's lower case and other list-only columns). */
const snapshotColumns = {
  id: subscribers.id,
  clusterId: subscribers.clusterId,
  name: subscribers.name,
  token: subscribers.token,
  vlessUuid: subscribers.vlessUuid,
  enabled: subscribers.enabled,
  expiresAt: subscribers.expiresAt,
  trafficLimitBytes: subscribers.trafficLimitBytes,
  trafficUsedBytes: subscribers.trafficUsedBytes,
  trafficUpBytes: subscribers.trafficUpBytes,
  trafficDownBytes: subscribers.trafficDownBytes,
  nextResetAt: subscribers.nextResetAt,
  deviceLimit: subscribers.deviceLimit,
  trojanPassword: subscribers.trojanPassword,
  planId: subscribers.planId,
};

/**
 * Every row `read` gives in `id` order, SUBSCRIBER_PAGE at a time (keyset pages on the primary
 * key: `read(after)` returns the page after that id). Pages are not one snapshot of the table: a
 * subscriber written meanwhile is named by its change event, which the snapshot cache reads
 * again after this.
 */
async function* pagesById<T extends { id: string }>(pageSize: number, read: (after: SQL | undefined) => Promise<T[]>): AsyncGenerator<T[]> {
  let after: string | null = null;
  for (;;) {
    const page = await read(after === null ? undefined : gt(subscribers.id, after));
    if (page.length > 0) yield page;
    if (page.length < pageSize) return;
    after = page[page.length - 1]!.id;
  }
}

/**
 * One string per cluster and plan id, not one per subscriber row (a million rows carry a
 * handful of distinct values: about 100 MB of copies at a million).
 */
function interner(): (s: string | null) => string | null {
  const seen = new Map<string, string>();
  return (s) => {
    if (s === null) return null;
    const known = seen.get(s);
    if (known !== undefined) return known;
    seen.set(s, s);
    return s;
  };
}

/** The subscribers by token: all of them, or those of `ids` that still exist. */
export async function loadSubscribers(db: DbOrTx, ids?: readonly string[], pageSize = SUBSCRIBER_PAGE): Promise<Map<string, SnapshotSubscriber>> {
  const byToken = new Map<string, SnapshotSubscriber>();
  const intern = interner();
  // Copied into one literal shape (the answer path reads these fields on every request).
  const keep = (rows: SnapshotSubscriber[]) => {
    for (const r of rows) {
      const s: SnapshotSubscriber = {
        id: r.id,
        clusterId: intern(r.clusterId)!,
        name: r.name,
        token: r.token,
        vlessUuid: r.vlessUuid,
        enabled: r.enabled,
        expiresAt: r.expiresAt,
        trafficLimitBytes: r.trafficLimitBytes,
        trafficUsedBytes: r.trafficUsedBytes,
        trafficUpBytes: r.trafficUpBytes,
        trafficDownBytes: r.trafficDownBytes,
        nextResetAt: r.nextResetAt,
        deviceLimit: r.deviceLimit,
        trojanPassword: r.trojanPassword,
        planId: intern(r.planId ?? null),
      };
      byToken.set(s.token, s);
    }
  };
  if (ids === undefined) {
    const pages = pagesById(pageSize, (after) => db.select(snapshotColumns).from(subscribers).where(after).orderBy(asc(subscribers.id)).limit(pageSize));
    for await (const page of pages) keep(page);
    return byToken;
  }
  for (let k = 0; k < ids.length; k += 1000) {
    keep(await db.select(snapshotColumns).from(subscribers).where(inArray(subscribers.id, ids.slice(k, k + 1000) as string[])));
  }
  return byToken;
}

/**
 * What a traffic-only reread takes of the subscribers (subscription-userinfo and the limit),
 * a page of them in columns: row k is ids[k] with used[k], up[k] and down[k] bytes.
 */
export interface TrafficPage {
  ids: string[];
  used: Float64Array;
  up: Float64Array;
  down: Float64Array;
}

/**
 * Every subscriber's traffic totals, a page at a time in id order. Each page comes as one text
 * value ("id:used:up:down,…", string_agg) parsed here into columns: a million rows read as rows
 * and objects (a row array, field strings, a mapped object and three parsed bigints each) were
 * about 900 MB of short-lived objects per pass, enough to bring on a full collection of the
 * panel's heap (hundreds of milliseconds of the event loop) by themselves.
 */
export async function* subscriberTrafficPages(db: DbOrTx, pageSize = TRAFFIC_PAGE): AsyncGenerator<TrafficPage> {
  let after: string | null = null;
  for (;;) {
    const where = after === null ? sql`` : sql`where ${subscribers.id} > ${after}::uuid`;
    const [row] = rowsOf<{ rows: string | null }>(
      await db.execute(sql`
        select string_agg(id::text || ':' || used::text || ':' || up::text || ':' || down::text, ',' order by id) as rows
        from (select ${subscribers.id} as id, ${subscribers.trafficUsedBytes} as used, ${subscribers.trafficUpBytes} as up, ${subscribers.trafficDownBytes} as down
              from ${subscribers} ${where} order by ${subscribers.id} limit ${pageSize}) page`),
    );
    const page = parseTrafficPage(row?.rows ?? "");
    if (page.ids.length > 0) yield page;
    if (page.ids.length < pageSize) return;
    after = page.ids[page.ids.length - 1]!;
  }
}

/** "id:used:up:down,…" (ids without ':' or ',', whole non-negative numbers) into columns. */
export function parseTrafficPage(text: string): TrafficPage {
  let n = text.length === 0 ? 0 : 1;
  for (let i = text.indexOf(","); i !== -1; i = text.indexOf(",", i + 1)) n++;
  const page: TrafficPage = { ids: new Array<string>(n), used: new Float64Array(n), up: new Float64Array(n), down: new Float64Array(n) };
  let at = 0;
  for (let k = 0; k < n; k++) {
    const colon = text.indexOf(":", at);
    if (colon === -1) throw new Error(`traffic page: row ${k} has no totals`);
    page.ids[k] = text.slice(at, colon);
    at = colon + 1;
    for (const column of [page.used, page.up, page.down]) {
      let value = 0;
      let digits = 0;
      for (; at < text.length; at++, digits++) {
        const c = text.charCodeAt(at) - 48;
        if (c < 0 || c > 9) break;
        value = value * 10 + c;
      }
      if (digits === 0) throw new Error(`traffic page: row ${k} has a total that is not a whole number`);
      column[k] = value;
      at++; // past ':' or ','
    }
  }
  return page;
}

/**
 * Entries are the same for every subscriber: one object per (topology, inbound). An inbound
 * is in one route of a topology, so the inbound id alone keys it; a route id that is not the
 * inbound's own gets an entry built for it, uncached.
 */
const entries = new WeakMap<FleetSnapshot, Map<string, SubscriptionEntry | null>>();

export function entryFor(topology: FleetSnapshot, routeId: string, inboundId: string): SubscriptionEntry | null {
  let byInbound = entries.get(topology);
  if (!byInbound) entries.set(topology, (byInbound = new Map()));
  let e = byInbound.get(inboundId);
  if (e === undefined) {
    e = buildEntry(topology, topology.inbounds.get(inboundId)?.routeId ?? routeId, inboundId);
    byInbound.set(inboundId, e);
  }
  return e === null || e.routeId === routeId ? e : buildEntry(topology, routeId, inboundId);
}

function buildEntry(topology: FleetSnapshot, routeId: string, inboundId: string): SubscriptionEntry | null {
  const ib = topology.inbounds.get(inboundId);
  const server = ib ? topology.servers.get(ib.serverId) : undefined;
  if (!ib || !server) return null;
  return {
    routeId,
    route: topology.routeNames.get(routeId) ?? "",
    routeFlag: topology.routeFlags?.get(routeId) ?? null,
    inboundId,
    inbound: ib.name,
    ...(topology.routeLineNames?.has(routeId) ? { lineName: topology.routeLineNames.get(routeId)! } : {}),
    server: server.name,
    address: server.address,
    port: ib.port,
    security: ib.security,
    sni: ib.sni,
    realityPublicKey: ib.realityPublicKey,
    realityShortId: ib.realityShortId,
    ...ib.proto,
  };
}

