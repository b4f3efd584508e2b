/**
 * The config journal behind GET /api/agent/config?delta=1 (issue 23): how a cluster's users
 * changed from one config build to the next, in config_user_changes, so that an agent one or
 * a few versions behind gets only the users that changed, from any panel instance.
 *
 * - Every build whose users differ from the instance's previous build records the exact
 *   difference between the two users hashes (an edge). The content is a function of the two
 *   hashes, so instances that saw different builds write edges that agree; an agent's `from`
 *   is reached through any of them.
 * - A delta is answered when the server's config at `from` differs from today's only in its
 *   users: `from` must be this server's current rest hashed with a users hash the journal
 *   knows (an inbound or any other change in between makes every such hash miss), and a
 *   chain of edges must lead from that users hash to today's. Otherwise: the full config.
 * - The merged delta is the exact difference of the two users sets (added then removed is
 *   nothing), whatever chain was followed: two instances answer the same bytes.
 * - Bounded: the newest JOURNAL_KEEP_ROWS rows per cluster, none older than JOURNAL_KEEP_MS;
 *   a change of more than MAX_JOURNALED_USERS users is not recorded (a delta that large
 *   saves little over the full config), so agents behind it get the full config.
 */
import "server-only";
import { and, desc, eq, inArray, sql } from "drizzle-orm";
import type { DbOrTx } from "@/db/client";
import { configUserChanges } from "@/db/schema";
import { sameAgentUser, type AgentUser } from "@/core/agent-wire";
import { byEmail } from "@/core/config-version";
import type { BuiltConfig, ClusterConfigs } from "./config";
import { DeflatedTail } from "./shared-gzip";

export const JOURNAL_KEEP_ROWS = 256;
export const JOURNAL_KEEP_MS = 24 * 3600 * 1000;
export const MAX_JOURNALED_USERS = 2000;
/** `from` values remembered per build (an agent sending made-up versions cannot grow it further). */
const MAX_CACHED_FROMS = 10_000;

export interface UserChange {
  /** Users who join or whose id changed (the new record), by email. */
  added: AgentUser[];
  /** Users who leave or whose id changed (the old record), by email. */
  removed: AgentUser[];
}

/** Records the change between two builds' users and prunes the cluster's old rows. */
export async function recordUserChange(db: DbOrTx, clusterId: string, fromUsers: string, toUsers: string, change: UserChange): Promise<void> {
  if (fromUsers === toUsers || change.added.length + change.removed.length > MAX_JOURNALED_USERS) return;
  await db
    .insert(configUserChanges)
    .values({ clusterId, fromUsers, toUsers, added: change.added, removed: change.removed })
    .onConflictDoUpdate({ target: [configUserChanges.clusterId, configUserChanges.fromUsers, configUserChanges.toUsers], set: { recordedAt: sql`now()` } });
  await db.execute(sql`
    delete from ${configUserChanges}
    where ${configUserChanges.clusterId} = ${clusterId}
      and (${configUserChanges.recordedAt} < now() - make_interval(secs => ${JOURNAL_KEEP_MS / 1000})
        or ${configUserChanges.id} not in (
          select id from ${configUserChanges} where ${configUserChanges.clusterId} = ${clusterId}
          order by ${configUserChanges.recordedAt} desc, ${configUserChanges.id} desc limit ${JOURNAL_KEEP_ROWS}))`);
}

interface Edge {
  id: number;
  fromUsers: string;
  toUsers: string;
}

/** The exact change along a chain of steps: per email, its record before the first against after the last. */
export function mergeChanges(steps: readonly UserChange[]): UserChange {
  // Per email: its record before the first step (null = absent) and after the last.
  const touched = new Map<string, { before: AgentUser | null; after: AgentUser | null }>();
  for (const step of steps) {
    for (const r of step.removed) {
      const t = touched.get(r.email);
      if (t) t.after = null;
      else touched.set(r.email, { before: r, after: null });
    }
    for (const a of step.added) {
      const t = touched.get(a.email);
      if (t) t.after = a;
      else touched.set(a.email, { before: null, after: a });
    }
  }
  const added: AgentUser[] = [];
  const removed: AgentUser[] = [];
  for (const { before, after } of touched.values()) {
    if (before && after && sameAgentUser(before, after)) continue;
    if (before) removed.push(before);
    if (after) added.push(after);
  }
  return { added: added.sort(byEmail), removed: removed.sort(byEmail) };
}

/** A delta's first part, this server's own: `{"kind":"delta","from":…,"version":…`. */
function deltaHead(from: string, version: string): string {
  return `{"kind":"delta","from":${JSON.stringify(from)},"version":${JSON.stringify(version)}`;
}

/** A delta's last part, the same for every server behind the same change: its users, in the full config's shape. */
function deltaTail(change: { addedJson: string; removedJson: string }): string {
  return `,"usersAdded":${change.addedJson},"usersRemoved":${change.removedJson}}`;
}

/**
 * A delta answer in its two parts: the JSON is head + tail.text. Every server one change
 * behind shares the tail, compressed once (config-http.ts sends it with shared-gzip.ts).
 */
