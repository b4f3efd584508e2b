/**
 * The subscription service: answers GET /sub/<token> from the in-memory snapshot, runs the
 * balancer for each non-empty route, stores changed assignments in the background, and keeps
 * answering from the last good snapshot when the database is away (marked stale).
 *
 * It joins three parts and routes the change bus to them:
 * - snapshot-cache.ts: the snapshot and when it is reloaded;
 * - server/assignments/stored-choices.ts: subscribers' stored choices, read in batches and
 *   written behind;
 * - answer.ts: deciding with the balancer and rendering, with the decisions cached.
 */
import type { Db } from "@/db/client";
import { Balancer } from "@/server/balancer";
import { instanceId, onChange, type ChangeEvent } from "@/server/bus";
import { StoredChoices } from "@/server/assignments/stored-choices";
import { Answerer, type AnswerContext, type Explanation, type SubscriptionAnswer } from "./answer";
import { SnapshotCache } from "./snapshot-cache";
import { DeviceGate } from "./devices";

export class SubscriptionService {
  /** Held back comes with the metrics, stored per cluster with each report (reported-health.ts). */
  readonly balancer = new Balancer(undefined, { marksHeldBack: false });
  private readonly snapshot: SnapshotCache;
  private readonly choices: StoredChoices;
  private readonly answers: Answerer;
  private unsubscribe: (() => void) | null = null;

  constructor(db: Db, clock: () => number = Date.now) {
    this.snapshot = new SnapshotCache(db, clock, {
      onReport: (m) => this.balancer.observeReport(m.serverId, { users: m.usersOnline, trafficBps: m.trafficBps, atMs: m.reportedAt.getTime() }),
      // Decisions do not depend on a subscriber's fields; their headers and bodies may.
      onSubscribers: (byId, gone) => (gone ? this.answers.forget(gone) : this.answers.keepOnly(byId)),
      alongside: () => this.choices.readSetIfUnknown(),
    });
    this.choices = new StoredChoices(db, clock, () => this.snapshot.topology);
    this.answers = new Answerer(this.snapshot, this.choices, this.balancer, clock, new DeviceGate(db, clock));
  }

  start(): void {
    this.unsubscribe = onChange((e) => this.onChange(e));
    this.choices.start();
    this.snapshot.registerGauges();
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    await this.choices.stop();
  }

  private onChange(e: ChangeEvent): void {
    if (e.kind === "assignments") {
      // Another instance stored new choices: answer those users from the database again,
      // so every instance keeps giving a user the same inbound.
      if (e.origin === instanceId()) return;
      this.choices.storedElsewhere(e.subscriberIds);
      this.answers.forget(e.subscriberIds);
      return;
    }
    // A topology change may move inbounds other instances assigned: re-read on next use.
    if (e.kind === "topology" || e.kind === "settings") this.choices.forgetCached();
    this.snapshot.changed(e.kind, e.subscriberIds);
  }

  /** True while the last reload failed: answers come from the last good snapshot. */
  get stale(): boolean {
    return this.snapshot.stale;
  }

  /** Resolves when the subscribers' traffic totals being re-read (in the background) are in. */
  trafficSettled(): Promise<void> {
    return this.snapshot.trafficSettled();
  }

  /** Brings the snapshot up to date if anything changed (one reload at a time). */
  refresh(): Promise<void> {
    return this.snapshot.refresh();
  }

  /** GET /sub/<token>[?format=...]; without ?format the User-Agent picks (user-agent.ts). */
  answer(token: string, formatParam: string | null, ctx?: AnswerContext): Promise<SubscriptionAnswer> {
    return this.answers.answer(token, formatParam, ctx);
  }

  /**
   * GET <path> that may be an imported subscriber's old subscription URL (server/import/legacy.ts):
   * answered exactly as /sub/<their token>, or as an unknown token when it is not one.
   * `token` is the last segment, tried as a Routeboard token first (a /sub/ path is both).
   */
  async answerPath(host: string | null, path: string, token: string, formatParam: string | null, ctx?: AnswerContext): Promise<SubscriptionAnswer> {
    await this.snapshot.refresh();
    if (!this.snapshot.subscriberByToken(token) && this.snapshot.legacy.mayServe(host, path)) {
      const id = this.snapshot.legacy.resolve(host, path);
      const sub = id ? this.snapshot.subscriberById(id) : undefined;
      if (sub) token = sub.token;
    }
    return this.answers.answer(token, formatParam, ctx);
  }

  /** Subscribers changed since the old URLs were last read: refresh() before mayServeLegacy. */
  get legacyMayBeStale(): boolean {
    return this.snapshot.legacyMayBeStale;
  }

  /** Whether `path` on `host` may be an old subscription URL (the router asks before the dashboard). */
  mayServeLegacy(host: string | null, path: string): boolean {
    return this.snapshot.legacy.mayServe(host, path);
  }

  /** What a subscriber's app gets right now, with every candidate's score: a dry run that records nothing. */
  explain(subscriberId: string): Promise<Explanation | null> {
    return this.answers.explain(subscriberId);
  }

  /** Stores changed assignments now (one row per subscriber). */
  flushAssignments(): Promise<void> {
    return this.choices.flush();
  }
}

const KEY = Symbol.for("routeboard.subscriptions");
type G = typeof globalThis & { [KEY]?: SubscriptionService };

/** The process-wide service (one snapshot per instance). */
export function subscriptionService(): SubscriptionService | undefined {
  return (globalThis as G)[KEY];
}
export function setSubscriptionService(s: SubscriptionService | undefined): void {
  (globalThis as G)[KEY] = s;
}
