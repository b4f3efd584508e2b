/**
 * Subscribers' stored choices as an instance keeps them: read once and cached, new choices
 * kept in memory and written behind (every FLUSH_EVERY_MS, one row per subscriber), and the
 * other instances told, so every instance keeps giving a user the same inbound.
 *
 * Reads are batched: the choices asked for within one tick, or while a read is in flight,
 * go as one query. A subscriber known to have no stored row is not read at all (see
 * withStoredChoices). Choices not yet stored win over the database's.
 */
import type { Db } from "@/db/client";
import { publishChange } from "@/server/bus";
import { isDatabaseDown } from "@/server/db-errors";
import { logger } from "@/server/logger";
import { gauge } from "@/server/metrics";
import { choicesByRoute, loadAssignments, loadSubscribersWithChoices, storeAssignments, type InboundRoutes } from "./store";

const FLUSH_EVERY_MS = 200;

/** One subscriber's choices: routeId → inboundId. */
export type Choices = Map<string, string>;

export class StoredChoices {
  private readonly cache = new Map<string, Choices>();
  /**
   * Subscribers whose choices changed and are not yet stored, and the batch being stored:
   * subscriberId → all their choices, written as one row.
   */
  private pendingWrites = new Map<string, Choices>();
  private storing = new Map<string, Choices>();
  /**
   * Subscribers that have, or may have, a stored row; null while unknown. One not in it has
   * nothing stored, so their first fetch decides without a read. Read whole by readSetIfUnknown
   * (the first reload, and the next one after an "anyone's choices changed" event), then kept
   * up to date: every row this instance stores, and every one another instance names, is added.
   */
  private withStoredChoices: Set<string> | null = null;
  /** While the whole set is being read: who was stored or named meanwhile (the read may miss them). */
  private storedDuringRead: Set<string> | null = null;
  /** Bumped by an "anyone's choices changed" event: a whole-set read begun before it is dropped. */
  private storedSetGeneration = 0;
  /** The whole-set read in flight, if any. */
  private setRead: Promise<void> | null = null;
  /** Stored choices of the subscribers asked for within one tick: one query for all of them. */
  private loadBatch: { ids: Set<string>; done: Promise<Map<string, string[]>> } | null = null;
  /** The read of stored choices in flight, if any: the next batch is sent once it is back. */
  private loadRunning: Promise<void> | null = null;
  private flushTimer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;

  /** `topology` says which route each inbound is in now (null before the first snapshot). */
  constructor(
    private readonly db: Db,
    private readonly clock: () => number,
    private readonly topology: () => InboundRoutes | null,
  ) {}

  start(): void {
    this.flushTimer = setInterval(() => void this.flush(), FLUSH_EVERY_MS);
    this.flushTimer.unref();
    gauge("routeboard_assignment_writes_pending", "Subscribers whose changed assignments are not yet stored", () => this.pendingWrites.size + this.storing.size);
  }

  async stop(): Promise<void> {
    if (this.flushTimer) clearInterval(this.flushTimer);
    await this.flush();
  }

  /**
   * The subscriber's choices when they need no read: cached, not yet stored (those win over
   * the database), or none because nothing is stored for them. Undefined: read them.
   */
  known(subscriberId: string): Choices | undefined {
    const cached = this.cache.get(subscriberId);
    if (cached) return cached;
    const unsaved = this.pendingWrites.get(subscriberId) ?? this.storing.get(subscriberId);
    if (!unsaved && (this.withStoredChoices === null || this.withStoredChoices.has(subscriberId))) return undefined;
    const known = new Map(unsaved);
    this.cache.set(subscriberId, known);
    return known;
  }

  /** The subscriber's choices, read from the database when not known; none while it is away. */
  async of(subscriberId: string): Promise<Choices> {
    const known = this.known(subscriberId);
    if (known) return known;
    let stored: string[] = [];
    try {
      stored = (await this.loadStored(subscriberId)) ?? stored;
    } catch (err) {
      if (!isDatabaseDown(err)) throw err;
    }
    const meanwhile = this.cache.get(subscriberId);
    if (meanwhile) return meanwhile;
    // Choices not yet stored win over what the database has.
    const loaded = new Map(this.pendingWrites.get(subscriberId) ?? this.storing.get(subscriberId) ?? choicesByRoute(this.topology()!, stored));
    this.cache.set(subscriberId, loaded);
    return loaded;
  }

  /** The subscriber's choices (their whole map, as it will be when flushed) are to be stored. */
  queueWrite(subscriberId: string, choices: Choices): void {
    this.pendingWrites.set(subscriberId, choices);
  }

