/**
 * Group commit for the active prober's results: MonitoringService queues each result here and
 * they are stored together by recordProbeResults (probe-results.ts), one transaction per flush. On
 * PGlite, which runs in the app's event loop, one transaction per result cost a few ms each:
 * with ~65 results/s (50 servers every second, 450 every 30 s) that was most of the main
 * thread's idle work.
 *
 * - A flush runs FLUSH_MS after the first result queued, or at once when FLUSH_AT results wait.
 *   Only one flush runs at a time; a server's results are written in the order they came.
 * - The database is down (isDatabaseDown): the batch goes back to the queue, ahead of what
 *   arrived meanwhile, and is retried at the next flush. Each server keeps its newest
 *   KEEP_PER_SERVER results, so an outage cannot grow memory without bound (older results
 *   only lengthen streaks the newest ones already decide).
 * - A deadlock with another instance's writes (PostgreSQL: a batch locks many health rows)
 *   rolled the batch back: it is queued again in the same way.
 * - Any other error would fail the same batch again: it is logged and the batch dropped, as a
 *   result whose own transaction failed was before; each server's next probe comes within
 *   its interval.
 * - stop() writes what is queued.
 */
import "server-only";
import type { Db } from "@/db/client";
import { isDatabaseDown, isTransactionConflict } from "@/server/db-errors";
import { counter } from "@/server/metrics";
import { recordProbeResults, type ProbeResultToRecord, type RecordedProbes } from "./probe-results";

/**
 * How long the first queued result waits for others. Probes run every ≥ 1 s and a status
 * needs unhealthyThreshold results to move, so 250 ms more is little next to that; at ~65
 * results/s it makes ~16 results per transaction and 4 transactions a second instead of 65.
 */
export const FLUSH_MS = 250;
/**
 * A burst (the first round after start, a config change rescheduling every target) is written
 * at once when this many wait: beyond a few dozen results the per-transaction cost is already
 * shared, and waiting longer only delays statuses.
 */
export const FLUSH_AT = 64;
/** Results kept per server while they cannot be written (newest first to stay). */
export const KEEP_PER_SERVER = 16;
/** Servers per transaction (as the sweep's pages): keeps one PGlite transaction short after an outage. */
export const SERVERS_PER_FLUSH = 250;

const batchesTotal = counter("routeboard_probe_result_batches_total", "Transactions that stored active-probe results");
const storedTotal = counter("routeboard_probe_results_stored_total", "Active-probe results given to those transactions");
const droppedTotal = counter("routeboard_probe_results_dropped_total", "Active-probe results not stored: by reason (outage cap, error)");

