/**
 * Config cache and long-poll waiters for GET /api/agent/config.
 *
 * - One build per cluster per change: "topology", "subscribers" and "settings" events drop
 *   the cluster's build; the next request (or the wake-up below) rebuilds it once for all.
 *   A "subscribers" event that names its few subscribers patches the build instead: only
 *   their rows are read again (patchClusterConfigs), which at a million subscribers is the
 *   difference between milliseconds and seconds per change (issue 23, point 4).
 * - Waiting agents are woken when the change bus says their cluster changed: at most once
 *   per WAKE_SPACING_MS per cluster (a burst of edits costs one rebuild and one answer per
 *   agent, not one per edit), never later than WAKE_SPACING_MS + WAKE_DEBOUNCE_MS after it.
 * - Subscribers who expire leave the config on their own: a timer wakes the cluster at the
 *   soonest expiry of an allowed subscriber.
 * - One waiter per server (a newer poll answers the older with 304), and MAX_WAITERS overall.
 * - close() answers every waiter with 304 so shutdown does not hang on open long-polls.
 * - Each build whose users differ from this instance's previous build is journaled before
 *   anyone is answered from it (config-journal.ts), so deltas to it can be answered.
 */
import "server-only";
import type { Db } from "@/db/client";
import { onChange, type ChangeEvent } from "@/server/bus";
import { MAX_NAMED_SUBSCRIBERS } from "@/server/changes";
import { logger } from "@/server/logger";
import { foreignKeyViolation } from "@/server/db-errors";
import { gauge } from "@/server/metrics";
import { buildClusterConfigs, patchClusterConfigs, yieldToEvents, type BuiltConfig, type ClusterConfigs } from "./config";
import { ClusterJournal, deltaJson, recordUserChange, type DeltaAnswer } from "./config-journal";
import type { UserList } from "./user-list";
import { diffSortedUsers } from "@/core/config-version";

export const WAKE_DEBOUNCE_MS = 50;
export const WAKE_SPACING_MS = 500;
export const MAX_WAITERS = 50_000;
const MAX_TIMER_MS = 2 ** 31 - 1;

export type WaitResult = { kind: "changed"; cluster: ClusterConfigs; built: BuiltConfig } | { kind: "timeout" } | { kind: "gone" };

interface Waiter {
  serverId: string;
  clusterId: string;
  version: string;
  done: (r: WaitResult) => void;
  timer: ReturnType<typeof setTimeout>;
}

interface Entry {
  promise: Promise<ClusterConfigs>;
  expiryTimer?: ReturnType<typeof setTimeout>;
  /** A patch waiting for the build before it: the subscribers it will re-read (more may join until it starts). */
  patch?: { ids: Set<string>; started: boolean };
}

/** Waiters answered per turn of the event loop when a change wakes a cluster's agents (each about 0.2 ms). */
const WAKE_BATCH = 100;

export class ConfigHub {
  private cache = new Map<string, Entry>();
  private waitersByServer = new Map<string, Waiter>();
  private waitersByCluster = new Map<string, Set<Waiter>>();
  private wakeTimers = new Map<string, ReturnType<typeof setTimeout>>();
  private lastWakeMs = new Map<string, number>();
  private off: (() => void) | null = null;
  private closed = false;
  /** The users of this instance's newest build per cluster: the start of the next journal row. */
  private lastUsers = new Map<string, { hash: string; users: UserList }>();
  private journals = new WeakMap<ClusterConfigs, Promise<ClusterJournal | null>>();
  /** Per cluster whose build was dropped by subscriber changes alone: that build and who changed. */
  private pendingPatches = new Map<string, { base: Promise<ClusterConfigs>; ids: Set<string> }>();
  /** Per cluster, the newest build completed, still there after a change dropped it from the cache. */
  private newest = new Map<string, { seq: number; cluster: ClusterConfigs }>();
  private buildSeq = 0;
  /** Builds and patches made (a burst of edits costs one). */
  builds = 0;
  /** Of those, patches for named subscribers. */
  patches = 0;

