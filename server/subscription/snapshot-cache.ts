/**
 * The subscription snapshot as one instance keeps it (snapshot.ts loads its parts): the
 * topology, server loads and subscribers, reloaded when the change bus says they moved, and
 * kept when the database is away (marked stale).
 *
 * Freshness: a topology, health or subscriber change marks the snapshot dirty and the next
 * request waits for one reload, so a drag shows in the very next fetch. Load figures
 * (metrics) only move scores (answer.ts reuses decisions under them for a while).
 *
 * Subscribers: a change that names its subscribers (at most MAX_NAMED_SUBSCRIBERS, server/changes.ts)
 * re-reads only those rows and patches the maps; one that names none re-reads every subscriber, a
 * page at a time. Traffic totals move with every agent report: they are re-read alone (four
 * columns, into the kept rows) in the background, so no request waits for them, at most every
 * TRAFFIC_RELOAD_MS and never more than a tenth of the time (at a million subscribers a pass
 * takes seconds).
 *
 * Status changes are not topology changes: a "health" event re-reads only the servers'
 * statuses and the inbounds each does not serve (issue 25), and stamps each changed server with a new status epoch, so answers can re-decide
 * only the routes a changed server touches (answer.ts).
 */
import type { Db } from "@/db/client";
import type { ServerMetrics } from "@/server/balancer";
import type { ChangeKind } from "@/server/bus";
import { logger } from "@/server/logger";
import { counter, gauge } from "@/server/metrics";
import { isRouteInPanic } from "@/core/panic";
import { LegacyIndex, loadLegacyIndex, loadLegacyLinks } from "@/server/import/legacy";
import {
  balancerMetrics,
  loadMetricsSnapshot,
  loadServerStatuses,
  loadSubscribers,
  loadTopologySnapshot,
  subscriberTrafficPages,
  withStatuses,
  type FleetSnapshot,
  type MetricsRow,
  type SnapshotSubscriber,
} from "./snapshot";

const RETRY_RELOAD_AFTER_MS = 1_000;
/** Subscribers waiting to be re-read beyond which the next reload reads them all instead. */
const MAX_PATCH = 10_000;
/** How stale subscription-userinfo's traffic figures may get while agents report. */
export const TRAFFIC_RELOAD_MS = 5000;

const reloads = counter("routeboard_snapshot_reloads_total", "Snapshot reloads by the part re-read");
const statusChanges = counter("routeboard_server_status_changes_total", "Server status changes seen by the subscription snapshot");

/** What else a reload drives: the parts that keep state derived from the snapshot. */
export interface SnapshotHooks {
  /** A server's load report not seen before (the balancer learns peaks from each one once). */
  onReport(row: MetricsRow): void;
  /**
   * Subscribers were read again: whatever is kept per subscriber may drop those gone, named in
   * `gone` after a patch (every one not in `byId` after a full read).
   */
  onSubscribers(byId: ReadonlyMap<string, SnapshotSubscriber>, gone?: readonly string[]): void;
  /** A read run beside the reload's own, when there is one; its failure fails the reload. */
  alongside(): Promise<void> | undefined;
}

export class SnapshotCache {
  private fleet: FleetSnapshot | null = null;
  private metrics = new Map<string, MetricsRow>();
  private loads = new Map<string, ServerMetrics>();
  private subscribersByToken = new Map<string, SnapshotSubscriber>();
  private subscribersById = new Map<string, SnapshotSubscriber>();
  /** Imported subscribers' old subscription URLs (server/import/legacy.ts). */
  private legacyIndex = LegacyIndex.empty();
  /**
   * Read whole at start and after a change that names no one (an import); after an edit, only
   * the old URLs of the subscribers it names (legacyPendingIds): an operator who imported a
   * few hundred thousand users from another panel has as many rows here, and every edit read
   * them all again. Not on the traffic-only rereads (it changes only with subscribers).
   */
  private legacyDirty = true;
  private readonly legacyPendingIds = new Set<string>();
  private topologyVer = 0;
  private metricsVer = 0;
  private subscribersVer = 0;
  /** Bumped by every reload that saw a status change; serverId → epoch of its last change. */
  private epoch = 0;
  private readonly statusChangedAt = new Map<string, number>();
  private dirty = { topology: true, health: true, metrics: true, subscribers: true };
  private reloading: Promise<void> | null = null;
  private lastReloadFailedAt = 0;
  private loadedAt = 0;
  private subscribersLoadedAt = 0;
  private trafficMoved = false;
  /** Subscribers named by changes since the last reload: the next one re-reads only them. */
  private pendingIds = new Set<string>();
  /** The traffic pass under way, when one is (never awaited by a request). */
  private trafficPass: Promise<void> | null = null;
  private trafficReadAt = 0;
  private trafficPassMs = 0;
  /** Subscribers re-read while a traffic pass runs: their rows are newer than its figures. */
  private readonly patchedDuringPass = new Set<string>();
  private panicRoutes = 0;
  private isStale = false;

