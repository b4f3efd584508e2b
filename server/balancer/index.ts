/**
 * Balancer facade: the only stateful piece of the balancer (in-flight ledger, learned peaks).
 * Still no I/O and no clock reads: every call carries nowMs / atMs.
 *
 *   const b = new Balancer();
 *   b.observeReport("srv-1", { users: 42, trafficBps: 3.1e8, atMs: now });
 *   const lines = b.decideForSubscriber({ userId, routes, servers, previousAssignments, nowMs: now });
 *   // → [{ routeId, decision }] — one entry per non-empty route, in the given order.
 */
import { LatestUserRates, seenFullBps, updatePeak, type LearnedPeak } from "./capacity";
import { decideRoute, lookupServer, resolveOptions } from "./decide";
import { firstPick, firstPickTable, PeakMemo, recordFirstPick, type FirstPickServer, type FirstPickTable } from "./first-pick";
import { RouteRendezvous } from "./hash";
import { expectedUserBps, InflightLedger } from "./inflight";
import {
  DEFAULT_HYSTERESIS,
  type BalancerOptions,
  type CandidateScore,
  type Load,
  type ResolvedInbound,
  type RouteDecision,
  type RouteInbound,
  type RouteInput,
  type ServerMetrics,
  type ServerMetricsLookup,
  type ServerReport,
  type SubscriberRequest,
} from "./types";

export * from "./types";
export { decideRoute } from "./decide";
export { InflightLedger, expectedUserBps } from "./inflight";
export { decayPeak, updatePeak, effectiveCapacity, DEFAULT_PEAK_HALF_LIFE_MS, HELD_BACK_MIN_USERS, LatestUserRates, type LearnedPeak } from "./capacity";
export { rendezvousHash, hash32 } from "./hash";

/** The candidates of an unexplained decision: none (frozen, shared). */
const NO_CANDIDATES = Object.freeze([]) as unknown as CandidateScore[];

export class Balancer {
  readonly options: BalancerOptions;
  readonly inflight = new InflightLedger();
  private readonly peaks = new Map<string, LearnedPeak>();
  /** Bumped whenever a learned peak changes: a view built before it is rebuilt. */
  private peaksVersion = 0;
  private view: FleetView | null = null;
  /** Every server given to observeReport is taken as one pool (one cluster). */
  private readonly rates = new LatestUserRates(DEFAULT_HYSTERESIS);
  /** Servers a report showed holding their users back: the traffic of the last such report (ServerMetrics.heldBack, heldBackBps). */
  private readonly heldBack = new Map<string, number>();
  private readonly rendezvous = new WeakMap<readonly RouteInbound[], RouteRendezvous>();
  private readonly marksHeldBack: boolean;

  /**
   * `marksHeldBack`: whether observeReport marks servers held back. The panel passes false: it
   * stores the mark per cluster with each report (server/monitoring) and hands it over in
   * ServerMetrics.heldBack, so every instance, and one restarted, decides alike.
   */
  constructor(options?: Partial<BalancerOptions>, { marksHeldBack = true }: { marksHeldBack?: boolean } = {}) {
    this.options = resolveOptions(options);
    this.marksHeldBack = marksHeldBack;
  }

  /** A server's agent report: updates its learned peak and drops in-flight entries it covers. */
  observeReport(serverId: string, report: ServerReport): void {
    this.peaks.set(serverId, updatePeak(this.peaks.get(serverId), report.trafficBps, report.atMs, this.options.peakHalfLifeMs));
    this.peaksVersion++;
    this.inflight.prune(serverId, report.atMs);
    if (!this.marksHeldBack) return;
    if (this.rates.observe(serverId, report.users, report.trafficBps, report.atMs)) this.heldBack.set(serverId, report.trafficBps);
  }

  /** Learned peak as of its last update (not decayed to now; the core decays it). */
  learnedPeak(serverId: string): LearnedPeak | undefined {
    return this.peaks.get(serverId);
  }

