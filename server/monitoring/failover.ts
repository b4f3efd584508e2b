/**
 * The failover watcher (issue 24, rules in core/heartbeat.ts): runs next to the active prober
 * (one instance when several share PostgreSQL). Every WATCH_TICK_MS it:
 *  1. measures its own stall (a paused process or a clock set back: stallGraceUntil);
 *  2. counts, among the enabled servers that sent a heartbeat within FAST_PATH_WINDOW_MS,
 *     how many are silent past the late threshold: more than half = the panel is blind;
 *  3. fast-probes (2 parallel TCP connects, FAST_PROBE_TIMEOUT_MS) each healthy server that is late,
 *     FAST_PROBE_GAP_MS apart, results kept in memory per silence;
 *  4. confirms a loss (lossConfirmed: suspect + the last 3 fast probes failed, all sent after
 *     the last heartbeat and after the last blind tick, not blind now):
 *     writes heartbeat_lost_at, but only if no heartbeat came meanwhile, recomputes the server
 *     under its row lock and publishes a "health" change, which the subscription snapshot reads
 *     at once (and other instances through the change bus).
 */
import "server-only";
import net from "node:net";
import { and, eq, gt, isNotNull, lt, or, sql } from "drizzle-orm";
import type { Db } from "@/db/client";
import { serverHealth, servers } from "@/db/schema";
import { onChange, publishChange } from "@/server/bus";
import {
  FAST_PATH_WINDOW_MS,
  FAST_PROBE_CONNECTS,
  FAST_PROBE_GAP_MS,
  FAST_PROBE_TIMEOUT_MS,
  HEARTBEAT_INTERVAL_S,
  isPanelBlind,
  LATE_AFTER_MISSED,
  lossConfirmed,
  stallGraceUntil,
  startGraceUntil,
  WATCH_TICK_MS,
  type FastProbeRecord,
} from "@/core/heartbeat";
import { recomputeServer } from "./status";

export interface FastProbeTarget {
  host: string;
  port: number;
}

/** One TCP connect: true when it connects within the timeout. */
export function tcpConnect(target: FastProbeTarget, timeoutMs = FAST_PROBE_TIMEOUT_MS): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: target.host, port: target.port });
    let done = false;
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.once("connect", () => finish(true));
    socket.once("error", () => finish(false));
  });
}

/** One fast probe: FAST_PROBE_CONNECTS connects at once; true as soon as one connects. */
export function fastProbe(target: FastProbeTarget, timeoutMs = FAST_PROBE_TIMEOUT_MS): Promise<boolean> {
  return new Promise((resolve) => {
    let left = FAST_PROBE_CONNECTS;
    for (let k = 0; k < FAST_PROBE_CONNECTS; k++) {
      void tcpConnect(target, timeoutMs).then((ok) => {
        left--;
        if (ok || left === 0) resolve(ok);
      });
    }
  });
}

interface Watched {
  lastHeartbeatAtMs: number;
  probes: FastProbeRecord[];
  inFlight: boolean;
  nextProbeAtMs: number;
}

export interface FailoverWatcherOptions {
  db: Db;
  /** Where to fast-probe a server (its address and probe/inbound port), or undefined. */
  targets: () => Promise<Map<string, FastProbeTarget>>;
  now?: () => number;
  tickMs?: number;
  probe?: (t: FastProbeTarget) => Promise<boolean>;
  log?: { info: (o: object, m: string) => void; warn: (o: object, m: string) => void };
}

export interface WatchTick {
  blind: boolean;
  heartbeating: number;
  silent: number;
  confirmed: string[];
}

export class FailoverWatcher {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private running = false;
  private ticking: Promise<WatchTick> | null = null;
  private prevTickMs: number | null = null;
  private blindUntilMs = 0;
  /** The last tick that found the panel blind: probes sent before it are no evidence. */
  private lastBlindTickMs = Number.NEGATIVE_INFINITY;
  private watched = new Map<string, Watched>();
  private targetCache: { at: number; map: Map<string, FastProbeTarget> } | null = null;
  private offBus: (() => void) | null = null;
  private readonly now: () => number;
  /** Called after each tick (tests wait on it). */
  onTick: ((t: WatchTick) => void) | null = null;

  constructor(private readonly opts: FailoverWatcherOptions) {
    this.now = opts.now ?? Date.now;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    // A start (the app restarting, or this instance taking the prober over) is a stall: the
    // stored heartbeat times are old because nobody was listening, not because servers died.
    this.blindUntilMs = Math.max(this.blindUntilMs, startGraceUntil(this.now()));
    this.offBus = onChange((e) => {
      if (e.kind === "topology" || e.kind === "settings") this.targetCache = null;
    });
    this.schedule(0);
  }