  constructor(
    private readonly db: Db,
    private readonly clock: () => number,
    private readonly hooks: SnapshotHooks,
  ) {}

  registerGauges(): void {
    gauge("routeboard_routes_in_panic", "Non-empty routes with no available inbound and no available fallback", () => this.panicRoutes);
    gauge("routeboard_snapshot_age_seconds", "Age of the subscription snapshot", () => (this.loadedAt ? (this.clock() - this.loadedAt) / 1000 : -1));
    gauge("routeboard_snapshot_stale", "1 while answering from the last good snapshot because the database is unreachable", () => (this.isStale ? 1 : 0));
  }

  /** The fleet as last loaded; null until the first reload succeeded. */
  get topology(): FleetSnapshot | null {
    return this.fleet;
  }
  /** What the balancer gets per server, for the current topology and loads. */
  get serverMetrics(): ReadonlyMap<string, ServerMetrics> {
    return this.loads;
  }
  /** Bumped by every reload of the whole topology. */
  get topologyVersion(): number {
    return this.topologyVer;
  }
  /** Bumped by every reload that read new loads. */
  get metricsVersion(): number {
    return this.metricsVer;
  }
  /** Bumped by every reload of the subscribers. */
  get subscribersVersion(): number {
    return this.subscribersVer;
  }
  /** Status changes seen so far: bumped by every reload that saw one. */
  get statusEpoch(): number {
    return this.epoch;
  }
  /** True while the last reload failed: answers come from the last good snapshot. */
  get stale(): boolean {
    return this.isStale;
  }

  subscriberByToken(token: string): SnapshotSubscriber | undefined {
    return this.subscribersByToken.get(token);
  }
  subscriberById(id: string): SnapshotSubscriber | undefined {
    return this.subscribersById.get(id);
  }
  get legacyMayBeStale(): boolean {
    return this.legacyDirty || this.legacyPendingIds.size > 0;
  }
  /** The old subscription URLs of imported subscribers, as last loaded. */
  get legacy(): LegacyIndex {
    return this.legacyIndex;
  }

  /** The server's status changed in a reload after status epoch `epoch`. */
  statusChangedSince(serverId: string | null, epoch: number): boolean {
    return serverId !== null && (this.statusChangedAt.get(serverId) ?? 0) > epoch;
  }

  /** A change event: marks what the next refresh reloads (only the subscribers it names, when it names them). */
  changed(kind: ChangeKind, subscriberIds?: readonly string[]): void {
    if (kind === "metrics") this.dirty.metrics = true;
    else if (kind === "subscribers") {
      if (subscriberIds) this.expectLegacy(subscriberIds);
      else this.legacyDirty = true;
      if (subscriberIds && this.subscribersById.size > 0) this.expectSubscribers(subscriberIds);
      else this.dirty.subscribers = true;
    }
    else if (kind === "traffic") this.trafficMoved = true;
    // A status change moves no inbound and no stored choice: statuses only (see the header).
    else if (kind === "health") this.dirty.health = true;
    else if (kind === "topology" || kind === "settings") this.dirty.topology = true;
  }

  /** A subscriber not in the snapshot may have been added since: the next refresh reads it. */
  expectSubscriber(id: string): void {
    if (!this.subscribersById.has(id)) this.expectSubscribers([id]);
  }

  private expectLegacy(ids: readonly string[]): void {
    if (this.legacyDirty) return;
    for (const id of ids) this.legacyPendingIds.add(id);
    if (this.legacyPendingIds.size > MAX_PATCH) {
      this.legacyDirty = true;
      this.legacyPendingIds.clear();
    }
  }

