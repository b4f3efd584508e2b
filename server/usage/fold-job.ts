/**
 * The traffic journal's folds on timers (journal.ts): subscribers' totals every
 * TOTALS_EVERY_MS (so traffic shows within a report interval, and a limit crossed drops the
 * subscriber at the next config push), per-(subscriber, server, day) rows every DAYS_EVERY_MS,
 * in bounded steps so that on PGlite (which runs in this event loop) no step blocks other
 * requests for long. The report batcher (server/dataplane/report-batcher.ts) owns one: it
 * starts it with the first report and folds what is left when it stops.
 *
 * Bus events per totals fold: "traffic" where subscribers' totals moved and "subscribers" where
 * a limit was crossed (the config hub then drops those subscribers from every agent's config)
 * or a subscriber on hold connected first (its expiry is set: the config hub times it).
 */
import "server-only";
import type { Db } from "@/db/client";
import { publishChange } from "@/server/bus";
import { logger } from "@/server/logger";
import { gauge } from "@/server/metrics";
import { foldSubscriberChanges, foldTrafficDays, foldTrafficTotals } from "./journal";

/** How often journalled traffic is added to subscribers' totals (limits, "online now"). */
export const TOTALS_EVERY_MS = 500;
/** How often journalled traffic is added to subscriber_traffic (per server and day). */
export const DAYS_EVERY_MS = 5_000;
const DAYS_BUDGET_MS = 1_000;

export class TrafficFoldJob {
  private totalsTimer: ReturnType<typeof setInterval> | null = null;
  private daysTimer: ReturnType<typeof setInterval> | null = null;
  private folding = new Map<"totals" | "days", Promise<unknown>>();
  /** Journal rows per fold step (PGlite: few, so one step stays within a few tens of ms). */
  private totalsRows = 1000;
  private daysRows = 1000;
  /** When the last totals fold that left no journal row behind started (null: none yet). */
  private totalsCaughtUpAtMs: number | null = null;

  constructor(
    private readonly db: () => Promise<Db>,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Seconds since the last totals fold that caught up with the journal started: every row
   * committed before then is in the totals, so no acknowledged report has waited longer.
   * -1 before the first fold.
   */
  totalsLagS(): number {
    return this.totalsCaughtUpAtMs === null ? -1 : Math.max(0, this.now() - this.totalsCaughtUpAtMs) / 1000;
  }

  /**
   * Sizes fold steps for the database and starts the timers, folding at once what a previous
   * run journalled but did not fold (a crash between the ack and the fold loses nothing).
   */
  start(kind: "pglite" | "postgres"): void {
    // Measured on PGlite per journal row of 24 reports × 100 users: ~9 ms totals, ~45 ms days.
    this.totalsRows = kind === "pglite" ? 8 : 1000;
    this.daysRows = kind === "pglite" ? 1 : 1000;
    this.ensureRunning();
    void this.foldTotals();
  }

  /** Starts the timers unless they run. */
  ensureRunning(): void {
    if (this.totalsTimer) return;
    this.totalsTimer = setInterval(() => void this.foldTotals(), TOTALS_EVERY_MS);
    this.totalsTimer.unref?.();
    this.daysTimer = setInterval(() => void this.foldDays(), DAYS_EVERY_MS);
    this.daysTimer.unref?.();
  }

  /** Stops the timers (a fold under way finishes; `fold()` then folds the rest). */
  stopTimers(): void {
    if (this.totalsTimer) clearInterval(this.totalsTimer);
    if (this.daysTimer) clearInterval(this.daysTimer);
    this.totalsTimer = null;
    this.daysTimer = null;
  }

  /**
   * One fold of each kind at a time; a fold asked for while one of its kind runs joins it (the
   * timer comes back). Totals and per-day folds run side by side (they touch disjoint rows).
   */
  private exclusive(kind: "totals" | "days", fn: (db: Db) => Promise<unknown>): Promise<unknown> {
    let p = this.folding.get(kind);
    if (!p) {
      p = this.db()
        .then(fn)
        .catch((err: unknown) => logger().warn({ err: (err as Error).message }, "folding the traffic journal failed; trying again later"))
        .finally(() => this.folding.delete(kind));
      this.folding.set(kind, p);
    }
    return p;
  }

  /** Subscribers' totals from the journal, in steps of totalsRows rows, publishing as it goes. */
  foldTotals(): Promise<unknown> {
    return this.exclusive("totals", async (db) => {
      const startedAtMs = this.now();
      for (;;) {
        const t = await foldTrafficTotals(db, this.totalsRows);
        for (const c of t.movedClusters) publishChange("traffic", c);
        for (const c of foldSubscriberChanges(t)) publishChange(c.kind, c.clusterId, c.subscriberIds);
        if (t.folded < this.totalsRows) {
          this.totalsCaughtUpAtMs = startedAtMs;
          return;
        }
        await new Promise((r) => setImmediate(r));
      }
    });
  }

  /**
   * Per-day rows from the journal, in steps of daysRows rows, yielding between steps; at most
   * DAYS_BUDGET_MS per call (or everything, when `all`), so a backlog never holds up the totals.
   */
  foldDays(all = false): Promise<unknown> {
    return this.exclusive("days", async (db) => {
      const until = performance.now() + DAYS_BUDGET_MS;
      for (;;) {
        const n = await foldTrafficDays(db, this.daysRows);
        if (n < this.daysRows || (!all && performance.now() > until)) return;
        await new Promise((r) => setImmediate(r));
      }
    });
  }

  /** Everything journalled so far: totals, then per-day rows. */
  async fold(): Promise<void> {
    await Promise.all([...this.folding.values()]);
    await this.foldTotals();
    await this.foldDays(true);
  }
}

/** Shows `job`'s totalsLagS on /metrics (the process's report batcher's job). */
export function showFoldLag(job: TrafficFoldJob): void {
  gauge(
    "routeboard_traffic_fold_lag_seconds",
    "How long an acknowledged report may have waited for its traffic to reach subscribers' totals: seconds since the last totals fold that left nothing behind started (-1 before the first)",
    () => job.totalsLagS(),
  );
}
