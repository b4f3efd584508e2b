/**
 * The subscription service: answers GET /sub/<token> from the in-memory snapshot, runs the
 * balancer for each non-empty route, stores changed assignments in the background, and keeps
 * answering from the last good snapshot when the database is away (marked stale).
 *
 * Freshness: a topology, health or subscriber change marks the snapshot dirty and the next
 * request waits for one reload, so a drag shows in the very next fetch. Load figures
 * (metrics) only move scores; a cached answer is reused for up to ANSWER_TTL_MS under them,
 * and for as long as nothing at all changed (the same inputs give the same choice).
 *
 * Status changes are not topology changes: a "health" event re-reads only the servers'
 * statuses and stamps each changed server with a new status epoch. A cached answer keeps its
 * routes' decisions and, at its next fetch, re-decides only the routes whose answer depends
 * on a changed server: the server it names, or — for a route in fallback, panic or with no
 * inbound — any server of the route. A server going down thus re-decides only the routes
 * of the users it served, and it is never named again after the reload that saw it down.
 * A server coming back in a route that still has candidates only moves scores (a better
 * candidate appeared), like a load report: such answers pick it up within ANSWER_TTL_MS.
 */
import type { Db } from "@/db/client";
import { Balancer, type Decision, type DecisionReason, type RouteInput, type ServerMetrics } from "@/server/balancer";
import { instanceId, onChange, publishChange, type ChangeEvent } from "@/server/bus";
import { counter, gauge } from "@/server/metrics";
import { logger } from "@/server/logger";
import { isDatabaseDown } from "@/server/db-errors";
import { blockReason } from "@/server/domain/subscriber-access";
import {
  blockMessage,
  CONTENT_TYPES,
  INFO_UUID,
  infoEntry,
  parseFormat,
  profileTitle,
  renderSubscription,
  subscriptionUserinfo,
  type SubscriptionEntry,
  type SubscriptionFormat,
  vlessShareLink,
} from "./formats";
import { renderSubscriberPage, SUBSCRIBER_PAGE_CSP } from "./page";
import { formatForUserAgent, type DetectedFormat } from "./user-agent";
import { subscriptionUrl } from "@/lib/subscription-links";
import { isRouteInPanic } from "@/core/panic";
import { choicesByRoute, loadAssignments, loadSubscribersWithChoices, storeAssignments } from "@/server/assignments/store";
import {
  balancerMetrics,
  entryFor,
  loadMetricsSnapshot,
  loadServerStatuses,
  loadSubscribers,
  loadTopologySnapshot,
  withStatuses,
  type MetricsRow,
  type SnapshotSubscriber,
  type FleetSnapshot,
} from "./snapshot";

export const ANSWER_TTL_MS = 30_000;
const FLUSH_EVERY_MS = 200;
const RETRY_RELOAD_AFTER_MS = 1_000;
export const PROFILE_UPDATE_INTERVAL_HOURS = 12;

/** What the request says besides the token and ?format. */
export interface AnswerContext {
  /** Picks the format when there is no ?format (user-agent.ts). */
  userAgent?: string | null;
  /** Where the subscription lives (PUBLIC_URL, else the request's Host): the HTML page's links. */
  origin?: string;
}

export type AnswerFormat = SubscriptionFormat | "html";

const HTML_CONTENT_TYPE = "text/html; charset=utf-8";

export interface SubscriptionAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The body is ASCII only (share links in base64): its Latin-1 bytes are its UTF-8 bytes, written without a UTF-8 pass. */
  ascii?: boolean;
}

/** One non-empty route of a subscriber's answer, as last decided. */
interface RouteSlot {
  route: RouteInput;
  inboundId: string | null;
  serverId: string | null;
  /** Fallback, panic or none: the answer depends on every server of the route, not only the named one. */
  watchAll: boolean;
  entry: SubscriptionEntry | null;
}

