/**
 * Group commit for agent reports: validated reports queue here and are written together,
 * one transaction per batch, while the previous batch commits. Under load a batch grows to
 * MAX_BATCH reports and the commit cost (WAL flush, round trips) is paid once for all of
 * them; when idle a report is written at once. Each request is answered only after its
 * batch committed, so nothing acknowledged is lost. If a batch fails, its reports are
 * retried one transaction each, so one bad report cannot fail its neighbours.
 *
 * A batch's per-user traffic goes into one traffic_journal row in the batch's transaction;
 * the batcher's TrafficFoldJob (server/usage/fold-job.ts) folds the journal on its timers.
 *
 * Bus events are coalesced: per batch one "metrics" per cluster and "health" where a status
 * changed (the fold job publishes "traffic" and "subscribers").
 */
import "server-only";
import type { Db } from "@/db/client";
import { publishChange } from "@/server/bus";
import { counter } from "@/server/metrics";
import type { AgentReport } from "@/core/agent-wire";
import { showFoldLag, TrafficFoldJob } from "@/server/usage/fold-job";
import { applyReport, applyReports, reportOutcome, type AppliedReport, type ReportingServer, type ReportOutcome } from "./reports";

/** Largest batch on PostgreSQL; on PGlite, PGLITE_MAX_BATCH keeps one transaction short. */
export const MAX_BATCH = 256;
export const PGLITE_MAX_BATCH = 24;
const FULL_ENOUGH = 64;
const GATHER_MS = 10;

const batchesTotal = counter("routeboard_agent_report_batches_total", "Transactions that stored agent reports (group commit)");
const batchedReports = counter("routeboard_agent_report_batched_total", "Agent reports stored by those transactions");
const batchMs = counter("routeboard_agent_report_batch_seconds_total", "Time spent writing agent report batches");

interface Item {
  server: ReportingServer;
  report: AgentReport;
  nowMs: number;
  resolve: (o: ReportOutcome) => void;
  reject: (err: unknown) => void;
}

export class ReportBatcher {
  private queue: Item[] = [];
  /** Writers draining the queue (PostgreSQL: up to 2 at once; PGlite: 1) and the servers they hold. */
  private writers = new Set<Promise<void>>();
  private maxWriters = 1;
  private writing = new Set<string>();
  private maxBatch = MAX_BATCH;
  /** Reports admitted (being read, parsed or written) and how many may be at once. */
  private admitted = 0;
  private maxAdmitted = MAX_BATCH * 4;
  batches = 0;
  reports = 0;
  readonly folds: TrafficFoldJob;

  constructor(
    private readonly db: () => Promise<Db>,
    private readonly now: () => number = Date.now,
  ) {
    this.folds = new TrafficFoldJob(db);
  }

  /** Sizes batches for the database and starts the folds (TrafficFoldJob.start). */
  start(kind: "pglite" | "postgres"): void {
    this.maxBatch = kind === "pglite" ? PGLITE_MAX_BATCH : MAX_BATCH;
    this.maxAdmitted = this.maxBatch * (kind === "pglite" ? 3 : 4);
    this.maxWriters = kind === "pglite" ? 1 : 2;
    this.folds.start(kind);
  }

  /** Writes what is queued, folds the journal once more and stops the fold timers. */
  async stop(): Promise<void> {
    this.folds.stopTimers();
    await this.idle();
    await this.folds.fold();
  }

  /**
   * Admission control: whether one more report may be read and queued now. Beyond a few
   * batches' worth the panel only gets slower for everyone (on PGlite the database shares this
   * event loop with /api/health), so the route answers 503 + Retry-After before reading the
   * body: nothing is stored, and the agent keeps the report and sends it again. Call
   * `release()` once the admitted report is answered.
   */
  admit(): boolean {
    if (this.admitted >= this.maxAdmitted) return false;
    this.admitted++;
    return true;
  }

  release(): void {
    this.admitted = Math.max(0, this.admitted - 1);
  }

  submit(server: ReportingServer, report: AgentReport): Promise<ReportOutcome> {
    this.folds.ensureRunning();
    return new Promise((resolve, reject) => {
      this.queue.push({ server, report, nowMs: this.now(), resolve, reject });
      this.kick();
    });
  }

  /**
   * Starts a writer when none runs, and on PostgreSQL a second one while a batch's worth is
   * waiting: a batch then commits while the next is written, instead of waiting for it.
   */
  private kick(): void {
    if (this.writers.size >= this.maxWriters) return;
    if (this.writers.size > 0 && this.queue.length < FULL_ENOUGH) return;
    const w: Promise<void> = this.drain().finally(() => {
      this.writers.delete(w);
      if (this.queue.length > 0) this.kick();
    });
    this.writers.add(w);
  }

