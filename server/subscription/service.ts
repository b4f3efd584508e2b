/**
 * The subscription service: answers GET /sub/<token> from the in-memory snapshot, runs the
 * balancer for each non-empty route, stores changed assignments in the background, and keeps
 * answering from the last good snapshot when the database is away (marked stale).
 *
 * Freshness: a topology, health or subscriber change marks the snapshot dirty and the next
 * request waits for one reload, so a drag shows in the very next fetch. Load figures
 * (metrics) only move scores; a cached answer is reused for up to ANSWER_TTL_MS under them,
 * and for as long as nothing at all changed (the same inputs give the same choice).
 */
import { sql } from "drizzle-orm";
import type { Db } from "@/db/client";
import { assignments } from "@/db/schema";
import { Balancer, type Decision, type RouteDecision, type ServerMetrics } from "@/server/balancer";
import { instanceId, onChange, publishChange, type ChangeEvent } from "@/server/bus";
import { counter, gauge } from "@/server/metrics";
import { logger } from "@/server/logger";
import { isDatabaseDown } from "@/server/db-errors";
import {
  CONTENT_TYPES,
  parseFormat,
  profileTitle,
  renderSubscription,
  subscriptionUserinfo,
  type SubscriptionEntry,
  type SubscriptionFormat,
} from "./formats";
import {
  balancerMetrics,
  entryFor,
  isExpired,
  loadAssignments,
  loadMetricsSnapshot,
  loadSubscribers,
  loadTopologySnapshot,
  type MetricsRow,
  type SnapshotSubscriber,
  type Topology,
} from "./snapshot";

export const ANSWER_TTL_MS = 30_000;
const FLUSH_EVERY_MS = 200;
const RETRY_RELOAD_AFTER_MS = 1_000;
export const PROFILE_UPDATE_INTERVAL_HOURS = 12;

export interface SubscriptionAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

interface CachedAnswer {
  topologyVersion: number;
  metricsVersion: number;
  at: number;
  body: string;
  headers: Record<string, string>;
}

const requests = counter("routeboard_subscription_requests_total", "Subscription requests by outcome");
const decisions = counter("routeboard_balancer_decisions_total", "Balancer decisions by reason");
const reloads = counter("routeboard_snapshot_reloads_total", "Snapshot reloads by the part re-read");
const statusChanges = counter("routeboard_server_status_changes_total", "Server status changes seen by the subscription snapshot");

const FORMATS: SubscriptionFormat[] = ["base64", "json", "clash", "singbox"];

const NOT_FOUND: SubscriptionAnswer = { status: 404, headers: { "content-type": "text/plain; charset=utf-8" }, body: "Not found\n" };