/** A subscriber's decided answer: one slot per non-empty route, and its renderings. */
interface Decided {
  topologyVersion: number;
  metricsVersion: number;
  /** When every route was last decided (reused under load changes for ANSWER_TTL_MS). */
  at: number;
  /** Status changes up to this epoch are reflected in the slots. */
  statusEpoch: number;
  slots: RouteSlot[];
  /** Keyed by the chosen format (a detected one too), and for the HTML page by origin as well. */
  bodies: Map<string, { subscribersVersion: number; body: string; headers: Record<string, string> }>;
}

const requests = counter("routeboard_subscription_requests_total", "Subscription requests by outcome");
const decisions = counter("routeboard_balancer_decisions_total", "Balancer decisions by reason");
const recomputed = counter("routeboard_subscription_recomputed_total", "Answers decided again: all routes (full) or only the routes a status change touched (partial)");
const reloads = counter("routeboard_snapshot_reloads_total", "Snapshot reloads by the part re-read");
const statusChanges = counter("routeboard_server_status_changes_total", "Server status changes seen by the subscription snapshot");

/** How stale subscription-userinfo's traffic figures may get while agents report. */
export const TRAFFIC_RELOAD_MS = 5000;

const NOT_FOUND: SubscriptionAnswer = { status: 404, headers: { "content-type": "text/plain; charset=utf-8" }, body: "Not found\n" };

export class SubscriptionService {
  private topology: FleetSnapshot | null = null;
  private metrics = new Map<string, MetricsRow>();
  private serverMetrics = new Map<string, ServerMetrics>();
  private subscribersByToken = new Map<string, SnapshotSubscriber>();
  private subscribersById = new Map<string, SnapshotSubscriber>();
  private topologyVersion = 0;
  private metricsVersion = 0;
  private subscribersVersion = 0;
  /** Bumped by every reload that saw a status change; serverId → epoch of its last change. */
  private statusEpoch = 0;
  private readonly statusChangedAt = new Map<string, number>();
  private dirty = { topology: true, health: true, metrics: true, subscribers: true };
  private reloading: Promise<void> | null = null;
  private lastReloadFailedAt = 0;
  private loadedAt = 0;
  private subscribersLoadedAt = 0;
  private trafficMoved = false;
  /** True while the last reload failed: answers come from the last good snapshot. */
  stale = false;
  private readonly decided = new Map<string, Decided>();
  private readonly assignmentCache = new Map<string, Map<string, string>>();
  /**
   * Subscribers whose choices changed and are not yet stored, and the batch being stored:
   * subscriberId → all their choices (routeId → inboundId), written as one row.
   */
  private pendingWrites = new Map<string, Map<string, string>>();
  private storing = new Map<string, Map<string, string>>();
  /**
   * Subscribers that have, or may have, a stored row; null while unknown. One not in it has
   * nothing stored, so their first fetch decides without a read. Read whole by the first
   * reload (and by the next one after an "anyone's choices changed" event), then kept up to
   * date: every row this instance stores, and every one another instance names, is added.
   */
  private withStoredChoices: Set<string> | null = null;
  /** While the whole set is being read: who was stored or named meanwhile (the read may miss them). */
  private storedDuringRead: Set<string> | null = null;
  /** Bumped by an "anyone's choices changed" event: a whole-set read begun before it is dropped. */
  private storedSetGeneration = 0;
  /** Stored choices of the subscribers asked for within one tick: one query for all of them. */
  private loadBatch: { ids: Set<string>; done: Promise<Map<string, string[]>> } | null = null;
  /** The read of stored choices in flight, if any: the next batch is sent once it is back. */
  private loadRunning: Promise<void> | null = null;
  private flushTimer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private unsubscribe: (() => void) | null = null;
  private panicRoutes = 0;
  private readonly routesCache = new WeakMap<FleetSnapshot, Map<string, readonly RouteInput[]>>();
  readonly balancer = new Balancer();

  constructor(
    private readonly db: Db,
    private readonly clock: () => number = Date.now,
  ) {}

