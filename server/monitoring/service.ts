/**
 * The monitoring service of an app instance (DESIGN §3):
 *  (a) the active Prober over every enabled server — host = the server's address, port = its
 *      first inbound's port (oldest inbound; ties by lowest port) unless the probe config sets
 *      `port`; servers with neither are not probed. Config = cluster config + server override.
 *      Its results are queued and stored in batches (ProbeResultBatcher, probe-batcher.ts).
 *  (b) a sweep every ROUTEBOARD_SWEEP_MS (default 2000) recomputing every status from stored
 *      state: silence → no-data, mesh votes, disabled/enabled flips; only changes are written.
 *  (c) the prober re-reads its targets on "topology"/"settings" bus events.
 *  (d) with the prober, the failover watcher (failover.ts): heartbeat loss confirmed by fast
 *      TCP probes takes a server out of rotation within seconds (core/heartbeat.ts).
 */
import "server-only";
import { asc, eq } from "drizzle-orm";
import { type Db } from "@/db/client";
import { getDb } from "@/server/db";
import { clusters, inbounds, servers } from "@/db/schema";
import { onChange, publishChange } from "@/server/bus";
import { env } from "@/server/env";
import { logger } from "@/server/logger";
import { Prober, type ProbeTarget, type ProberLogger } from "./prober";
import { effectiveProbeConfig } from "@/core/monitoring-contract";
import { pruneMetricsHistory } from "./metrics-history";
import { sweepStatuses } from "./status";
import { ProbeResultBatcher } from "./probe-batcher";
import { FailoverWatcher, type FastProbeTarget } from "./failover";

const REFRESH_QUIET_MS = 200;
/** How often old history buckets are deleted (from the sweep). */
export const HISTORY_PRUNE_EVERY_MS = 60 * 60 * 1000;
const REFRESH_MAX_WAIT_MS = 1000;

/** Every enabled server with something to probe. */
export async function listProbeTargets(db: Db): Promise<ProbeTarget[]> {
  const rows = await db
    .select({
      id: servers.id,
      address: servers.address,
      probeOverride: servers.probeOverride,
      probeConfig: clusters.probeConfig,
    })
    .from(servers)
    .innerJoin(clusters, eq(clusters.id, servers.clusterId))
    .where(eq(servers.enabled, true));
  const ports = await db
    .select({ serverId: inbounds.serverId, port: inbounds.port })
    .from(inbounds)
    .orderBy(asc(inbounds.createdAt), asc(inbounds.port));
  const firstPort = new Map<string, number>();
  for (const p of ports) if (!firstPort.has(p.serverId)) firstPort.set(p.serverId, p.port);
  const targets: ProbeTarget[] = [];
  for (const r of rows) {
    const probe = effectiveProbeConfig(r.probeConfig, r.probeOverride);
    const port = probe.port ?? firstPort.get(r.id);
    if (port === undefined) continue;
    targets.push({ serverId: r.id, host: r.address, port, probe });
  }
  return targets;
}

/**
 * Where the failover watcher may fast-probe: the probe targets whose active probe is on. A port
 * the operator closed to the panel on purpose would make every late heartbeat look confirmed.
 */
export async function fastProbeTargets(db: Db): Promise<Map<string, FastProbeTarget>> {
  return new Map((await listProbeTargets(db)).filter((t) => t.probe.enabled !== false).map((t) => [t.serverId, { host: t.host, port: t.port }]));
}

export interface MonitoringServiceOptions {
  db?: Db;
  /** Leave the prober off until startProber() (several instances: the lock holder probes). */
  proberByLeaderOnly?: boolean;
  sweepMs?: number;
  now?: () => number;
}

export class MonitoringService {
  private prober: Prober | null = null;
  private probeResults: ProbeResultBatcher | null = null;
  private failover: FailoverWatcher | null = null;
  private sweepTimer: ReturnType<typeof setTimeout> | null = null;
  private sweeping: Promise<void> | null = null;
  private offBus: (() => void) | null = null;
  private running = false;
  private db: Db | null = null;
  private refreshTimer: ReturnType<typeof setTimeout> | null = null;
  private firstPendingAt = 0;

  constructor(private readonly opts: MonitoringServiceOptions = {}) {}