  /** Seed a learned peak, e.g. from the database after a restart. */
  restorePeak(serverId: string, peak: LearnedPeak): void {
    this.peaks.set(serverId, { ...peak });
    this.peaksVersion++;
  }

  /**
   * Decide every non-empty route for one subscriber. Records in-flight additions for new or
   * moved assignments only (and the matching departure from the previous server).
   *
   * `servers` (the lookup and its objects) is read as it is when a call first sees it, and
   * `routes` likewise: the balancer keeps what it derived from them (learned peaks merged,
   * each route's servers resolved) for as long as the same lookup is passed. After changing
   * any server's metrics, pass a new lookup.
   */
  decideForSubscriber(req: SubscriberRequest): RouteDecision[] {
    return this.decideRoutes(req, true);
  }

  /**
   * The same decisions as decideForSubscriber (learned peaks and in-flight load included),
   * with every candidate's notes, recording nothing: what the operator's explain page shows
   * is what the user's next fetch gets.
   */
  explainForSubscriber(req: Omit<SubscriberRequest, "explain">): RouteDecision[] {
    return this.decideRoutes({ ...req, explain: true }, false);
  }

  private viewOf(servers: ServerMetricsLookup): FleetView {
    const v = this.view;
    if (v && v.source === servers && v.peaksVersion === this.peaksVersion) return v;
    return (this.view = new FleetView(servers, this.peaksVersion, this.peaks, this.heldBack, this.inflight, this.rendezvous, this.options));
  }

  private decideRoutes(req: SubscriberRequest, record: boolean): RouteDecision[] {
    const view = this.viewOf(req.servers);
    const out: RouteDecision[] = [];
    for (const route of req.routes) {
      if (route.inbounds.length === 0) continue;
      const prev = req.previousAssignments.get(route.routeId) ?? null;
      const table = prev === null && req.explain === false ? view.firstPickTable(route) : null;
      if (table) {
        // A first pick: an arrival on the chosen server, no departure.
        const j = firstPick(table, this.inflight, view.memo, req.userId, req.nowMs, this.options);
        const ib = table.inbounds[j] as RouteInbound;
        out.push({ routeId: route.routeId, decision: { routeId: route.routeId, inboundId: ib.inboundId, serverId: ib.serverId, reason: "best", candidates: NO_CANDIDATES, explanation: "" } });
        if (record) recordFirstPick(table, j, this.inflight, req.nowMs);
        continue;
      }
      const decision = decideRoute({
        userId: req.userId,
        route,
        servers: req.servers,
        resolved: view.routeInbounds(route),
        previousInboundId: prev,
        nowMs: req.nowMs,
        options: this.options,
        explain: req.explain,
      });
      out.push({ routeId: route.routeId, decision });
      if (record && decision.inboundId !== null && decision.inboundId !== prev && decision.serverId !== null) {
        const prevServerId =
          prev === null ? undefined : route.inbounds.find((ib) => ib.inboundId === prev)?.serverId;
        if (prevServerId !== decision.serverId) {
          this.recordArrival(view.server(decision.serverId), req.nowMs, +1);
          if (prevServerId !== undefined) this.recordArrival(view.server(prevServerId), req.nowMs, -1);
        }
      }
    }
    return out;
  }

  private recordArrival(s: ViewServer | undefined, nowMs: number, sign: 1 | -1): void {
    if (!s) return;
    const m = s.m;
    // A departure from a server that is down or whose report does not count the user is moot.
    if (sign < 0 && (!m.available || m.reportedUsers <= 0)) return;
    const bps = expectedUserBps(m.reportedTrafficBps, m.reportedUsers, this.options.defaultUserBps);
    this.inflight.record(s.id, nowMs, sign, sign * bps);
  }
}