  start(): void {
    this.unsubscribe = onChange((e) => this.onChange(e));
    this.flushTimer = setInterval(() => void this.flushAssignments(), FLUSH_EVERY_MS);
    this.flushTimer.unref();
    gauge("routeboard_routes_in_panic", "Non-empty routes with no available inbound and no available fallback", () => this.panicRoutes);
    gauge("routeboard_snapshot_age_seconds", "Age of the subscription snapshot", () => (this.loadedAt ? (this.clock() - this.loadedAt) / 1000 : -1));
    gauge("routeboard_assignment_writes_pending", "Subscribers whose changed assignments are not yet stored", () => this.pendingWrites.size + this.storing.size);
    gauge("routeboard_snapshot_stale", "1 while answering from the last good snapshot because the database is unreachable", () => (this.stale ? 1 : 0));
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    if (this.flushTimer) clearInterval(this.flushTimer);
    await this.flushAssignments();
  }

  private onChange(e: ChangeEvent): void {
    if (e.kind === "assignments") {
      // Another instance stored new choices: answer those users from the database again,
      // so every instance keeps giving a user the same inbound.
      if (e.origin === instanceId()) return;
      if (!e.subscriberIds) {
        this.assignmentCache.clear();
        this.decided.clear();
        this.withStoredChoices = null;
        this.storedSetGeneration++;
        return;
      }
      this.markStored(e.subscriberIds);
      for (const id of e.subscriberIds) {
        this.assignmentCache.delete(id);
        this.decided.delete(id);
      }
      return;
    }
    if (e.kind === "metrics") this.dirty.metrics = true;
    else if (e.kind === "subscribers") this.dirty.subscribers = true;
    else if (e.kind === "traffic") this.trafficMoved = true;
    // A status change moves no inbound and no stored choice: statuses only (see the header).
    else if (e.kind === "health") this.dirty.health = true;
    else if (e.kind === "topology" || e.kind === "settings") {
      this.dirty.topology = true;
      // A topology change may move inbounds other instances assigned: re-read on next use.
      this.assignmentCache.clear();
    }
  }

  /** Brings the snapshot up to date if anything changed (one reload at a time). */
  async refresh(): Promise<void> {
    // A reload in flight clears the dirty flags when it starts: wait for it, or a request
    // arriving meanwhile would answer from the picture being replaced.
    if (this.reloading) await this.reloading;
    // Traffic moves with every agent report: the subscribers' totals (subscription-userinfo)
    // are re-read at most every TRAFFIC_RELOAD_MS, not once per report.
    if (this.trafficMoved && this.clock() - this.subscribersLoadedAt >= TRAFFIC_RELOAD_MS) {
      this.trafficMoved = false;
      this.dirty.subscribers = true;
    }
    if (!this.dirty.topology && !this.dirty.health && !this.dirty.metrics && !this.dirty.subscribers) return;
    if (this.topology && this.stale && this.clock() - this.lastReloadFailedAt < RETRY_RELOAD_AFTER_MS) return;
    this.reloading ??= this.reload().finally(() => {
      this.reloading = null;
    });
    await this.reloading;
  }