export interface DeltaAnswer {
  head: string;
  tail: DeflatedTail;
}

/** The JSON of a delta answer. */
export function deltaJson(answer: DeltaAnswer): string {
  return answer.head + answer.tail.text;
}

interface ReadyChange {
  tail: DeflatedTail;
}

/** One cluster's journal as one build saw it: answers deltas to that build's users. */
export class ClusterJournal {
  private readonly bySource = new Map<string, Edge[]>();
  /** Users hashes the journal knows, newest first (the likeliest `from` comes first). */
  private readonly hashes: string[] = [];
  private readonly fromCache = new Map<string, string | null>();
  private readonly changeCache = new Map<string, Promise<ReadyChange | null>>();

  constructor(
    private readonly db: DbOrTx,
    private readonly cluster: ClusterConfigs,
    edgesNewestFirst: readonly Edge[],
  ) {
    const seen = new Set<string>();
    for (const e of edgesNewestFirst) {
      const list = this.bySource.get(e.fromUsers) ?? [];
      list.push(e);
      this.bySource.set(e.fromUsers, list);
      for (const h of [e.toUsers, e.fromUsers]) {
        if (!seen.has(h)) {
          seen.add(h);
          this.hashes.push(h);
        }
      }
    }
  }

  static async load(db: DbOrTx, cluster: ClusterConfigs): Promise<ClusterJournal> {
    const edges = await db
      .select({ id: configUserChanges.id, fromUsers: configUserChanges.fromUsers, toUsers: configUserChanges.toUsers })
      .from(configUserChanges)
      .where(eq(configUserChanges.clusterId, cluster.clusterId))
      .orderBy(desc(configUserChanges.recordedAt), desc(configUserChanges.id))
      .limit(JOURNAL_KEEP_ROWS);
    return new ClusterJournal(db, cluster, edges);
  }

  /** The users hash of this server's config at version `from`, if only users differ since. */
  usersHashAt(serverId: string, built: BuiltConfig, from: string): string | null {
    const key = `${serverId} ${from}`;
    const hit = this.fromCache.get(key);
    if (hit !== undefined) return hit;
    const found = this.hashes.find((h) => built.versionWith(h) === from) ?? null;
    if (this.fromCache.size < MAX_CACHED_FROMS) this.fromCache.set(key, found);
    return found;
  }

  /** The delta from `from` to this build for one server, or null (then the full config). */
  async deltaFor(serverId: string, built: BuiltConfig, from: string): Promise<DeltaAnswer | null> {
    const fromUsers = this.usersHashAt(serverId, built, from);
    if (fromUsers === null) return null;
    let change = this.changeCache.get(fromUsers);
    if (!change) {
      change = this.changeFrom(fromUsers);
      this.changeCache.set(fromUsers, change);
      // A failed read is not kept: the next agent asking tries again.
      change.catch(() => this.changeCache.delete(fromUsers));
    }
    const ready = await change;
    return ready && { head: deltaHead(from, built.version), tail: ready.tail };
  }

  /** The shortest chain of edges from `fromUsers` to this build's users, merged. */
  private async changeFrom(fromUsers: string): Promise<ReadyChange | null> {
    const target = this.cluster.usersHash;
    const cameFrom = new Map<string, Edge | null>([[fromUsers, null]]);
    let frontier = [fromUsers];
    while (frontier.length > 0 && !cameFrom.has(target)) {
      const next: string[] = [];
      for (const h of frontier) {
        for (const e of this.bySource.get(h) ?? []) {
          if (cameFrom.has(e.toUsers)) continue;
          cameFrom.set(e.toUsers, e);
          next.push(e.toUsers);
        }
      }
      frontier = next;
    }
    if (!cameFrom.has(target)) return null;
    const path: Edge[] = [];
    for (let e = cameFrom.get(target); e; e = cameFrom.get(e.fromUsers)) path.unshift(e);
    const rows = await this.db
      .select({ id: configUserChanges.id, added: configUserChanges.added, removed: configUserChanges.removed })
      .from(configUserChanges)
      .where(and(eq(configUserChanges.clusterId, this.cluster.clusterId), inArray(configUserChanges.id, path.map((e) => e.id))));
    const byId = new Map(rows.map((r) => [r.id, r]));
    // A row pruned since the index was read breaks the chain: the full config then.
    if (path.some((e) => !byId.has(e.id))) return null;
    const merged = mergeChanges(path.map((e) => byId.get(e.id)!));
    // A delta as large as half the users is no cheaper to send or apply than the whole list.
    if (merged.added.length + merged.removed.length > Math.max(MAX_JOURNALED_USERS, this.cluster.userList.length / 2)) return null;
    // Rebuilt in the config's key order: jsonb hands keys back in its own order.
    const addedJson = JSON.stringify(merged.added.map((u) => (u.password ? { id: u.id, email: u.email, password: u.password } : { id: u.id, email: u.email })));
    return { tail: new DeflatedTail(deltaTail({ addedJson, removedJson: JSON.stringify(merged.removed.map((u) => u.email)) })) };
  }
}
