/**
 * Runs scheduled usage resets (subscriber-limits.ts) when they come due. It sleeps until the
 * soonest next_reset_at of any subscriber (one index lookup), re-reading it when subscribers
 * change and at least every MAX_SLEEP_MS, so 100,000 subscribers cost one query per wake-up,
 * not a poll over all of them. With several instances only the leader runs it; runDueResets
 * is also safe to run twice (rows are locked and due only once).
 */
import type { Db } from "@/db/client";
import { onChange, publishChange } from "@/server/bus";
import { logger } from "@/server/logger";
import { nextScheduledReset, runDueResets } from "./limits";

export const MAX_SLEEP_MS = 60_000;
const RETRY_MS = 5_000;
const STEP = 1000;

export class UsageResetJob {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private off: (() => void) | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;
  resets = 0;

  constructor(
    private readonly db: () => Promise<Db>,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    // A strategy set or changed elsewhere may bring the soonest reset forward.
    this.off = onChange((e) => {
      if (e.kind === "subscribers") void this.tick();
    });
    void this.tick();
  }

  stop(): Promise<void> {
    this.stopped = true;
    this.off?.();
    this.off = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    return this.running ?? Promise.resolve();
  }

  /** Runs what is due now, then sleeps until the next reset; one run at a time. */
  tick(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.runOnce();
      } while (this.again);
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Runs the due resets; the timer for the next one is armed only while started. */
  private async runOnce(): Promise<void> {
    let delay = MAX_SLEEP_MS;
    try {
      const db = await this.db();
      for (;;) {
        const out = await runDueResets(db, this.now(), STEP);
        this.resets += out.reset;
        for (const c of out.clusterIds) publishChange("subscribers", c);
        if (out.reset < STEP) break;
      }
      const next = await nextScheduledReset(db);
      if (next) delay = Math.min(MAX_SLEEP_MS, Math.max(0, next.getTime() - this.now()) + 1);
    } catch (err) {
      logger().warn({ err: (err as Error).message }, "scheduled usage resets failed; trying again shortly");
      delay = RETRY_MS;
    }
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.tick();
    }, delay);
    this.timer.unref?.();
  }
}