  private async reload(): Promise<void> {
    const want = { ...this.dirty };
    this.dirty = { topology: false, health: false, metrics: false, subscribers: false };
    const storedGeneration = this.storedSetGeneration;
    const storedMeanwhile = this.withStoredChoices === null ? (this.storedDuringRead = new Set()) : null;
    try {
      const fullTopology = want.topology || !this.topology;
      const [loadedTopology, statuses, metrics, subs, withStored] = await Promise.all([
        fullTopology ? loadTopologySnapshot(this.db) : Promise.resolve(this.topology!),
        !fullTopology && want.health ? loadServerStatuses(this.db) : Promise.resolve(null),
        want.metrics || want.topology ? loadMetricsSnapshot(this.db) : Promise.resolve(this.metrics),
        want.subscribers || this.subscribersByToken.size === 0 ? loadSubscribers(this.db) : Promise.resolve(this.subscribersByToken),
        storedMeanwhile ? loadSubscribersWithChoices(this.db) : Promise.resolve(null),
      ]);
      if (withStored && storedMeanwhile && this.storedSetGeneration === storedGeneration) {
        for (const id of storedMeanwhile) withStored.add(id);
        this.withStoredChoices = withStored;
      }
      let topology = loadedTopology;
      if (statuses) {
        const next = withStatuses(topology, statuses);
        topology = next.topology;
        if (next.changed.length > 0) {
          this.statusEpoch++;
          for (const id of next.changed) this.statusChangedAt.set(id, this.statusEpoch);
        }
      }
      for (const m of metrics.values()) {
        const before = this.metrics.get(m.serverId);
        if (!before || before.reportedAt.getTime() !== m.reportedAt.getTime()) {
          this.balancer.observeReport(m.serverId, { users: m.usersOnline, trafficBps: m.trafficBps, atMs: m.reportedAt.getTime() });
        }
      }
      for (const part of ["topology", "health", "metrics", "subscribers"] as const) if (want[part]) reloads.inc({ part });
      if (topology !== this.topology && this.topology) {
        let changed = 0;
        for (const [id, srv] of topology.servers) if (this.topology.servers.get(id)?.status !== srv.status) changed++;
        if (changed) statusChanges.inc({}, changed);
      }
      if (fullTopology && topology !== this.topology) this.topologyVersion++;
      if (metrics !== this.metrics) this.metricsVersion++;
      if (subs !== this.subscribersByToken) {
        this.subscribersLoadedAt = this.clock();
        this.subscribersById = new Map([...subs.values()].map((s) => [s.id, s]));
        // Decisions do not depend on a subscriber's fields; their headers and bodies may.
        this.subscribersVersion++;
        for (const id of this.decided.keys()) if (!this.subscribersById.has(id)) this.decided.delete(id);
      }
      this.topology = topology;
      this.metrics = metrics;
      this.subscribersByToken = subs;
      this.serverMetrics = balancerMetrics(topology, metrics);
      this.panicRoutes = countPanicRoutes(topology, this.serverMetrics);
      this.loadedAt = this.clock();
      this.stale = false;
    } catch (err) {
      // Keep the last good snapshot; try again shortly.
      this.dirty = {
        topology: this.dirty.topology || want.topology,
        health: this.dirty.health || want.health,
        metrics: this.dirty.metrics || want.metrics,
        subscribers: this.dirty.subscribers || want.subscribers,
      };
      this.lastReloadFailedAt = this.clock();
      if (!this.topology) throw err;
      if (!this.stale) logger().warn({ err: (err as Error).message }, "snapshot reload failed; answering from the last good snapshot");
      this.stale = true;
    } finally {
      if (this.storedDuringRead === storedMeanwhile) this.storedDuringRead = null;
    }
  }

  /** These subscribers have a stored row now (stored here, or named by another instance). */
  private markStored(subscriberIds: Iterable<string>): void {
    for (const id of subscriberIds) {
      this.withStoredChoices?.add(id);
      this.storedDuringRead?.add(id);
    }
  }