  constructor(
    private readonly db: () => Promise<Db>,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    this.off = onChange((e) => this.onChange(e));
  }

  get waiting(): number {
    return this.waitersByServer.size;
  }

  private onChange(e: ChangeEvent): void {
    if (e.kind !== "topology" && e.kind !== "subscribers" && e.kind !== "settings") return;
    if (e.clusterId === null) {
      for (const id of new Set([...this.cache.keys(), ...this.waitersByCluster.keys()])) this.invalidate(id);
    } else this.invalidate(e.clusterId, e.kind === "subscribers" && e.subscriberIds?.length ? e.subscriberIds : undefined);
  }

  /**
   * Drops the cluster's build and schedules waking its waiters. With `subscriberIds` (the only
   * subscribers that changed) the next get() patches the dropped build for them instead of
   * building anew; the ids of a burst of edits are gathered into one patch.
   */
  invalidate(clusterId: string, subscriberIds?: readonly string[]): void {
    const entry = this.cache.get(clusterId);
    // A patch not yet started takes these subscribers too: however fast edits come, at most
    // one patch runs and one waits (a queue of patches, each hashing every user, fell behind
    // for good at a million subscribers).
    const waiting = entry?.patch;
    if (subscriberIds && waiting && !waiting.started && waiting.ids.size + subscriberIds.length <= MAX_NAMED_SUBSCRIBERS) {
      for (const id of subscriberIds) waiting.ids.add(id);
      this.scheduleWake(clusterId);
      return;
    }
    if (entry?.expiryTimer) clearTimeout(entry.expiryTimer);
    this.cache.delete(clusterId);
    const pending = this.pendingPatches.get(clusterId) ?? (entry ? { base: entry.promise, ids: new Set<string>() } : undefined);
    if (subscriberIds && pending && pending.ids.size + subscriberIds.length <= MAX_NAMED_SUBSCRIBERS) {
      for (const id of subscriberIds) pending.ids.add(id);
      this.pendingPatches.set(clusterId, pending);
    } else this.pendingPatches.delete(clusterId);
    this.scheduleWake(clusterId);
  }

  private scheduleWake(clusterId: string): void {
    if (!this.waitersByCluster.get(clusterId)?.size || this.wakeTimers.has(clusterId)) return;
    const since = this.now() - (this.lastWakeMs.get(clusterId) ?? 0);
    const delay = Math.max(WAKE_DEBOUNCE_MS, WAKE_SPACING_MS - since);
    const t = setTimeout(() => {
      this.wakeTimers.delete(clusterId);
      this.lastWakeMs.set(clusterId, this.now());
      void this.wake(clusterId);
    }, delay);
    t.unref?.();
    this.wakeTimers.set(clusterId, t);
  }

  /** The cluster's configs, built at most once per change. */
  get(clusterId: string): Promise<ClusterConfigs> {
    const hit = this.cache.get(clusterId);
    if (hit) return hit.promise;
    const patch = this.pendingPatches.get(clusterId);
    this.pendingPatches.delete(clusterId);
    // A failed base fails the patch too: the entry is dropped and the next get() builds anew.
    if (patch) {
      this.patches++;
      const waiting = { ids: patch.ids, started: false };
      const build = async (db: Db) => {
        const base = await patch.base;
        waiting.started = true;
        return patchClusterConfigs(db, base, [...waiting.ids], this.now());
      };
      return this.track(clusterId, build, waiting);
    }
    return this.track(clusterId, (db) => buildClusterConfigs(db, clusterId, this.now()));
  }

  /**
   * The newest completed build of the cluster when a change has dropped it and no other build
   * is cached or under way: an agent that runs it waits for the wake-up that brings the change
   * (wait() schedules one) instead of having the cluster built at once (config-http.ts).
   */
  droppedBuild(clusterId: string): ClusterConfigs | undefined {
    return this.cache.has(clusterId) ? undefined : this.newest.get(clusterId)?.cluster;
  }