  private expectSubscribers(ids: readonly string[]): void {
    if (this.dirty.subscribers) return;
    for (const id of ids) this.pendingIds.add(id);
    if (this.pendingIds.size > MAX_PATCH) {
      this.dirty.subscribers = true;
      this.pendingIds.clear();
    }
  }

  /** Brings the snapshot up to date if anything changed (one reload at a time). */
  async refresh(): Promise<void> {
    // A reload in flight clears the dirty flags when it starts: wait for it, or a request
    // arriving meanwhile would answer from the picture being replaced.
    if (this.reloading) await this.reloading;
    // Traffic moves with every agent report: the subscribers' totals (subscription-userinfo)
    // are re-read at most every TRAFFIC_RELOAD_MS, not once per report.
    if (this.trafficMoved && !this.trafficPass && this.subscribersById.size > 0) {
      const since = this.clock() - Math.max(this.trafficReadAt, this.subscribersLoadedAt);
      if (since >= Math.max(TRAFFIC_RELOAD_MS, 10 * this.trafficPassMs) || since < 0) this.startTrafficPass();
    }
    if (!this.dirty.topology && !this.dirty.health && !this.dirty.metrics && !this.dirty.subscribers && this.pendingIds.size === 0 && !this.legacyMayBeStale) return;
    if (this.fleet && this.isStale && this.clock() - this.lastReloadFailedAt < RETRY_RELOAD_AFTER_MS) return;
    this.reloading ??= this.reload().finally(() => {
      this.reloading = null;
    });
    await this.reloading;
  }

  /** Re-reads every subscriber's traffic totals into the kept rows; answers use them from the next request on. */
  private startTrafficPass(): void {
    this.trafficMoved = false;
    this.patchedDuringPass.clear();
    const byId = this.subscribersById;
    const startedAt = this.clock();
    const pass = async () => {
      let moved = false;
      for await (const page of subscriberTrafficPages(this.db)) {
        // Every subscriber was read again meanwhile: those figures are newer than these.
        if (this.subscribersById !== byId) return;
        for (let k = 0; k < page.ids.length; k++) {
          const id = page.ids[k]!;
          const s = byId.get(id);
          if (!s || this.patchedDuringPass.has(id)) continue;
          const used = page.used[k]!;
          const up = page.up[k]!;
          const down = page.down[k]!;
          if (s.trafficUsedBytes === used && s.trafficUpBytes === up && s.trafficDownBytes === down) continue;
          s.trafficUsedBytes = used;
          s.trafficUpBytes = up;
          s.trafficDownBytes = down;
          moved = true;
        }
      }
      if (moved) this.subscribersVer++;
      reloads.inc({ part: "traffic" });
    };
    this.trafficPass = pass()
      .catch((err: unknown) => {
        // Tried again at the next request after the usual wait.
        this.trafficMoved = true;
        logger().warn({ err: (err as Error).message }, "reading subscribers' traffic failed; keeping the last figures");
      })
      .finally(() => {
        this.trafficReadAt = startedAt;
        this.trafficPassMs = Math.max(0, this.clock() - startedAt);
        this.trafficPass = null;
      });
  }

  /** Puts re-read rows in place of the kept ones; returns the ids no longer there. */
  private patchSubscribers(ids: readonly string[], fresh: ReadonlyMap<string, SnapshotSubscriber>): string[] {
    const byId = new Map([...fresh.values()].map((s) => [s.id, s]));
    const gone: string[] = [];
    for (const id of ids) {
      const old = this.subscribersById.get(id);
      const now = byId.get(id);
      // A rotated token: the old one answers nothing from now on.
      if (old && this.subscribersByToken.get(old.token) === old) this.subscribersByToken.delete(old.token);
      if (now) {
        this.subscribersById.set(id, now);
        this.subscribersByToken.set(now.token, now);
        this.patchedDuringPass.add(id);
      } else if (old) {
        this.subscribersById.delete(id);
        gone.push(id);
      }
    }
    return gone;
  }

  /** The traffic pass under way, if any (tests). */
  trafficSettled(): Promise<void> {
    return this.trafficPass ?? Promise.resolve();
  }