  /** GET /sub/<token>[?format=...]; without ?format the User-Agent picks (user-agent.ts). */
  async answer(token: string, formatParam: string | null, ctx: AnswerContext = {}): Promise<SubscriptionAnswer> {
    let format: AnswerFormat | null;
    // The answer depends on the User-Agent only when ?format is absent: caches must key on it then.
    const vary = formatParam === null;
    if (vary) format = formatForUserAgent(ctx.userAgent) satisfies DetectedFormat;
    else format = parseFormat(formatParam);
    if (!format) {
      requests.inc({ outcome: "bad_request" });
      return { status: 400, headers: { "content-type": "text/plain; charset=utf-8" }, body: "Unknown format: use json, clash or singbox, or leave it out for share links\n" };
    }
    if (!/^[A-Za-z0-9_-]{8,128}$/.test(token)) {
      requests.inc({ outcome: "not_found" });
      return NOT_FOUND;
    }
    await this.refresh();
    const now = this.clock();
    const sub = this.subscribersByToken.get(token);
    // Unknown and disabled: the same 404, no hint of which.
    if (!sub || !sub.enabled || !this.topology) {
      requests.inc({ outcome: "not_found" });
      return NOT_FOUND;
    }
    const origin = ctx.origin ?? "http://localhost";
    const blocked = blockReason(sub, now);
    if (blocked) {
      // Expired or over the limit: one entry that says so, in every format (no balancing, no assignment).
      requests.inc({ outcome: blocked.kind });
      const message = blockMessage(blocked);
      const entries = [infoEntry(message)];
      const body = format === "html" ? await this.renderPage(sub, entries, INFO_UUID, origin, { reason: blocked, message }) : renderSubscription(format, INFO_UUID, entries);
      return { status: 200, headers: this.withStale(this.headersFor(sub, format, vary)), body, ascii: format === "base64" };
    }
    let d = this.decided.get(sub.id);
    if (!d || !this.isCurrent(d, now) || d.statusEpoch !== this.statusEpoch) {
      const previous = this.knownAssignments(sub.id) ?? (await this.assignmentsOf(sub.id));
      d = this.bringUpToDate(sub, previous, this.clock());
    }
    // The page's links name the origin: one cached page per subscriber, for the origin last asked.
    const key = format === "html" ? `html ${origin}` : format;
    const cached = d.bodies.get(key);
    if (cached && cached.subscribersVersion === this.subscribersVersion) {
      requests.inc({ outcome: this.stale ? "stale" : "ok" });
      return { status: 200, headers: this.withStale(vary ? { ...cached.headers, vary: "User-Agent" } : cached.headers), body: cached.body, ascii: format === "base64" };
    }
    const entries: SubscriptionEntry[] = [];
    for (const slot of d.slots) if (slot.entry) entries.push(slot.entry);
    const headers = this.headersFor(sub, format, false);
    let body: string;
    if (format === "html") {
      body = await this.renderPage(sub, entries, sub.vlessUuid, origin, null);
      for (const k of d.bodies.keys()) if (k.startsWith("html ")) d.bodies.delete(k);
    } else {
      body = renderSubscription(format, sub.vlessUuid, entries);
    }
    d.bodies.set(key, { subscribersVersion: this.subscribersVersion, body, headers });
    requests.inc({ outcome: this.stale ? "stale" : "ok" });
    return { status: 200, headers: this.withStale(vary ? { ...headers, vary: "User-Agent" } : headers), body, ascii: format === "base64" };
  }

  private headersFor(sub: SnapshotSubscriber, format: AnswerFormat, vary: boolean): Record<string, string> {
    const cluster = this.topology!.clusters.get(sub.clusterId);
    return {
      "content-type": format === "html" ? HTML_CONTENT_TYPE : CONTENT_TYPES[format],
      "cache-control": "no-store",
      "subscription-userinfo": subscriptionUserinfo(sub.trafficUpBytes, sub.trafficDownBytes, sub.trafficLimitBytes, sub.expiresAt),
      "profile-update-interval": String(PROFILE_UPDATE_INTERVAL_HOURS),
      "profile-title": profileTitle(cluster?.name ?? "Routeboard"),
      ...(format === "html" ? { "content-security-policy": SUBSCRIBER_PAGE_CSP } : {}),
      ...(vary ? { vary: "User-Agent" } : {}),
    };
  }

  private renderPage(sub: SnapshotSubscriber, entries: SubscriptionEntry[], uuid: string, origin: string, blocked: Parameters<typeof renderSubscriberPage>[0]["blocked"]): Promise<string> {
    return renderSubscriberPage({
      title: this.topology!.clusters.get(sub.clusterId)?.name ?? "Routeboard",
      subscriberName: sub.name,
      url: subscriptionUrl(origin, sub.token),
      upBytes: sub.trafficUpBytes,
      downBytes: sub.trafficDownBytes,
      limitBytes: sub.trafficLimitBytes,
      expiresAt: sub.expiresAt,
      blocked,
      links: entries.map((e) => ({ name: e.inbound, link: vlessShareLink(uuid, e) })),
    });
  }

