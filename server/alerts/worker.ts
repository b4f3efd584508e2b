/**
 * The alert worker: sends pending deliveries of the outbox (outbox.ts) and runs the checks
 * that have no write to hook (route panic after status changes, expiry). With several
 * instances on one PostgreSQL only the leader runs it (server/services.ts); a delivery is
 * claimed with a lease (next_attempt_at moved past the timeout, FOR UPDATE SKIP LOCKED), so
 * even two workers would not send it twice at once, and one that dies mid-send is retried
 * when the lease runs out. Failures are retried with backoff (delivery.ts), then the delivery
 * is failed and its target marked failing; nothing here throws out of the loop.
 */
import { and, eq, sql } from "drizzle-orm";
import type { Db } from "@/db/client";
import { rowsOf } from "@/db/rows";
import { alertDeliveries, alertEvents, alertTargets } from "@/db/schema";
import { onChange } from "@/server/bus";
import { MAX_NAMED_SUBSCRIBERS } from "@/server/changes";
import { logger } from "@/server/logger";
import { PrivateAddressError, PRIVATE_ADDRESS_REASON, type LookupFn } from "./address-guard";
import { buildRequest, DEFAULT_RETRY, failureText, httpFailureText, retryAfterMs, retryDelayMs, NO_ANSWER_REASON, type DeliverableTarget, type RetryPolicy } from "./delivery";
import type { AlertPayload, AnyAlertEventType } from "./events";
import { evaluateRoutePanic, type NewAlertEvent } from "./outbox";
import { postAlert } from "./send";

export const DELIVERY_TIMEOUT_MS = 5000;
const DEFAULT_POLL_MS = 1000;
const DEFAULT_WATCH_MS = 15_000;
const WATCH_QUIET_MS = 300;
/**
 * The share of time the periodic full check of every subscriber may take: its interval is at
 * least its last duration divided by this. At a million subscribers the check is a scan of the
 * table that took PostgreSQL 2.3 s, every 15 s a sixth of a core under `bench:scale`; edits
 * and folds name the subscribers they change, so the periodic check is the safety net (and
 * what notices expiries), not the path that catches most blocks.
 */
export const FULL_CHECK_TIME_SHARE = 0.05;

/**
 * Whether the periodic full check is due: `everyMs` since the last one, or longer when the
 * last one took long (FULL_CHECK_TIME_SHARE); a clock that stepped back before the last one
 * makes it due at once rather than never.
 */
export function periodicFullCheckDue(nowMs: number, lastFullCheckMs: number, lastFullCheckTookMs: number, everyMs: number): boolean {
  if (nowMs < lastFullCheckMs) return true;
  return nowMs - lastFullCheckMs >= Math.max(everyMs, lastFullCheckTookMs / FULL_CHECK_TIME_SHARE);
}
const BATCH = 20;
/** Finished events older than this are deleted. */
const KEEP_EVENTS_MS = 30 * 24 * 3600 * 1000;

export interface AlertWorkerOptions {
  db: Db;
  telegramApiUrl: string;
  now?: () => number;
  retry?: RetryPolicy;
  timeoutMs?: number;
  pollMs?: number;
  /** How often route panic and `stateChecks` run without a triggering event. */
  watchMs?: number;
  /**
   * Checks of other capabilities' state that no write can trigger (subscriber expiry:
   * server/usage/block-alerts.ts), run with route panic; each stores its events and returns them.
   * `subscriberIds`: only those subscribers changed since the last check (the edits named
   * them); null: check every subscriber (at the start, every `watchMs` or longer when the check
   * takes long: FULL_CHECK_TIME_SHARE, after an edit that named none).
   */
  stateChecks?: ReadonlyArray<(db: Db, nowMs: number, subscriberIds: readonly string[] | null) => Promise<NewAlertEvent[]>>;
  /**
   * Webhooks may reach loopback, private and link-local addresses (ROUTEBOARD_ALERTS_ALLOW_PRIVATE,
   * labs and tests). Off by default. Telegram goes to the operator's own
   * ROUTEBOARD_TELEGRAM_API_URL and is not guarded.
   */
  allowPrivate?: boolean;
  /** How webhook host names are resolved (the system resolver by default). */
  lookup?: LookupFn;
  random?: () => number;
}