  /**
   * Another instance stored new choices for these subscribers (for anyone when not named):
   * they are read from the database again.
   */
  storedElsewhere(subscriberIds: readonly string[] | undefined): void {
    if (!subscriberIds) {
      this.cache.clear();
      this.withStoredChoices = null;
      this.storedSetGeneration++;
      return;
    }
    this.markStored(subscriberIds);
    for (const id of subscriberIds) this.cache.delete(id);
  }

  /** Inbounds may have moved between routes: cached choices are read again on next use. */
  forgetCached(): void {
    this.cache.clear();
  }

  /**
   * Reads the set of subscribers with a stored row while it is unknown (undefined when it is
   * known). Run beside a snapshot reload, whose failure its own failure is.
   */
  readSetIfUnknown(): Promise<void> | undefined {
    if (this.withStoredChoices !== null) return undefined;
    // One read at a time: a reload that failed early may leave one in flight.
    if (this.setRead) return this.setRead;
    const generation = this.storedSetGeneration;
    const meanwhile = (this.storedDuringRead = new Set());
    const read = loadSubscribersWithChoices(this.db)
      .then((withStored) => {
        if (this.storedSetGeneration !== generation) return;
        for (const id of meanwhile) withStored.add(id);
        this.withStoredChoices = withStored;
      })
      .finally(() => {
        if (this.storedDuringRead === meanwhile) this.storedDuringRead = null;
        if (this.setRead === read) this.setRead = null;
      });
    return (this.setRead = read);
  }

  /** These subscribers have a stored row now (stored here, or named by another instance). */
  private markStored(subscriberIds: Iterable<string>): void {
    for (const id of subscriberIds) {
      this.withStoredChoices?.add(id);
      this.storedDuringRead?.add(id);
    }
  }

  /**
   * One subscriber's stored choices, read together with the others asked for in the same
   * tick, or, while a read is in flight, with every one asked for until it is back: under a
   * burst of first fetches one read serves many requests instead of one read per tick.
   */
  private loadStored(subscriberId: string): Promise<string[] | undefined> {
    if (!this.loadBatch) {
      const ids = new Set<string>();
      const ready = this.loadRunning ?? new Promise<void>((resolve) => setImmediate(resolve));
      const done = ready.then(() => {
        if (this.loadBatch?.ids === ids) this.loadBatch = null;
        const read = loadAssignments(this.db, [...ids]);
        const running: Promise<void> = read
          .then(
            () => undefined,
            () => undefined,
          )
          .finally(() => {
            if (this.loadRunning === running) this.loadRunning = null;
          });
        this.loadRunning = running;
        return read;
      });
      this.loadBatch = { ids, done };
    }
    this.loadBatch.ids.add(subscriberId);
    return this.loadBatch.done.then((m) => m.get(subscriberId));
  }

  /** Stores changed choices (one row per subscriber); kept for the next try if the database is away. */
  async flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.pendingWrites.size === 0) return;
    const batch = this.pendingWrites;
    this.pendingWrites = new Map();
    this.storing = batch;
    // Before the write (its outcome may be unknown when the database goes away) and after it
    // (a whole-set read begun meanwhile may not see the rows).
    this.markStored(batch.keys());
    // Only inbounds still in the route they were chosen for (the row names no route).
    const topology = this.topology();
    const rows = new Map<string, string[]>();
    for (const [id, m] of batch) {
      const ids: string[] = [];
      for (const [routeId, inboundId] of m) if (topology?.inbounds.get(inboundId)?.routeId === routeId) ids.push(inboundId);
      rows.set(id, ids);
    }
    this.flushing = (async () => {
      try {
        await storeAssignments(this.db, rows, new Date(this.clock()));
        const who = [...batch.keys()];
        this.markStored(who);
        // Small batches name their subscribers; a storm says "anyone" (NOTIFY payloads are small).
        publishChange("assignments", null, who.length <= 100 ? who : undefined);
      } catch (err) {
        if (isDatabaseDown(err)) {
          // Retried on the next tick; choices made meanwhile win.
          for (const [id, m] of batch) if (!this.pendingWrites.has(id)) this.queueWrite(id, m);
          return;
        }
        // A subscriber deleted meanwhile (foreign key): store the others one by one.
        let dropped = 0;
        const stored: string[] = [];
        for (const [id, ids] of rows) {
          try {
            await storeAssignments(this.db, new Map([[id, ids]]), new Date(this.clock()));
            stored.push(id);
          } catch {
            dropped++;
          }
        }
        this.markStored(stored);
        if (stored.length > 0) publishChange("assignments", null, stored.length <= 100 ? stored : undefined);
        if (dropped > 0) logger().warn({ err: (err as Error).message, subscribers: dropped }, "dropped assignment writes");
      } finally {
        this.storing = new Map();
      }
    })().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }
}