  private withStale(h: Record<string, string>): Record<string, string> {
    return this.stale ? { ...h, "x-routeboard-stale": "1" } : h;
  }

  /**
   * The subscriber's choices when they need no read: cached, not yet stored (those win over
   * the database), or none because nothing is stored for them. Undefined: read them.
   */
  private knownAssignments(subscriberId: string): Map<string, string> | undefined {
    const cached = this.assignmentCache.get(subscriberId);
    if (cached) return cached;
    const unsaved = this.pendingWrites.get(subscriberId) ?? this.storing.get(subscriberId);
    if (!unsaved && (this.withStoredChoices === null || this.withStoredChoices.has(subscriberId))) return undefined;
    const known = new Map(unsaved);
    this.assignmentCache.set(subscriberId, known);
    return known;
  }

  private async assignmentsOf(subscriberId: string): Promise<Map<string, string>> {
    const known = this.knownAssignments(subscriberId);
    if (known) return known;
    let stored: string[] = [];
    try {
      stored = (await this.loadStored(subscriberId)) ?? stored;
    } catch (err) {
      if (!isDatabaseDown(err)) throw err;
    }
    const meanwhile = this.assignmentCache.get(subscriberId);
    if (meanwhile) return meanwhile;
    // Choices not yet stored win over what the database has.
    const loaded = new Map(this.pendingWrites.get(subscriberId) ?? this.storing.get(subscriberId) ?? choicesByRoute(this.topology!, stored));
    this.assignmentCache.set(subscriberId, loaded);
    return loaded;
  }

  /**
   * One subscriber's stored choices, read together with the others asked for in the same
   * tick, or, while a read is in flight, with every one asked for until it is back: under a
   * burst of first fetches one read serves many requests instead of one read per tick.
   */
  private loadStored(subscriberId: string): Promise<string[] | undefined> {
    if (!this.loadBatch) {
      const ids = new Set<string>();
      const ready = this.loadRunning ?? new Promise<void>((resolve) => setImmediate(resolve));
      const done = ready.then(() => {
        if (this.loadBatch?.ids === ids) this.loadBatch = null;
        const read = loadAssignments(this.db, [...ids]);
        const running: Promise<void> = read
          .then(
            () => undefined,
            () => undefined,
          )
          .finally(() => {
            if (this.loadRunning === running) this.loadRunning = null;
          });
        this.loadRunning = running;
        return read;
      });
      this.loadBatch = { ids, done };
    }
    this.loadBatch.ids.add(subscriberId);
    return this.loadBatch.done.then((m) => m.get(subscriberId));
  }

  /** The subscriber's choices (their whole map, as it will be when flushed) are to be stored. */
  private queueWrite(subscriberId: string, choices: Map<string, string>): void {
    this.pendingWrites.set(subscriberId, choices);
  }

  /** Decided with the current topology, and within ANSWER_TTL_MS of the last load change. */
  private isCurrent(d: Decided, now: number): boolean {
    return d.topologyVersion === this.topologyVersion && (d.metricsVersion === this.metricsVersion || (now - d.at < ANSWER_TTL_MS && now >= d.at));
  }