export class SubscriptionService {
  private topology: Topology | null = null;
  private metrics = new Map<string, MetricsRow>();
  private serverMetrics = new Map<string, ServerMetrics>();
  private subscribersByToken = new Map<string, SnapshotSubscriber>();
  private subscribersById = new Map<string, SnapshotSubscriber>();
  private topologyVersion = 0;
  private metricsVersion = 0;
  private dirty = { topology: true, metrics: true, subscribers: true };
  private reloading: Promise<void> | null = null;
  private lastReloadFailedAt = 0;
  private loadedAt = 0;
  /** True while the last reload failed: answers come from the last good snapshot. */
  stale = false;
  private readonly answers = new Map<string, CachedAnswer>();
  private readonly assignmentCache = new Map<string, Map<string, string>>();
  private readonly pendingWrites = new Map<string, { subscriberId: string; routeId: string; inboundId: string; reason: string }>();
  private flushTimer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private unsubscribe: (() => void) | null = null;
  private panicRoutes = 0;
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
    gauge("routeboard_assignment_writes_pending", "Changed assignments not yet stored", () => this.pendingWrites.size);
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
        this.answers.clear();
        return;
      }
      for (const id of e.subscriberIds) {
        this.assignmentCache.delete(id);
        const token = this.subscribersById.get(id)?.token;
        if (token) for (const f of FORMATS) this.answers.delete(`${token}|${f}`);
      }
      return;
    }
    if (e.kind === "metrics") this.dirty.metrics = true;
    else if (e.kind === "subscribers") this.dirty.subscribers = true;
    else if (e.kind === "topology" || e.kind === "health" || e.kind === "settings") {
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
    if (!this.dirty.topology && !this.dirty.metrics && !this.dirty.subscribers) return;
    if (this.topology && this.stale && this.clock() - this.lastReloadFailedAt < RETRY_RELOAD_AFTER_MS) return;
    this.reloading ??= this.reload().finally(() => {
      this.reloading = null;
    });
    await this.reloading;
  }

  private async reload(): Promise<void> {
    const want = { ...this.dirty };
    this.dirty = { topology: false, metrics: false, subscribers: false };
    try {
      const [topology, metrics, subs] = await Promise.all([
        want.topology || !this.topology ? loadTopologySnapshot(this.db) : Promise.resolve(this.topology),
        want.metrics || want.topology ? loadMetricsSnapshot(this.db) : Promise.resolve(this.metrics),
        want.subscribers || this.subscribersByToken.size === 0 ? loadSubscribers(this.db) : Promise.resolve(this.subscribersByToken),
      ]);
      for (const m of metrics.values()) {
        const before = this.metrics.get(m.serverId);
        if (!before || before.reportedAt.getTime() !== m.reportedAt.getTime()) {
          this.balancer.observeReport(m.serverId, { users: m.usersOnline, trafficBps: m.trafficBps, atMs: m.reportedAt.getTime() });
        }
      }
      for (const part of ["topology", "metrics", "subscribers"] as const) if (want[part]) reloads.inc({ part });
      if (topology !== this.topology && this.topology) {
        let changed = 0;
        for (const [id, srv] of topology.servers) if (this.topology.servers.get(id)?.status !== srv.status) changed++;
        if (changed) statusChanges.inc({}, changed);
      }
      if (topology !== this.topology) this.topologyVersion++;
      if (metrics !== this.metrics) this.metricsVersion++;
      if (subs !== this.subscribersByToken) {
        this.subscribersById = new Map([...subs.values()].map((s) => [s.id, s]));
        this.answers.clear();
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
      this.dirty = { topology: this.dirty.topology || want.topology, metrics: this.dirty.metrics || want.metrics, subscribers: this.dirty.subscribers || want.subscribers };
      this.lastReloadFailedAt = this.clock();
      if (!this.topology) throw err;
      if (!this.stale) logger().warn({ err: (err as Error).message }, "snapshot reload failed; answering from the last good snapshot");
      this.stale = true;
    }
  }

  /** GET /sub/<token>[?format=...] */
  async answer(token: string, formatParam: string | null): Promise<SubscriptionAnswer> {
    const format = parseFormat(formatParam);
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
    if (!sub || !sub.enabled || isExpired(sub, now) || !this.topology) {
      requests.inc({ outcome: "not_found" });
      return NOT_FOUND;
    }
    const cacheKey = `${token}|${format}`;
    const cached = this.answers.get(cacheKey);
    if (cached && cached.topologyVersion === this.topologyVersion && (cached.metricsVersion === this.metricsVersion || (now - cached.at < ANSWER_TTL_MS && now >= cached.at))) {
      requests.inc({ outcome: this.stale ? "stale" : "ok" });
      return { status: 200, headers: this.withStale(cached.headers), body: cached.body };
    }
    const entries = await this.entriesFor(sub, now);
    const cluster = this.topology.clusters.get(sub.clusterId);
    const headers: Record<string, string> = {
      "content-type": CONTENT_TYPES[format],
      "cache-control": "no-store",
      "subscription-userinfo": subscriptionUserinfo(sub.trafficUsedBytes, sub.trafficLimitBytes, sub.expiresAt),
      "profile-update-interval": String(PROFILE_UPDATE_INTERVAL_HOURS),
      "profile-title": profileTitle(cluster?.name ?? "Routeboard"),
    };
    const body = renderSubscription(format, sub.vlessUuid, entries);
    this.answers.set(cacheKey, { topologyVersion: this.topologyVersion, metricsVersion: this.metricsVersion, at: now, body, headers });
    requests.inc({ outcome: this.stale ? "stale" : "ok" });
    return { status: 200, headers: this.withStale(headers), body };
  }

  private withStale(h: Record<string, string>): Record<string, string> {
    return this.stale ? { ...h, "x-routeboard-stale": "1" } : h;
  }

  private async assignmentsOf(subscriberId: string): Promise<Map<string, string>> {
    const cached = this.assignmentCache.get(subscriberId);
    if (cached) return cached;
    let loaded = new Map<string, string>();
    try {
      loaded = (await loadAssignments(this.db, [subscriberId])).get(subscriberId) ?? loaded;
    } catch (err) {
      if (!isDatabaseDown(err)) throw err;
    }
    // Writes not yet flushed win over what the database has.
    for (const w of this.pendingWrites.values()) if (w.subscriberId === subscriberId) loaded.set(w.routeId, w.inboundId);
    this.assignmentCache.set(subscriberId, loaded);
    return loaded;
  }

  /** Decides every non-empty route for one subscriber and records what changed. */
  private async entriesFor(sub: SnapshotSubscriber, now: number): Promise<SubscriptionEntry[]> {
    const topology = this.topology!;
    const cluster = topology.clusters.get(sub.clusterId);
    if (!cluster) return [];
    const previous = await this.assignmentsOf(sub.id);
    const result: RouteDecision[] = this.balancer.decideForSubscriber({
      userId: sub.id,
      routes: cluster.routes,
      servers: this.serverMetrics,
      previousAssignments: previous,
      nowMs: now,
      explain: false,
    });
    const entries: SubscriptionEntry[] = [];
    for (const { routeId, decision } of result) {
      decisions.inc({ reason: decision.reason });
      if (!decision.inboundId) continue;
      if (previous.get(routeId) !== decision.inboundId) {
        previous.set(routeId, decision.inboundId);
        this.pendingWrites.set(`${sub.id}|${routeId}`, { subscriberId: sub.id, routeId, inboundId: decision.inboundId, reason: decision.reason });
      }
      const entry = entryFor(topology, routeId, decision.inboundId);
      if (entry) entries.push(entry);
    }
    return entries;
  }

  /** Stores changed assignments in one statement; kept for the next try if the database is away. */
  async flushAssignments(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.pendingWrites.size === 0) return;
    const batch = [...this.pendingWrites.entries()];
    this.flushing = (async () => {
      try {
        const rows = batch.map(([, w]) => ({ ...w, assignedAt: new Date(this.clock()) }));
        for (let i = 0; i < rows.length; i += 1000) {
          await this.db
            .insert(assignments)
            .values(rows.slice(i, i + 1000))
            .onConflictDoUpdate({
              target: [assignments.subscriberId, assignments.routeId],
              set: { inboundId: sql`excluded.inbound_id`, reason: sql`excluded.reason`, assignedAt: sql`excluded.assigned_at` },
            });
        }
        for (const [k, w] of batch) if (this.pendingWrites.get(k) === w) this.pendingWrites.delete(k);
        const who = [...new Set(batch.map(([, w]) => w.subscriberId))];
        // Small batches name their subscribers; a storm says "anyone" (NOTIFY payloads are small).
        publishChange("assignments", null, who.length <= 100 ? who : undefined);
      } catch (err) {
        if (isDatabaseDown(err)) return; // retried on the next tick
        // A route or inbound deleted meanwhile (foreign key): those answers get re-decided.
        for (const [k, w] of batch) if (this.pendingWrites.get(k) === w) this.pendingWrites.delete(k);
        logger().warn({ err: (err as Error).message, rows: batch.length }, "dropped assignment writes");
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
    routes: Array<{ routeId: string; route: string; decision: Decision; entry: SubscriptionEntry | null }>;
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

function countPanicRoutes(topology: Topology, metrics: ReadonlyMap<string, ServerMetrics>): number {
  let n = 0;
  for (const c of topology.clusters.values()) {
    for (const r of c.routes) {
      if (r.inbounds.length > 0 && !r.inbounds.some((ib) => metrics.get(ib.serverId)?.available)) n++;
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