  /**
   * Re-reads the probe targets once a burst of topology events settles (REFRESH_QUIET_MS
   * without one, at most REFRESH_MAX_WAIT_MS after the first): a reload lists every target,
   * so one reload per event made enrolling N servers cost O(N²).
   */
  private refreshSoon(): void {
    const now = Date.now();
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    else this.firstPendingAt = now;
    const wait = Math.max(0, Math.min(REFRESH_QUIET_MS, this.firstPendingAt + REFRESH_MAX_WAIT_MS - now));
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = null;
      void this.prober?.refresh();
    }, wait);
    this.refreshTimer.unref?.();
  }

  async start(): Promise<void> {
    if (this.running) return;
    const sweepMs = this.opts.sweepMs ?? env().ROUTEBOARD_SWEEP_MS;
    const db = this.opts.db ?? (await getDb());
    const now = this.opts.now ?? Date.now;
    const log = logger().child({ component: "monitoring" });
    this.db = db;
    this.running = true;
    this.offBus = onChange((e) => {
      if (e.kind === "topology" || e.kind === "settings") this.refreshSoon();
    });
    if (!this.opts.proberByLeaderOnly) await this.startProber();
    let lastPruneMs: number | null = null;
    const loop = () => {
      if (!this.running) return;
      this.sweeping = (async () => {
        try {
          const t = now();
          const { changedClusters } = await sweepStatuses(db, t);
          for (const c of changedClusters) publishChange("health", c);
          // Hourly, and at once when the clock was set back by more than that.
          if (lastPruneMs === null || Math.abs(t - lastPruneMs) >= HISTORY_PRUNE_EVERY_MS) {
            lastPruneMs = t;
            await pruneMetricsHistory(db, t);
          }
        } catch (err) {
          log.warn({ err }, "monitoring: status sweep failed");
        }
      })();
      void this.sweeping.finally(() => {
        this.sweeping = null;
        if (this.running) {
          this.sweepTimer = setTimeout(loop, sweepMs);
          this.sweepTimer.unref?.();
        }
      });
    };
    this.sweepTimer = setTimeout(loop, Math.min(sweepMs, 500));
    this.sweepTimer.unref?.();
  }

  /**
   * Starts the active prober on this instance. With several instances only the one holding
   * the prober lock calls this (server/leader.ts), so servers are probed once.
   */
  async startProber(): Promise<void> {
    if (!this.running || this.prober || !this.db) return;
    const db = this.db;
    const now = this.opts.now ?? Date.now;
    const log = logger().child({ component: "monitoring" });
    // Results are queued and stored in batches (probe-batcher.ts); onResult resolves once the
    // result is queued, so the prober still never probes a target twice at once.
    const results = new ProbeResultBatcher({
      db,
      onChanged: (clusterIds) => {
        for (const c of clusterIds) publishChange("health", c);
      },
      logger: log,
    });
    this.probeResults = results;
    this.prober = new Prober({
      listTargets: () => listProbeTargets(db),
      onResult: async (serverId, result, target) => {
        const cfg = target.probe as ProbeTarget["probe"] & { unhealthyThreshold?: number; healthyThreshold?: number };
        results.push({
          serverId,
          result,
          thresholds: { unhealthyThreshold: cfg.unhealthyThreshold ?? 3, healthyThreshold: cfg.healthyThreshold ?? 1 },
          nowMs: now(),
        });
      },
      logger: log as unknown as ProberLogger,
      now,
    });
    await this.prober.start();
    // The fast path (issue 24): heartbeat loss confirmed by fast TCP probes, next to the prober.
    this.failover = new FailoverWatcher({
      db,
      now,
      targets: () => fastProbeTargets(db),
      log,
    });
    this.failover.start();
    log.info("active prober running on this instance");
  }

  /** Stops the prober, then stores the results it queued. */
  async stopProber(): Promise<void> {
    const p = this.prober;
    const results = this.probeResults;
    const failover = this.failover;
    this.failover = null;
    await failover?.stop();
    this.prober = null;
    this.probeResults = null;
    await p?.stop();
    await results?.stop();
  }

  get proberRunning(): boolean {
    return this.prober !== null;
  }

  async stop(): Promise<void> {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
    if (!this.running) return;
    this.running = false;
    this.offBus?.();
    this.offBus = null;
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    this.sweepTimer = null;
    await this.stopProber();
    await this.sweeping?.catch(() => {});
  }
}

const KEY = Symbol.for("routeboard.monitoring");
type G = typeof globalThis & { [KEY]?: MonitoringService };

/** The process-wide service (started from startServices). */
export async function startMonitoring(opts: MonitoringServiceOptions = {}): Promise<MonitoringService> {
  const g = globalThis as G;
  g[KEY] ??= new MonitoringService(opts);
  await g[KEY].start();
  return g[KEY];
}

export async function stopMonitoring(): Promise<void> {
  const g = globalThis as G;
  await g[KEY]?.stop();
}