  /**
   * The subscriber's decided answer, up to date: every route decided again when the topology
   * changed (or loads did, past ANSWER_TTL_MS), else only the routes a status change touched.
   */
  private bringUpToDate(sub: SnapshotSubscriber, previous: Map<string, string>, now: number): Decided {
    const d = this.decided.get(sub.id);
    if (!d || !this.isCurrent(d, now)) {
      recomputed.inc({ kind: "full" });
      const routes = this.nonEmptyRoutes(sub.clusterId);
      const fresh: Decided = {
        topologyVersion: this.topologyVersion,
        metricsVersion: this.metricsVersion,
        at: now,
        statusEpoch: this.statusEpoch,
        slots: [],
        bodies: new Map(),
      };
      for (const route of routes) fresh.slots.push({ route, inboundId: null, serverId: null, watchAll: true, entry: null });
      this.decideSlots(sub.id, fresh.slots, routes, previous, now);
      this.decided.set(sub.id, fresh);
      return fresh;
    }
    if (d.statusEpoch === this.statusEpoch) return d;
    const since = d.statusEpoch;
    const changedSince = (serverId: string | null) => serverId !== null && (this.statusChangedAt.get(serverId) ?? 0) > since;
    const touched: RouteSlot[] = [];
    for (const slot of d.slots) {
      if (slot.watchAll ? slot.route.inbounds.some((ib) => changedSince(ib.serverId)) : changedSince(slot.serverId)) touched.push(slot);
    }
    d.statusEpoch = this.statusEpoch;
    if (touched.length > 0) {
      recomputed.inc({ kind: "partial" });
      const routes = touched.map((s) => s.route);
      if (this.decideSlots(sub.id, touched, routes, previous, now)) d.bodies.clear();
    }
    return d;
  }

  /**
   * Decides the given routes for one subscriber, fills their slots and queues the choices
   * that changed for storage. True when any slot now names another inbound.
   */
  private decideSlots(subscriberId: string, slots: RouteSlot[], routes: readonly RouteInput[], previous: Map<string, string>, now: number): boolean {
    const topology = this.topology!;
    const result = this.balancer.decideForSubscriber({
      userId: subscriberId,
      routes,
      servers: this.serverMetrics,
      previousAssignments: previous,
      nowMs: now,
      explain: false,
    });
    const byReason = new Map<DecisionReason, number>();
    let moved = false;
    let changed = false;
    for (let i = 0; i < result.length; i++) {
      const { routeId, decision } = result[i]!;
      const slot = slots[i]!;
      byReason.set(decision.reason, (byReason.get(decision.reason) ?? 0) + 1);
      slot.watchAll = decision.reason !== "best" && decision.reason !== "sticky";
      if (slot.inboundId === decision.inboundId && (slot.entry !== null || decision.inboundId === null)) continue;
      moved = true;
      slot.inboundId = decision.inboundId;
      slot.serverId = decision.serverId;
      slot.entry = decision.inboundId ? entryFor(topology, routeId, decision.inboundId) : null;
      if (decision.inboundId && previous.get(routeId) !== decision.inboundId) {
        previous.set(routeId, decision.inboundId);
        changed = true;
      }
    }
    if (changed) this.queueWrite(subscriberId, previous);
    for (const [r, n] of byReason) decisions.inc({ reason: r }, n);
    return moved;
  }

  /** A cluster's non-empty routes in order: one array per topology, shared by every full decision. */
  private nonEmptyRoutes(clusterId: string): readonly RouteInput[] {
    const topology = this.topology!;
    let byCluster = this.routesCache.get(topology);
    if (!byCluster) this.routesCache.set(topology, (byCluster = new Map()));
    let routes = byCluster.get(clusterId);
    if (!routes) byCluster.set(clusterId, (routes = (topology.clusters.get(clusterId)?.routes ?? []).filter((r) => r.inbounds.length > 0)));
    return routes;
  }

