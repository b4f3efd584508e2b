/**
 * Balancer facade: the only stateful piece of the balancer (in-flight ledger, learned peaks).
 * Still no I/O and no clock reads: every call carries nowMs / atMs.
 *
 *   const b = new Balancer();
 *   b.observeReport("srv-1", { users: 42, trafficBps: 3.1e8, atMs: now });
 *   const lines = b.decideForSubscriber({ userId, routes, servers, previousAssignments, nowMs: now });
 *   // → [{ routeId, decision }] — one entry per non-empty route, in the given order.
 */
import { updatePeak, type LearnedPeak } from "./capacity";
import { decideRoute, lookupServer, resolveOptions } from "./decide";
import { expectedUserBps, InflightLedger } from "./inflight";
import type {
  BalancerOptions,
  InflightLookup,
  RouteDecision,
  ServerMetrics,
  ServerMetricsLookup,
  ServerReport,
  SubscriberRequest,
} from "./types";

export * from "./types";
export { decideRoute } from "./decide";
export { InflightLedger, expectedUserBps } from "./inflight";
export { decayPeak, updatePeak, effectiveCapacity, DEFAULT_PEAK_HALF_LIFE_MS, type LearnedPeak } from "./capacity";
export { rendezvousHash, hash32 } from "./hash";

export class Balancer {
  readonly options: BalancerOptions;
  readonly inflight = new InflightLedger();
  private readonly peaks = new Map<string, LearnedPeak>();
  private readonly inflightLookup: InflightLookup;

  constructor(options?: Partial<BalancerOptions>) {
    this.options = resolveOptions(options);
    this.inflightLookup = (serverId, reportedAt) => this.inflight.additions(serverId, reportedAt);
  }

  /** A server's agent report: updates its learned peak and drops in-flight entries it covers. */
  observeReport(serverId: string, report: ServerReport): void {
    this.peaks.set(serverId, updatePeak(this.peaks.get(serverId), report.trafficBps, report.atMs, this.options.peakHalfLifeMs));
    this.inflight.prune(serverId, report.atMs);
  }

  /** Learned peak as of its last update (not decayed to now; the core decays it). */
  learnedPeak(serverId: string): LearnedPeak | undefined {
    return this.peaks.get(serverId);
  }

  /** Seed a learned peak, e.g. from the database after a restart. */
  restorePeak(serverId: string, peak: LearnedPeak): void {
    this.peaks.set(serverId, { ...peak });
  }

  /**
   * Decide every non-empty route for one subscriber. Records in-flight additions for new or
   * moved assignments only (and the matching departure from the previous server).
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

  private decideRoutes(req: SubscriberRequest, record: boolean): RouteDecision[] {
    const servers = this.withLearnedPeaks(req.servers);
    const out: RouteDecision[] = [];
    for (const route of req.routes) {
      if (route.inbounds.length === 0) continue;
      const prev = req.previousAssignments.get(route.routeId) ?? null;
      const decision = decideRoute({
        userId: req.userId,
        route,
        servers,
        previousInboundId: prev,
        nowMs: req.nowMs,
        inflight: this.inflightLookup,
        options: this.options,
        explain: req.explain,
      });
      out.push({ routeId: route.routeId, decision });
      if (record && decision.inboundId !== null && decision.inboundId !== prev && decision.serverId !== null) {
        const prevServerId =
          prev === null ? undefined : route.inbounds.find((ib) => ib.inboundId === prev)?.serverId;
        if (prevServerId !== decision.serverId) {
          this.recordArrival(decision.serverId, servers, req.nowMs, +1);
          if (prevServerId !== undefined) this.recordArrival(prevServerId, servers, req.nowMs, -1);
        }
      }
    }
    return out;
  }

  private recordArrival(serverId: string, servers: ServerMetricsLookup, nowMs: number, sign: 1 | -1): void {
    const m = lookupServer(servers, serverId);
    if (!m) return;
    // A departure from a server that is down or whose report does not count the user is moot.
    if (sign < 0 && (!m.available || m.reportedUsers <= 0)) return;
    const bps = expectedUserBps(m.reportedTrafficBps, m.reportedUsers, this.options.defaultUserBps);
    this.inflight.record(serverId, nowMs, sign, sign * bps);
  }

  /** Merge the facade's learned peaks into the caller's metrics (max of both). */
  private withLearnedPeaks(servers: ServerMetricsLookup): ServerMetricsLookup {
    if (this.peaks.size === 0) return servers;
    return new WithPeaks(servers, this.peaks);
  }
}

/**
 * A read-only Map view of the caller's metrics with the facade's learned peaks merged in,
 * resolved on demand (a subscriber's routes name a few hundred servers of the fleet), one
 * view per subscriber's decisions. A server whose metrics already carry the higher peak is
 * the caller's own object; only the others get a copy.
 */
class WithPeaks extends Map<string, ServerMetrics> {
  constructor(
    private readonly servers: ServerMetricsLookup,
    private readonly peaks: ReadonlyMap<string, LearnedPeak>,
  ) {
    super();
  }
  override get(id: string): ServerMetrics | undefined {
    // Each server is asked for once per route it serves: resolved once per view.
    let v = super.get(id);
    if (v !== undefined) return v;
    const m = lookupServer(this.servers, id);
    if (!m) return m;
    const p = this.peaks.get(id);
    // Our peak as of the metrics' reportedAt, so the core's decay stays consistent.
    v = !p || p.peakBps <= m.learnedPeakBps ? m : { ...m, learnedPeakBps: p.peakBps };
    super.set(id, v);
    return v;
  }
  override has(id: string): boolean {
    return this.get(id) !== undefined;
  }
}