interface Claimed {
  id: number;
  eventId: string;
  targetId: string;
  attempts: number;
}

export interface DeliveryOutcome {
  deliveryId: number;
  ok: boolean;
  error?: string;
  /** Given up: the delivery is failed now. */
  failed?: boolean;
}


export class AlertWorker {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private watchTimer: ReturnType<typeof setTimeout> | null = null;
  private running = false;
  private ticking: Promise<unknown> | null = null;
  private watching: Promise<unknown> | null = null;
  /** Subscribers named by "subscribers" events since the last check. */
  private namedSubscribers = new Set<string>();
  /** An event named no subscribers: the next check looks at all of them. */
  private fullCheckDue = true;
  private lastFullCheckMs = -Infinity;
  private lastFullCheckTookMs = 0;
  private offBus: (() => void) | null = null;
  private readonly now: () => number;
  private readonly retry: RetryPolicy;
  private readonly timeoutMs: number;

  constructor(private readonly opts: AlertWorkerOptions) {
    this.now = opts.now ?? Date.now;
    this.retry = opts.retry ?? DEFAULT_RETRY;
    this.timeoutMs = opts.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.offBus = onChange((e) => {
      if (e.kind === "subscribers") {
        // Edits that name their subscribers are checked alone: at a million subscribers the
        // full check is a scan of the table, after every burst of edits.
        if (e.subscriberIds?.length) for (const id of e.subscriberIds) this.namedSubscribers.add(id);
        else this.fullCheckDue = true;
      }
      if (e.kind === "health" || e.kind === "topology" || e.kind === "subscribers") this.watchSoon(WATCH_QUIET_MS);
    });
    this.schedule(0);
    this.watchSoon(0);
  }

  async stop(): Promise<void> {
    this.running = false;
    this.offBus?.();
    this.offBus = null;
    if (this.timer) clearTimeout(this.timer);
    if (this.watchTimer) clearTimeout(this.watchTimer);
    this.timer = this.watchTimer = null;
    await Promise.allSettled([this.ticking, this.watching]);
  }

  get active(): boolean {
    return this.running;
  }

  /** Sends what is due now (the Send test button calls it so the test goes out at once). */
  kick(): void {
    if (this.running) this.schedule(0);
  }