  /** Resolves when everything queued so far is written. */
  async idle(): Promise<void> {
    while (this.writers.size > 0) await Promise.all([...this.writers]);
  }

  private async drain(): Promise<void> {
    // Let the requests that arrive in the same tick join the first batch.
    await new Promise((r) => setImmediate(r));
    while (this.queue.length > 0) {
      // Under load, wait a few ms for a fuller batch: the per-batch cost (statements, commit)
      // dominates small batches. An idle panel writes a lone report at once.
      if (this.queue.length > 1 && this.queue.length < Math.min(FULL_ENOUGH, this.maxBatch)) await new Promise((r) => setTimeout(r, GATHER_MS));
      const batch = this.take();
      if (batch.length === 0) return; // what is left belongs to servers another writer is writing
      for (const it of batch) this.writing.add(it.server.serverId);
      try {
        await this.write(batch);
      } finally {
        for (const it of batch) this.writing.delete(it.server.serverId);
      }
      // Let pending I/O run before the next batch (on PGlite a transaction, and the chain of
      // promises from one batch to the next, never yields to the event loop on its own): an
      // /api/health that arrived meanwhile queues its query ahead of the next batch.
      await new Promise((r) => setImmediate(r));
    }
  }

  /**
   * The next batch, in arrival order, leaving in the queue the reports of servers another
   * writer is writing: a server's reports are stored one batch after the other, in order.
   */
  private take(): Item[] {
    if (this.writing.size === 0) return this.queue.splice(0, this.maxBatch);
    const batch: Item[] = [];
    const rest: Item[] = [];
    const held = new Set<string>();
    for (const it of this.queue) {
      const id = it.server.serverId;
      if (batch.length < this.maxBatch && !this.writing.has(id) && !held.has(id)) batch.push(it);
      else {
        rest.push(it);
        held.add(id);
      }
    }
    this.queue = rest;
    return batch;
  }

  private async write(batch: Item[]): Promise<void> {
    const db = await this.db();
    // Same order on every instance (by server, stable) keeps row locks from deadlocking.
    const ordered = [...batch].sort((a, b) => (a.server.serverId < b.server.serverId ? -1 : a.server.serverId > b.server.serverId ? 1 : 0));
    let results: Map<Item, AppliedReport> | null = null;
    const t0 = performance.now();
    try {
      // One applyReports for the whole batch: a fixed number of set-based statements, not
      // ~15 per report (measured on PGlite: 200 reports 0.13–0.23 s instead of 2.4–3.5 s).
      results = await db.transaction(async (tx) => {
        const applied = await applyReports(tx, ordered);
        return new Map(ordered.map((it, k) => [it, applied[k]!]));
      });
    } catch {
      results = null;
    }
    if (results) {
      batchesTotal.inc();
      batchedReports.inc({}, batch.length);
      batchMs.inc({}, (performance.now() - t0) / 1000);
      this.batches++;
      this.reports += batch.length;
      this.announce(batch, results);
      for (const it of batch) it.resolve(reportOutcome(it.server, results.get(it)!));
      return;
    }
    // The batch failed: each report on its own, so only the culprit fails.
    for (const it of ordered) {
      try {
        const applied = await db.transaction((tx) => applyReport(tx, it.server, it.report, it.nowMs));
        this.batches++;
        this.reports++;
        this.announce([it], new Map([[it, applied]]));
        it.resolve(reportOutcome(it.server, applied));
      } catch (err) {
        it.reject(err);
      }
    }
  }

  private announce(items: Item[], results: Map<Item, AppliedReport>): void {
    const metrics = new Set<string>();
    const health = new Set<string>();
    for (const it of items) {
      const r = results.get(it)!;
      const c = it.server.clusterId;
      metrics.add(c);
      // Inbounds not served changing moves the balancer's choice like a status change does.
      if (r.statusChanged || r.inboundsChanged) health.add(c);
    }
    for (const c of metrics) publishChange("metrics", c);
    for (const c of health) publishChange("health", c);
  }
}

const KEY = Symbol.for("routeboard.reportBatcher");
type G = typeof globalThis & { [KEY]?: ReportBatcher };
export function reportBatcher(db: () => Promise<Db>): ReportBatcher {
  const g = globalThis as G;
  if (!g[KEY]) {
    g[KEY] = new ReportBatcher(db);
    showFoldLag(g[KEY].folds);
  }
  return g[KEY];
}