  /** Stores changed assignments (one row per subscriber); kept for the next try if the database is away. */
  async flushAssignments(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.pendingWrites.size === 0) return;
    const batch = this.pendingWrites;
    this.pendingWrites = new Map();
    this.storing = batch;
    // Before the write (its outcome may be unknown when the database goes away) and after it
    // (a whole-set read begun meanwhile may not see the rows).
    this.markStored(batch.keys());
    // Only inbounds still in the route they were chosen for (the row names no route).
    const topology = this.topology;
    const rows = new Map<string, string[]>();
    for (const [id, m] of batch) {
      const ids: string[] = [];
      for (const [routeId, inboundId] of m) if (topology?.inbounds.get(inboundId)?.routeId === routeId) ids.push(inboundId);
      rows.set(id, ids);
    }
    this.flushing = (async () => {
      try {
        await storeAssignments(this.db, rows, new Date(this.clock()));
        const who = [...batch.keys()];
        this.markStored(who);
        // Small batches name their subscribers; a storm says "anyone" (NOTIFY payloads are small).
        publishChange("assignments", null, who.length <= 100 ? who : undefined);
      } catch (err) {
        if (isDatabaseDown(err)) {
          // Retried on the next tick; choices made meanwhile win.
          for (const [id, m] of batch) if (!this.pendingWrites.has(id)) this.queueWrite(id, m);
          return;
        }
        // A subscriber deleted meanwhile (foreign key): store the others one by one.
        let dropped = 0;
        const stored: string[] = [];
        for (const [id, ids] of rows) {
          try {
            await storeAssignments(this.db, new Map([[id, ids]]), new Date(this.clock()));
            stored.push(id);
          } catch {
            dropped++;
          }
        }
        this.markStored(stored);
        if (stored.length > 0) publishChange("assignments", null, stored.length <= 100 ? stored : undefined);
        if (dropped > 0) logger().warn({ err: (err as Error).message, subscribers: dropped }, "dropped assignment writes");
      } finally {
        this.storing = new Map();
      }
    })().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  /**
   * What a subscriber's app gets right now, with every candidate's score and the reason:
   * a dry run that records nothing.
   */
  async explain(subscriberId: string): Promise<{
    subscriber: SnapshotSubscriber;
    routes: Array<{ routeId: string; route: string; flag: string | null; decision: Decision; entry: SubscriptionEntry | null }>;
    /** inboundId → what the operator knows it as. */
    names: Map<string, { inbound: string; server: string }>;
  } | null> {
    this.dirty.subscribers = this.dirty.subscribers || !this.subscribersById.has(subscriberId);
    await this.refresh();
    const sub = this.subscribersById.get(subscriberId);
    const topology = this.topology;
    if (!sub || !topology) return null;
    const cluster = topology.clusters.get(sub.clusterId);
    const previous = await this.assignmentsOf(sub.id);
    const now = this.clock();
    const routes = this.balancer
      .explainForSubscriber({ userId: sub.id, routes: cluster?.routes ?? [], servers: this.serverMetrics, previousAssignments: previous, nowMs: now })
      .map(({ routeId, decision }) => ({
        routeId,
        route: cluster?.routes.find((r) => r.routeId === routeId)?.name ?? "",
        flag: topology.routeFlags?.get(routeId) ?? null,
        decision,
        entry: decision.inboundId ? entryFor(topology, routeId, decision.inboundId) : null,
      }));
    const names = new Map<string, { inbound: string; server: string }>();
    for (const r of routes) {
      for (const c of r.decision.candidates) {
        const ib = topology.inbounds.get(c.inboundId);
        names.set(c.inboundId, { inbound: ib?.name ?? c.inboundId, server: topology.servers.get(c.serverId)?.name ?? c.serverId });
      }
    }
    return { subscriber: sub, routes, names };
  }

  get snapshotAgeMs(): number {
    return this.loadedAt ? this.clock() - this.loadedAt : -1;
  }
}

function countPanicRoutes(topology: FleetSnapshot, metrics: ReadonlyMap<string, ServerMetrics>): number {
  let n = 0;
  for (const c of topology.clusters.values()) {
    for (const r of c.routes) {
      if (isRouteInPanic(r.inbounds, (id) => metrics.get(id)?.available === true)) n++;
    }
  }
  return n;
}

const KEY = Symbol.for("routeboard.subscriptions");
type G = typeof globalThis & { [KEY]?: SubscriptionService };

/** The process-wide service (one snapshot per instance). */
export function subscriptionService(): SubscriptionService | undefined {
  return (globalThis as G)[KEY];
}
export function setSubscriptionService(s: SubscriptionService | undefined): void {
  (globalThis as G)[KEY] = s;
}