  private schedule(ms: number): void {
    if (!this.running) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.ticking) {
        this.schedule(50);
        return;
      }
      this.ticking = this.runOnce()
        .catch((err) => logger().warn({ err: (err as Error).message }, "alerts: delivery round failed"))
        .finally(() => {
          this.ticking = null;
          if (this.running && !this.timer) this.schedule(this.opts.pollMs ?? DEFAULT_POLL_MS);
        });
    }, ms);
    this.timer.unref?.();
  }

  private watchSoon(ms: number): void {
    if (!this.running) return;
    if (this.watchTimer) clearTimeout(this.watchTimer);
    this.watchTimer = setTimeout(() => {
      this.watchTimer = null;
      if (this.watching) {
        this.watchSoon(WATCH_QUIET_MS);
        return;
      }
      const nowMs = this.now();
      const full =
        this.fullCheckDue ||
        this.namedSubscribers.size > MAX_NAMED_SUBSCRIBERS ||
        periodicFullCheckDue(nowMs, this.lastFullCheckMs, this.lastFullCheckTookMs, this.opts.watchMs ?? DEFAULT_WATCH_MS);
      const scope = full ? null : [...this.namedSubscribers];
      this.fullCheckDue = false;
      this.namedSubscribers = new Set();
      if (full) this.lastFullCheckMs = nowMs;
      this.watching = this.watchOnce(scope)
        .then(() => {
          if (full) this.lastFullCheckTookMs = Math.max(0, this.now() - nowMs);
        })
        .catch((err) => {
          this.fullCheckDue = true; // the subscribers it was to check are not lost
          logger().warn({ err: (err as Error).message }, "alerts: state check failed");
        })
        .finally(() => {
          this.watching = null;
          if (this.running && !this.watchTimer) this.watchSoon(this.opts.watchMs ?? DEFAULT_WATCH_MS);
        });
    }, ms);
    this.watchTimer.unref?.();
  }

  /**
   * Route panic, expiry, and pruning of old finished events. Returns the events stored.
   * `subscriberIds`: the state checks look at those subscribers only (none: skipped); null: all.
   */
  async watchOnce(subscriberIds: readonly string[] | null = null): Promise<number> {
    const nowMs = this.now();
    const panic = await evaluateRoutePanic(this.opts.db, nowMs);
    let blocked: NewAlertEvent[] = [];
    if (subscriberIds === null || subscriberIds.length > 0) {
      for (const check of this.opts.stateChecks ?? []) blocked = blocked.concat(await check(this.opts.db, nowMs, subscriberIds));
    }
    await this.opts.db.execute(sql`
      delete from alert_events e where e.occurred_at < ${new Date(nowMs - KEEP_EVENTS_MS).toISOString()}::timestamptz
        and not exists (select 1 from alert_deliveries d where d.event_id = e.id and d.state = 'pending')`);
    if (panic.length + blocked.length > 0) this.kick();
    return panic.length + blocked.length;
  }

  /** Claims and sends every delivery due now (in rounds of BATCH); returns what happened. */
  async runOnce(): Promise<DeliveryOutcome[]> {
    const out: DeliveryOutcome[] = [];
    for (;;) {
      const claimed = await this.claim();
      if (claimed.length === 0) return out;
      // Targets side by side; one target's deliveries one after another, oldest first, so a
      // receiver sees "panic" before "recovered".
      const byTarget = new Map<string, Claimed[]>();
      for (const c of claimed.sort((x, y) => x.id - y.id)) byTarget.set(c.targetId, [...(byTarget.get(c.targetId) ?? []), c]);
      const rounds = await Promise.all(
        [...byTarget.values()].map(async (list) => {
          const done: DeliveryOutcome[] = [];
          for (const c of list) done.push(await this.deliver(c));
          return done;
        }),
      );
      out.push(...rounds.flat());
    }
  }

  private async claim(): Promise<Claimed[]> {
    const nowMs = this.now();
    const lease = new Date(nowMs + this.timeoutMs + 30_000).toISOString();
    const rows = rowsOf<{ id: number | string; event_id: string; target_id: string; attempts: number }>(
      await this.opts.db.execute(sql`
        update alert_deliveries set next_attempt_at = ${lease}::timestamptz, attempts = attempts + 1, last_attempt_at = ${new Date(nowMs).toISOString()}::timestamptz
        where id in (
          select d.id from alert_deliveries d join alert_targets t on t.id = d.target_id
          where d.state = 'pending' and t.enabled and d.next_attempt_at <= ${new Date(nowMs).toISOString()}::timestamptz
          order by d.next_attempt_at, d.id limit ${BATCH}
          for update of d skip locked)
        returning id, event_id, target_id, attempts`),
    );
    return rows.map((r) => ({ id: Number(r.id), eventId: r.event_id, targetId: r.target_id, attempts: r.attempts }));
  }

  private async deliver(c: Claimed): Promise<DeliveryOutcome> {
    const db = this.opts.db;
    const [event] = await db.select().from(alertEvents).where(eq(alertEvents.id, c.eventId));
    const [target] = await db.select().from(alertTargets).where(eq(alertTargets.id, c.targetId));
    if (!event || !target) return { deliveryId: c.id, ok: false, error: "event or target deleted" };
    const payload: AlertPayload = {
      id: event.id,
      type: event.type as AnyAlertEventType,
      occurredAt: event.occurredAt.toISOString(),
      cluster: event.clusterId ? { id: event.clusterId, name: event.clusterName } : null,
      data: (event.data ?? {}) as Record<string, unknown>,
    };
    const spec: DeliverableTarget =
      target.kind === "telegram" ? { kind: "telegram", botToken: target.botToken ?? "", chatId: target.chatId ?? "" } : { kind: "webhook", url: target.url ?? "", secret: target.secret ?? "" };
    const secrets = [target.botToken ?? "", target.secret ?? ""];
    let error: string | null = null;
    /** What the receiver asked for (Retry-After, Telegram's retry_after), in ms. */
    let askedDelayMs = 0;
    try {
      const req = buildRequest(spec, payload, { telegramApiUrl: this.opts.telegramApiUrl, deliveryId: String(c.id) });
      const guard = spec.kind === "webhook" && !this.opts.allowPrivate;
      const res = await postAlert(req.url, req.headers, req.body, { timeoutMs: this.timeoutMs, guard, lookup: this.opts.lookup });
      askedDelayMs = retryAfterMs(res.retryAfter, spec.kind === "telegram" ? res.text : "");
      // Only a status code and fixed words: a webhook's answer is never stored or shown (it
      // could be any page of any host the URL names). Telegram's API is the operator's own
      // ROUTEBOARD_TELEGRAM_API_URL, so its `description` ("chat not found") is kept.
      const telegramSays = spec.kind === "telegram" ? (safeJson(res.text) as { ok?: boolean; description?: unknown } | null) : null;
      const said = typeof telegramSays?.description === "string" ? failureText(new Error(telegramSays.description), secrets).slice(0, 200) : null;
      if (res.status < 200 || res.status > 299) error = httpFailureText(res.status, said);
      else if (telegramSays?.ok === false) error = `Telegram: ${said ?? "not ok"}`;
    } catch (err) {
      // Refused, reset, timed out, no such host: one reason, so errors do not tell open ports from closed ones.
      error = err instanceof PrivateAddressError ? PRIVATE_ADDRESS_REASON : NO_ANSWER_REASON;
    }
    const nowMs = this.now();
    const at = new Date(nowMs);
    if (error === null) {
      await db.transaction(async (tx) => {
        await tx.update(alertDeliveries).set({ state: "delivered", deliveredAt: at, lastError: null }).where(eq(alertDeliveries.id, c.id));
        await tx.update(alertTargets).set({ lastDeliveryAt: at, failing: false }).where(eq(alertTargets.id, target.id));
      });
      return { deliveryId: c.id, ok: true };
    }
    // A test shows at once whether the target works: one attempt, no retries.
    const backoff = event.type === "test" ? null : retryDelayMs(c.attempts, this.retry, (this.opts.random ?? Math.random)());
    const delay = backoff === null ? null : Math.max(backoff, Math.min(askedDelayMs, this.retry.maxDelayMs));
    await db.transaction(async (tx) => {
      if (delay === null) {
        await tx.update(alertDeliveries).set({ state: "failed", lastError: error }).where(eq(alertDeliveries.id, c.id));
        await tx.update(alertTargets).set({ failing: true, lastError: error, lastFailureAt: at }).where(eq(alertTargets.id, target.id));
      } else {
        await tx
          .update(alertDeliveries)
          .set({ nextAttemptAt: new Date(nowMs + delay), lastError: error })
          .where(and(eq(alertDeliveries.id, c.id), eq(alertDeliveries.state, "pending")));
        await tx.update(alertTargets).set({ lastError: error, lastFailureAt: at }).where(eq(alertTargets.id, target.id));
      }
    });
    if (delay === null) logger().warn({ target: target.name, type: event.type, error }, "alerts: delivery failed for good");
    return { deliveryId: c.id, ok: false, error, failed: delay === null };
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

const KEY = Symbol.for("routeboard.alerts");
type G = typeof globalThis & { [KEY]?: AlertWorker };

/** The process-wide worker while this instance runs it (null on a non-leader). */
export function alertWorker(): AlertWorker | null {
  return (globalThis as G)[KEY] ?? null;
}
export function setAlertWorker(w: AlertWorker | null): void {
  (globalThis as G)[KEY] = w ?? undefined;
}
