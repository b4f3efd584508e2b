/**
 * The active prober: a scheduler with no database. `listTargets()` says what to probe
 * (MonitoringService lists the enabled servers, including those out of rotation); each target
 * is probed every `intervalS` after a jittered first run, never twice at once, and every
 * result goes to `onResult` (MonitoringService records it through the streak machine).
 * Only the instance holding the prober lock (server/leader.ts) runs one.
 */
import { runProbe as defaultRunProbe, type ProbeOutcome, type ProbeRunConfig } from "./probe";

export interface ProbeTarget {
  serverId: string;
  host: string;
  /** The inbound's port: used when the probe config has no port. */
  port: number;
  /** The effective (merged) probe config. `enabled: false` targets are not probed. */
  probe: ProbeRunConfig & { intervalS: number; enabled?: boolean };
}

export interface ProberResult extends ProbeOutcome {
  /** When the probe started, from `now()`. */
  atMs: number;
}

/** pino-compatible subset. */
export interface ProberLogger {
  debug?(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface ProberOptions {
  listTargets: () => Promise<ProbeTarget[]>;
  onResult: (serverId: string, result: ProberResult, target: ProbeTarget) => Promise<void>;
  now?: () => number;
  logger?: ProberLogger;
  /** How often the target list is re-read (default 10 s). `refresh()` forces it. */
  refreshMs?: number;
  /** Injectable for tests. */
  runProbe?: typeof defaultRunProbe;
  /** Injectable for tests; in [0, 1). */
  random?: () => number;
}

interface Entry {
  target: ProbeTarget;
  key: string;
  timer: ReturnType<typeof setTimeout> | null;
  nextAtMs: number | null;
  abort: AbortController | null;
  inFlight: Promise<void> | null;
  removed: boolean;
}

const DEFAULT_REFRESH_MS = 10_000;
const silentLogger: ProberLogger = { warn() {}, error() {} };

function intervalMsOf(t: ProbeTarget): number {
  const s = t.probe.intervalS;
  return Math.max(1, (Number.isFinite(s) && s > 0 ? s : 30) * 1000);
}

function targetKey(t: ProbeTarget): string {
  return JSON.stringify([t.host, t.port, t.probe]);
}

export class Prober {
  private readonly opts: Required<Omit<ProberOptions, "logger">> & { logger: ProberLogger };
  private readonly entries = new Map<string, Entry>();
  private running = false;
  private refreshTimer: ReturnType<typeof setTimeout> | null = null;
  private refreshing: Promise<void> | null = null;
  private generation = 0;

  constructor(opts: ProberOptions) {
    this.opts = {
      listTargets: opts.listTargets,
      onResult: opts.onResult,
      now: opts.now ?? Date.now,
      logger: opts.logger ?? silentLogger,
      refreshMs: opts.refreshMs ?? DEFAULT_REFRESH_MS,
      runProbe: opts.runProbe ?? defaultRunProbe,
      random: opts.random ?? Math.random,
    };
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** Reads the targets and starts probing. Idempotent. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.generation++;
    await this.refresh();
  }

  /** Stops promptly: clears every timer, aborts probes in flight and waits for them. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.generation++;
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
    const pending: Promise<void>[] = [];
    for (const e of this.entries.values()) {
      this.dropEntry(e);
      if (e.inFlight) pending.push(e.inFlight);
    }
    this.entries.clear();
    if (this.refreshing) pending.push(this.refreshing);
    await Promise.allSettled(pending);
  }

  /** Re-reads the target list now (MonitoringService calls it when servers or probe configs change). */
  refresh(): Promise<void> {
    if (!this.running) return Promise.resolve();
    if (this.refreshing) return this.refreshing;
    const gen = this.generation;
    this.refreshing = (async () => {
      try {
        const targets = await this.opts.listTargets();
        if (this.running && gen === this.generation) this.applyTargets(targets);
      } catch (err) {
        this.opts.logger.warn({ err }, "prober: listing targets failed; keeping the previous list");
      } finally {
        this.refreshing = null;
        if (this.running && gen === this.generation) this.scheduleRefresh();
      }
    })();
    return this.refreshing;
  }

  /** What is scheduled, for diagnostics. */
  snapshot(): { serverId: string; nextAtMs: number | null; inFlight: boolean }[] {
    return [...this.entries.values()].map((e) => ({
      serverId: e.target.serverId,
      nextAtMs: e.nextAtMs,
      inFlight: e.inFlight !== null,
    }));
  }

  private scheduleRefresh(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = null;
      void this.refresh();
    }, this.opts.refreshMs);
    this.refreshTimer.unref?.();
  }

  private applyTargets(targets: ProbeTarget[]): void {
    const wanted = new Map<string, ProbeTarget>();
    for (const t of targets) if (t.probe.enabled !== false) wanted.set(t.serverId, t);
    for (const [id, e] of this.entries) {
      if (!wanted.has(id)) {
        this.dropEntry(e);
        this.entries.delete(id);
      }
    }
    for (const [id, t] of wanted) {
      const key = targetKey(t);
      const e = this.entries.get(id);
      if (!e) {
        const entry: Entry = { target: t, key, timer: null, nextAtMs: null, abort: null, inFlight: null, removed: false };
        this.entries.set(id, entry);
        this.schedule(entry, this.opts.random() * intervalMsOf(t));
      } else if (e.key !== key) {
        const oldInterval = intervalMsOf(e.target);
        e.target = t;
        e.key = key;
        // config changed: take it into account within one (new) interval
        if (e.timer && intervalMsOf(t) !== oldInterval) this.schedule(e, this.opts.random() * intervalMsOf(t));
      }
    }
  }

  private dropEntry(e: Entry): void {
    e.removed = true;
    if (e.timer) clearTimeout(e.timer);
    e.timer = null;
    e.nextAtMs = null;
    e.abort?.abort();
  }

  private schedule(e: Entry, delayMs: number): void {
    if (e.timer) clearTimeout(e.timer);
    const delay = Math.max(0, delayMs);
    e.nextAtMs = this.opts.now() + delay;
    e.timer = setTimeout(() => {
      e.timer = null;
      e.nextAtMs = null;
      this.tick(e);
    }, delay);
    e.timer.unref?.();
  }

  private tick(e: Entry): void {
    if (!this.running || e.removed || e.inFlight) return;
    const target = e.target;
    const ac = new AbortController();
    e.abort = ac;
    const atMs = this.opts.now();
    const t0 = performance.now();
    e.inFlight = (async () => {
      try {
        let outcome: ProbeOutcome;
        try {
          outcome = await this.opts.runProbe(target.probe, target.host, target.port, { signal: ac.signal });
        } catch (err) {
          outcome = { ok: false, latencyMs: 0, reason: `probe crashed: ${(err as Error)?.message ?? String(err)}` };
        }
        if (!this.running || e.removed || ac.signal.aborted) return;
        try {
          await this.opts.onResult(target.serverId, { ...outcome, atMs }, target);
        } catch (err) {
          this.opts.logger.error({ err, serverId: target.serverId }, "prober: onResult failed");
        }
      } finally {
        e.inFlight = null;
        e.abort = null;
        if (this.running && !e.removed) {
          const elapsed = performance.now() - t0;
          this.schedule(e, intervalMsOf(e.target) - elapsed);
        }
      }
    })();
  }
}