  private schedule(ms: number): void {
    if (!this.running) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.runTick();
    }, ms);
    this.timer.unref?.();
  }

  private runTick(): void {
    if (this.ticking || !this.running) return; // the running tick schedules the next one
    this.ticking = this.tick();
    void this.ticking
      .then((t) => this.onTick?.(t))
      .catch((err: unknown) => this.opts.log?.warn({ err }, "failover watcher: tick failed"))
      .finally(() => {
        this.ticking = null;
        if (this.running && !this.timer) this.schedule(this.opts.tickMs ?? WATCH_TICK_MS);
      });
  }

  async stop(): Promise<void> {
    this.running = false;
    this.offBus?.();
    this.offBus = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.ticking?.catch(() => {});
  }

  private async targets(t: number): Promise<Map<string, FastProbeTarget>> {
    if (!this.targetCache || Math.abs(t - this.targetCache.at) > 30_000) this.targetCache = { at: t, map: await this.opts.targets() };
    return this.targetCache.map;
  }

  /** One look at the fleet (exported for tests through the class). */
  async tick(): Promise<WatchTick> {
    const { db } = this.opts;
    const t = this.now();
    this.blindUntilMs = stallGraceUntil(this.prevTickMs, t, this.opts.tickMs ?? WATCH_TICK_MS, this.blindUntilMs);
    this.prevTickMs = t;
    const windowStart = new Date(t - FAST_PATH_WINDOW_MS);
    const lateCut = new Date(t - LATE_AFTER_MISSED * HEARTBEAT_INTERVAL_S * 1000);
    const inWindow = and(eq(servers.enabled, true), isNotNull(serverHealth.heartbeatAt), gt(serverHealth.heartbeatAt, windowStart));
    const [counts] = await db
      .select({
        heartbeating: sql<number>`count(*)::int`,
        silent: sql<number>`(count(*) filter (where ${serverHealth.heartbeatAt} < ${lateCut}))::int`,
      })
      .from(serverHealth)
      .innerJoin(servers, eq(servers.id, serverHealth.serverId))
      .where(inWindow);
    const heartbeating = counts?.heartbeating ?? 0;
    const silent = counts?.silent ?? 0;
    const blind = t < this.blindUntilMs || isPanelBlind(heartbeating, silent);
    const late = await db
      .select({ id: serverHealth.serverId, clusterId: servers.clusterId, heartbeatAt: serverHealth.heartbeatAt })
      .from(serverHealth)
      .innerJoin(servers, eq(servers.id, serverHealth.serverId))
      .where(
        and(
          inWindow,
          lt(serverHealth.heartbeatAt, lateCut),
          eq(serverHealth.status, "healthy"),
          or(sql`${serverHealth.heartbeatLostAt} is null`, sql`${serverHealth.heartbeatLostAt} <= ${serverHealth.heartbeatAt}`),
        ),
      )
      .limit(1000);
    const lateIds = new Set(late.map((r) => r.id));
    for (const id of this.watched.keys()) if (!lateIds.has(id)) this.watched.delete(id);
    const confirmed: string[] = [];
    if (blind) {
      this.lastBlindTickMs = t;
      return { blind, heartbeating, silent, confirmed };
    }
    const targets = late.length > 0 ? await this.targets(t) : new Map<string, FastProbeTarget>();
    for (const r of late) {
      const lastMs = r.heartbeatAt!.getTime();
      let w = this.watched.get(r.id);
      if (!w || w.lastHeartbeatAtMs !== lastMs) {
        w = { lastHeartbeatAtMs: lastMs, probes: [], inFlight: false, nextProbeAtMs: t };
        this.watched.set(r.id, w);
      }
      if (lossConfirmed(lastMs, w.probes, t, false, HEARTBEAT_INTERVAL_S, this.lastBlindTickMs)) {
        if (await this.confirm(r.id, r.clusterId, r.heartbeatAt!, t)) confirmed.push(r.id);
        this.watched.delete(r.id);
        continue;
      }
      const target = targets.get(r.id);
      if (target && !w.inFlight && t >= w.nextProbeAtMs) this.probe(w, target);
    }
    return { blind, heartbeating, silent, confirmed };
  }

  private probe(w: Watched, target: FastProbeTarget): void {
    const startedAtMs = this.now();
    w.inFlight = true;
    void (this.opts.probe ?? fastProbe)(target)
      .catch(() => false)
      .then((ok) => {
        w.inFlight = false;
        w.probes.push({ startedAtMs, ok });
        if (w.probes.length > 8) w.probes.shift();
        w.nextProbeAtMs = this.now() + FAST_PROBE_GAP_MS;
        // A second failure may confirm now rather than at the next tick.
        if (!ok) this.schedule(0);
      });
  }

  /** Writes the confirmed loss unless a heartbeat came meanwhile; true when the status moved. */
  private async confirm(serverId: string, clusterId: string, heartbeatAt: Date, t: number): Promise<boolean> {
    const moved = await this.opts.db.transaction(async (tx) => {
      const upd = await tx
        .update(serverHealth)
        .set({ heartbeatLostAt: new Date(t) })
        .where(and(eq(serverHealth.serverId, serverId), eq(serverHealth.heartbeatAt, heartbeatAt)))
        .returning({ id: serverHealth.serverId });
      if (upd.length === 0) return false;
      const r = await recomputeServer(tx, serverId, t);
      return !!r?.changed;
    });
    if (moved) {
      publishChange("health", clusterId);
      this.opts.log?.info({ serverId }, "heartbeat lost and fast probes failed: out of rotation");
    }
    return moved;
  }
}