  private async reload(): Promise<void> {
    const want = { ...this.dirty };
    const wantLegacy = this.legacyDirty;
    const legacyIds = wantLegacy ? [] : [...this.legacyPendingIds];
    this.legacyPendingIds.clear();
    const fullSubscribers = want.subscribers || this.subscribersByToken.size === 0;
    const patchIds = fullSubscribers ? [] : [...this.pendingIds];
    this.dirty = { topology: false, health: false, metrics: false, subscribers: false };
    this.legacyDirty = false;
    this.pendingIds.clear();
    try {
      const fullTopology = want.topology || !this.fleet;
      const [loadedTopology, statuses, metrics, subs] = await Promise.all([
        fullTopology ? loadTopologySnapshot(this.db) : Promise.resolve(this.fleet!),
        !fullTopology && want.health ? loadServerStatuses(this.db) : Promise.resolve(null),
        want.metrics || want.topology ? loadMetricsSnapshot(this.db) : Promise.resolve(this.metrics),
        fullSubscribers ? loadSubscribers(this.db) : patchIds.length > 0 ? loadSubscribers(this.db, patchIds) : Promise.resolve(null),
        this.hooks.alongside(),
        wantLegacy ? loadLegacyIndex(this.db) : legacyIds.length > 0 ? loadLegacyLinks(this.db, legacyIds) : Promise.resolve(null),
      ]).then(([t, st, m, su, , legacy]) => {
        if (legacy instanceof LegacyIndex) this.legacyIndex = legacy;
        else if (legacy) this.legacyIndex.replaceSubscribers(legacyIds, legacy);
        return [t, st, m, su] as const;
      });
      let topology = loadedTopology;
      if (statuses) {
        const next = withStatuses(topology, statuses);
        topology = next.topology;
        if (next.changed.length > 0) {
          this.epoch++;
          for (const id of next.changed) this.statusChangedAt.set(id, this.epoch);
        }
      }
      for (const m of metrics.values()) {
        const before = this.metrics.get(m.serverId);
        if (!before || before.reportedAt.getTime() !== m.reportedAt.getTime()) this.hooks.onReport(m);
      }
      for (const part of ["topology", "health", "metrics", "subscribers"] as const) if (want[part]) reloads.inc({ part });
      if (topology !== this.fleet && this.fleet) {
        let changed = 0;
        for (const [id, srv] of topology.servers) if (this.fleet.servers.get(id)?.status !== srv.status) changed++;
        if (changed) statusChanges.inc({}, changed);
      }
      if (fullTopology && topology !== this.fleet) this.topologyVer++;
      if (metrics !== this.metrics) this.metricsVer++;
      if (subs && fullSubscribers) {
        this.subscribersLoadedAt = this.clock();
        this.subscribersById = new Map([...subs.values()].map((s) => [s.id, s]));
        this.subscribersByToken = subs;
        this.subscribersVer++;
        this.hooks.onSubscribers(this.subscribersById);
      } else if (subs) {
        this.hooks.onSubscribers(this.subscribersById, this.patchSubscribers(patchIds, subs));
        this.subscribersVer++;
        reloads.inc({ part: "subscribers-named" });
      }
      this.fleet = topology;
      this.metrics = metrics;
      this.loads = balancerMetrics(topology, metrics);
      this.panicRoutes = countPanicRoutes(topology, this.loads);
      this.loadedAt = this.clock();
      this.isStale = false;
    } catch (err) {
      // Keep the last good snapshot; try again shortly.
      this.dirty = {
        topology: this.dirty.topology || want.topology,
        health: this.dirty.health || want.health,
        metrics: this.dirty.metrics || want.metrics,
        subscribers: this.dirty.subscribers || want.subscribers,
      };
      if (!this.dirty.subscribers) this.expectSubscribers(patchIds);
      this.legacyDirty ||= wantLegacy;
      this.expectLegacy(legacyIds);
      this.lastReloadFailedAt = this.clock();
      if (!this.fleet) throw err;
      if (!this.isStale) logger().warn({ err: (err as Error).message }, "snapshot reload failed; answering from the last good snapshot");
      this.isStale = true;
    }
  }
}

function countPanicRoutes(topology: FleetSnapshot, metrics: ReadonlyMap<string, ServerMetrics>): number {
  let n = 0;
  for (const c of topology.clusters.values()) {
    for (const r of c.routes) {
      const members = r.inbounds.map((ib) => ({ serverId: ib.serverId, unavailable: metrics.get(ib.serverId)?.unavailableInbounds?.get(ib.inboundId) }));
      if (isRouteInPanic(members, (id) => metrics.get(id)?.available === true)) n++;
    }
  }
  return n;
}