export interface ProbeBatcherLogger {
  info?(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface ProbeBatcherOptions {
  db: Db;
  /** Clusters in which a server's status changed, once per stored batch (publish "health"). */
  onChanged?: (clusterIds: ReadonlySet<string>) => void;
  logger?: ProbeBatcherLogger;
  flushMs?: number;
  flushAt?: number;
  keepPerServer?: number;
  serversPerFlush?: number;
  /** Injectable for tests; defaults to recordProbeResults. */
  record?: (db: Db, items: readonly ProbeResultToRecord[]) => Promise<RecordedProbes>;
}

const silent: ProbeBatcherLogger = { warn() {}, error() {} };

export class ProbeResultBatcher {
  /** Per server, its results in arrival order; servers in the order they are to be written. */
  private queue = new Map<string, ProbeResultToRecord[]>();
  private queued = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private flushing: Promise<void> | null = null;
  private down = false;
  /** The cap was logged (once until a batch is stored again). */
  private capWarned = false;
  private stopped = false;
  private readonly flushMs: number;
  private readonly flushAt: number;
  private readonly keep: number;
  private readonly perFlush: number;
  private readonly record: NonNullable<ProbeBatcherOptions["record"]>;
  private readonly log: ProbeBatcherLogger;

  constructor(private readonly opts: ProbeBatcherOptions) {
    this.flushMs = opts.flushMs ?? FLUSH_MS;
    this.flushAt = Math.max(1, opts.flushAt ?? FLUSH_AT);
    this.keep = Math.max(1, opts.keepPerServer ?? KEEP_PER_SERVER);
    this.perFlush = Math.max(1, opts.serversPerFlush ?? SERVERS_PER_FLUSH);
    this.record = opts.record ?? recordProbeResults;
    this.log = opts.logger ?? silent;
  }

  /** Results waiting to be written. */
  get size(): number {
    return this.queued;
  }

  /** Whether the last write found the database down (its results are still queued). */
  get databaseDown(): boolean {
    return this.down;
  }

  /** Queues one result; it is written within flushMs (at once when flushAt results wait). */
  push(item: ProbeResultToRecord): void {
    this.stopped = false;
    let list = this.queue.get(item.serverId);
    if (!list) {
      list = [];
      this.queue.set(item.serverId, list);
    }
    list.push(item);
    this.queued++;
    this.trim(item.serverId, list);
    if (this.queued >= this.flushAt) this.kick();
    else this.schedule();
  }

  /**
   * Writes everything queued, including what arrives meanwhile, until the queue is empty or
   * the database is down (then the rest stays queued). Resolves when done; never rejects.
   */
  async flush(): Promise<void> {
    this.clearTimer();
    while (this.flushing) await this.flushing;
    if (this.queued === 0) return;
    this.flushing = this.drain(true).finally(() => this.afterDrain());
    await this.flushing;
  }

  /** Writes what is queued and schedules nothing more (a later push starts again). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.flush();
    this.clearTimer();
    if (this.queued > 0) this.log.warn({ results: this.queued }, "probe results: the database is down; results still queued were not stored");
  }

  private trim(serverId: string, list: ProbeResultToRecord[]): void {
    if (list.length <= this.keep) return;
    const over = list.length - this.keep;
    list.splice(0, over);
    this.queued -= over;
    droppedTotal.inc({ reason: "outage_cap" }, over);
    if (!this.capWarned) this.log.warn({ serverId, keepPerServer: this.keep }, "probe results: keeping only the newest per server until they can be stored");
    this.capWarned = true;
  }

  private schedule(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.kick();
    }, this.flushMs);
    this.timer.unref?.();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Starts a flush unless one runs (that one goes on while flushAt results wait). */
  private kick(): void {
    if (this.flushing) return;
    this.clearTimer();
    this.flushing = this.drain(false).finally(() => this.afterDrain());
  }

  private afterDrain(): void {
    this.flushing = null;
    if (this.queued > 0) this.schedule();
  }

  private async drain(all: boolean): Promise<void> {
    let first = true;
    while (this.queued > 0 && (first || all || this.queued >= this.flushAt)) {
      first = false;
      const batch = this.take();
      if (!(await this.write(batch))) return;
      // Let pending I/O (an HTTP request) run between two transactions.
      if (this.queued > 0) await new Promise((r) => setImmediate(r));
    }
  }

  /** Whole servers' results, in queue order, up to perFlush servers. */
  private take(): Map<string, ProbeResultToRecord[]> {
    const batch = new Map<string, ProbeResultToRecord[]>();
    for (const [id, list] of this.queue) {
      if (batch.size >= this.perFlush) break;
      batch.set(id, list);
      this.queue.delete(id);
      this.queued -= list.length;
    }
    return batch;
  }

  /** Puts a batch back ahead of what arrived meanwhile (a server's older results first). */
  private requeue(batch: Map<string, ProbeResultToRecord[]>): void {
    const rest = this.queue;
    this.queue = new Map();
    for (const [id, older] of batch) {
      const newer = rest.get(id) ?? [];
      rest.delete(id);
      const list = [...older, ...newer];
      this.queue.set(id, list);
      this.queued += older.length;
      this.trim(id, list);
    }
    for (const [id, list] of rest) this.queue.set(id, list);
  }

  /** False when the database is down (the batch is queued again). */
  private async write(batch: Map<string, ProbeResultToRecord[]>): Promise<boolean> {
    const items = [...batch.values()].flat();
    try {
      const { changedClusters } = await this.record(this.opts.db, items);
      this.capWarned = false;
      batchesTotal.inc();
      storedTotal.inc({}, items.length);
      if (this.down) {
        this.down = false;
        this.log.info?.({ results: items.length }, "probe results: the database is back; queued results stored");
      }
      if (changedClusters.size > 0) this.opts.onChanged?.(changedClusters);
      return true;
    } catch (err) {
      if (isDatabaseDown(err)) {
        // Rolled back: nothing of the batch was stored, so it is written again later.
        this.requeue(batch);
        if (!this.down) this.log.warn({ err, results: this.queued }, "probe results: the database is down; keeping them queued");
        this.down = true;
        return false;
      }
      if (isTransactionConflict(err)) {
        this.requeue(batch);
        this.log.warn({ err, results: items.length }, "probe results: a batch met a deadlock; writing it again at the next flush");
        return false;
      }
      droppedTotal.inc({ reason: "error" }, items.length);
      this.log.error({ err, results: items.length }, "probe results: storing a batch failed; dropped");
      return true;
    }
  }
}