/** One server of a view: the caller's metrics with the learned peak merged in. */
class ViewServer implements FirstPickServer {
  constructor(
    readonly id: string,
    readonly m: ServerMetrics,
    readonly slot: number,
    readonly memoIndex: number,
    private readonly memo: PeakMemo,
    private readonly inflight: InflightLedger,
  ) {}
  decayedPeak(nowMs: number, halfLifeMs: number): number {
    return this.memo.decayed(this.memoIndex, this.m.learnedPeakBps, this.m.reportedAt, nowMs, halfLifeMs, seenFullBps(this.m));
  }
  additions(): Readonly<Load> | undefined {
    return this.inflight.additionsOf(this.slot, this.m.reportedAt);
  }
}

/**
 * The caller's metrics as decisions read them, built once per (lookup, learned peaks):
 * learned peaks merged (the max of both), each server's in-flight ledger at hand, and each
 * route's servers resolved once, not looked up again for every decision of every subscriber.
 * A server whose metrics already carry the higher peak keeps the caller's own object.
 * Routes' rendezvous tables are the Balancer's, shared by its views.
 */
class FleetView {
  private readonly servers = new Map<string, ViewServer | null>();
  readonly memo: PeakMemo;
  private memoUsed = 0;
  /** Per route: its inbounds resolved, and its first-pick table once asked for (null: no candidate). */
  private readonly routes = new WeakMap<RouteInput, { resolved: readonly ResolvedInbound[]; table?: FirstPickTable | null }>();
  constructor(
    readonly source: ServerMetricsLookup,
    readonly peaksVersion: number,
    private readonly peaks: ReadonlyMap<string, LearnedPeak>,
    private readonly heldBack: ReadonlyMap<string, number>,
    private readonly inflight: InflightLedger,
    /** Per route's inbound list: kept by the Balancer across views (they depend on ids only). */
    private readonly rendezvous: WeakMap<readonly RouteInbound[], RouteRendezvous>,
    private readonly options: BalancerOptions,
  ) {
    this.memo = new PeakMemo(source instanceof Map ? source.size : Object.keys(source).length);
  }

  server(id: string): ViewServer | undefined {
    let s = this.servers.get(id);
    if (s === undefined) {
      const m = lookupServer(this.source, id);
      if (m) {
        const p = this.peaks.get(id);
        // Our peak as of the metrics' reportedAt, so the core's decay stays consistent.
        const higher = p !== undefined && p.peakBps > m.learnedPeakBps;
        const heldBps = m.heldBack !== true ? this.heldBack.get(id) : undefined;
        const held = heldBps !== undefined;
        const merged = !higher && !held ? m : { ...m, ...(higher ? { learnedPeakBps: p.peakBps } : {}), ...(held ? { heldBack: true, heldBackBps: heldBps } : {}) };
        s = new ViewServer(id, merged, this.inflight.slotOf(id), this.memoUsed++, this.memo, this.inflight);
      } else s = null;
      this.servers.set(id, s);
    }
    return s ?? undefined;
  }

  /** The route's first-pick table (null: no candidate, decideRoute's fallback and panic rules apply). */
  firstPickTable(route: RouteInput): FirstPickTable | null {
    const r = this.route(route);
    if (r.table === undefined) r.table = firstPickTable(route, r.resolved, this.options.defaultUserBps, this.options.evenWhileBlind);
    return r.table;
  }

  routeInbounds(route: RouteInput): readonly ResolvedInbound[] {
    return this.route(route).resolved;
  }

  private route(route: RouteInput): { resolved: readonly ResolvedInbound[]; table?: FirstPickTable | null } {
    let r = this.routes.get(route);
    if (!r || r.resolved.length !== route.inbounds.length) {
      let rv = this.rendezvous.get(route.inbounds);
      if (!rv || rv.n !== route.inbounds.length) this.rendezvous.set(route.inbounds, (rv = new RouteRendezvous(route.inbounds.map((ib) => ib.inboundId))));
      const hashes = rv;
      r = { resolved: route.inbounds.map((ib, index) => ({ server: this.server(ib.serverId), rendezvous: hashes, index })) };
      this.routes.set(route, r);
    }
    return r;
  }
}