  /** Caches `build` as the cluster's configs, journals their users and times the next expiry. */
  private track(clusterId: string, build: (db: Db) => Promise<ClusterConfigs>, patch?: Entry["patch"]): Promise<ClusterConfigs> {
    const entry = {} as Entry;
    if (patch) entry.patch = patch;
    const seq = ++this.buildSeq;
    entry.promise = (async () => {
        this.builds++;
        const db = await this.db();
        const built = await build(db);
        await this.journalUsers(db, built);
        if ((this.newest.get(clusterId)?.seq ?? 0) < seq) this.newest.set(clusterId, { seq, cluster: built });
        if (built.nextExpiryMs !== null && this.cache.get(clusterId) === entry) {
          const ms = Math.min(MAX_TIMER_MS, Math.max(0, built.nextExpiryMs - this.now()) + 1);
          entry.expiryTimer = setTimeout(() => this.invalidate(clusterId), ms);
          entry.expiryTimer.unref?.();
        }
        return built;
      })();
    this.cache.set(clusterId, entry);
    // A failed build is not kept: the next request tries again.
    entry.promise.catch(() => {
      if (this.cache.get(clusterId) === entry) this.cache.delete(clusterId);
    });
    return entry.promise;
  }

  /** Records how the users changed since this instance's previous build of the cluster. */
  private async journalUsers(db: Db, built: ClusterConfigs): Promise<void> {
    const previous = this.lastUsers.get(built.clusterId);
    this.lastUsers.set(built.clusterId, { hash: built.usersHash, users: built.userList });
    if (!previous || previous.hash === built.usersHash) return;
    try {
      // A patch of this instance's previous build knows its change; anything else is diffed (a walk over both lists).
      const change = built.patchedFrom?.fromUsersHash === previous.hash ? built.patchedFrom : diffSortedUsers(previous.users.toArray(), built.userList.toArray());
      await recordUserChange(db, built.clusterId, previous.hash, built.usersHash, change);
    } catch (err) {
      // The cluster was deleted meanwhile: there is nobody left to hand a delta to.
      if (foreignKeyViolation(err)) return;
      // Agents behind this change get the full config instead of a delta; nothing else is lost.
      logger().warn({ err, clusterId: built.clusterId }, "could not journal a config's user change: agents get the full config");
    }
  }

  /** The JSON of deltaAnswer (tests and tools). */
  async deltaBody(cluster: ClusterConfigs, serverId: string, built: BuiltConfig, from: string): Promise<string | null> {
    const answer = await this.deltaAnswer(cluster, serverId, built, from);
    return answer && deltaJson(answer);
  }

  /**
   * The delta that turns this server's config at `from` into `built`, or null when the
   * journal cannot give one (then the full config is the answer).
   */
  async deltaAnswer(cluster: ClusterConfigs, serverId: string, built: BuiltConfig, from: string): Promise<DeltaAnswer | null> {
    let journal = this.journals.get(cluster);
    if (!journal) {
      journal = this.db()
        .then((db) => ClusterJournal.load(db, cluster))
        .catch((err: unknown) => {
          // Not kept: the next agent asking reads it again.
          this.journals.delete(cluster);
          logger().warn({ err, clusterId: cluster.clusterId }, "could not read the config journal: agents get the full config");
          return null;
        });
      this.journals.set(cluster, journal);
    }
    const j = await journal;
    if (!j) return null;
    try {
      return await j.deltaFor(serverId, built, from);
    } catch (err) {
      logger().warn({ err, clusterId: cluster.clusterId }, "could not read the config journal: agents get the full config");
      return null;
    }
  }

  private async wake(clusterId: string): Promise<void> {
    const waiters = this.waitersByCluster.get(clusterId);
    if (!waiters?.size) return;
    let cluster: ClusterConfigs;
    try {
      cluster = await this.get(clusterId);
    } catch {
      return; // database away: waiters time out with 304 and poll again
    }
    let answered = 0;
    for (const w of [...waiters]) {
      // Gone meanwhile (timed out, aborted, or replaced by the agent's next poll).
      if (!waiters.has(w)) continue;
      const built = cluster.byServer.get(w.serverId);
      if (!built) this.finish(w, { kind: "gone" });
      else if (built.version !== w.version) this.finish(w, { kind: "changed", cluster, built });
      else continue;
      // Each answer is written (and compressed) as soon as it is due: a thousand in one turn
      // of the event loop held every other request, /api/health among them, for that long.
      if (++answered % WAKE_BATCH === 0) await yieldToEvents();
    }
  }

  private finish(w: Waiter, r: WaitResult): void {
    clearTimeout(w.timer);
    if (this.waitersByServer.get(w.serverId) === w) this.waitersByServer.delete(w.serverId);
    const set = this.waitersByCluster.get(w.clusterId);
    set?.delete(w);
    if (set && set.size === 0) this.waitersByCluster.delete(w.clusterId);
    w.done(r);
  }

  /**
   * Waits until the server's config differs from `version` (→ "changed"), `waitMs` passes
   * (→ "timeout"), or the caller cancels (→ "timeout"): `onCancel` receives the function that
   * does (a plain callback: an AbortController per poll, two thousand a second at a thousand
   * agents, was a fifth of what each poll left for the garbage collector). Null when too many
   * agents wait already.
   */
  wait(clusterId: string, serverId: string, version: string, waitMs: number, onCancel?: (cancel: () => void) => void): Promise<WaitResult> | null {
    if (this.closed) return Promise.resolve({ kind: "timeout" });
    const previous = this.waitersByServer.get(serverId);
    if (previous) this.finish(previous, { kind: "timeout" });
    if (this.waitersByServer.size >= MAX_WAITERS) return null;
    return new Promise<WaitResult>((resolve) => {
      const w: Waiter = {
        serverId,
        clusterId,
        version,
        done: resolve,
        timer: setTimeout(() => this.finish(w, { kind: "timeout" }), waitMs),
      };
      w.timer.unref?.();
      this.waitersByServer.set(serverId, w);
      let set = this.waitersByCluster.get(clusterId);
      if (!set) this.waitersByCluster.set(clusterId, (set = new Set()));
      set.add(w);
      // Finishing a waiter again is harmless: it is in no map by then, and its promise is settled.
      onCancel?.(() => this.finish(w, { kind: "timeout" }));
      // A change between the caller's read and this registration must not be missed.
      if (!this.cache.has(clusterId)) this.scheduleWake(clusterId);
    });
  }

  /** Answers every waiter (304) and stops listening. */
  close(): void {
    this.closed = true;
    this.off?.();
    this.off = null;
    for (const w of [...this.waitersByServer.values()]) this.finish(w, { kind: "timeout" });
    for (const t of this.wakeTimers.values()) clearTimeout(t);
    this.wakeTimers.clear();
    for (const e of this.cache.values()) if (e.expiryTimer) clearTimeout(e.expiryTimer);
    this.cache.clear();
    this.pendingPatches.clear();
    this.lastUsers.clear();
    this.newest.clear();
  }
}

const KEY = Symbol.for("routeboard.configHub");
type G = typeof globalThis & { [KEY]?: ConfigHub };

/** The process-wide hub, started on first use. */
export function configHub(db: () => Promise<Db>): ConfigHub {
  const g = globalThis as G;
  if (!g[KEY]) {
    const hub = new ConfigHub(db);
    hub.start();
    g[KEY] = hub;
    gauge("routeboard_agent_config_waiters", "Agents waiting in a GET /api/agent/config long-poll", () => g[KEY]?.waiting ?? 0);
  }
  return g[KEY];
}

export function closeConfigHub(): void {
  const g = globalThis as G;
  g[KEY]?.close();
  g[KEY] = undefined;
}
