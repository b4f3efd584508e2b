/**
 * A cluster's agent users, sorted by email (code units, as byEmail), kept in chunks of about
 * CHUNK users. Immutable: a change of a few subscribers copies the chunks that hold them and
 * the list of chunks (a few hundred pointers at a million users), never the million pointers
 * of one flat array. On a panel holding a million users, copying that array on every change
 * took 100–400 ms of the event loop under garbage collection, twice a second, and
 * /api/health and /sub waited behind it.
 */
import type { AgentUser } from "@/core/agent-wire";

/** Users per chunk when a list is cut; a chunk grown past twice this is cut again. */
export const USER_CHUNK = 2048;

export class UserList {
  private constructor(
    private readonly chunks: readonly (readonly AgentUser[])[],
    /** The first email of each chunk (its key in chunkOf). */
    private readonly firsts: readonly string[],
    readonly length: number,
  ) {}

  /** A list of users already sorted by email. */
  static of(sorted: readonly AgentUser[]): UserList {
    const chunks: AgentUser[][] = [];
    for (let k = 0; k < sorted.length; k += USER_CHUNK) chunks.push(sorted.slice(k, k + USER_CHUNK));
    return UserList.fromChunks(chunks);
  }

  private static fromChunks(chunks: readonly (readonly AgentUser[])[]): UserList {
    const kept = chunks.filter((c) => c.length > 0);
    let length = 0;
    for (const c of kept) length += c.length;
    return new UserList(
      kept,
      kept.map((c) => c[0]!.email),
      length,
    );
  }

  /** The chunk that holds `email`, or where it would go: the last whose first email is not after it (0 before all). */
  private chunkOf(email: string): number {
    let lo = 0;
    let hi = this.firsts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.firsts[mid]! <= email) lo = mid + 1;
      else hi = mid;
    }
    return Math.max(0, lo - 1);
  }

  /** The user with this email, if any. */
  find(email: string): AgentUser | undefined {
    const chunk = this.chunks[this.chunkOf(email)] ?? [];
    const u = chunk[positionOf(chunk, email)];
    return u?.email === email ? u : undefined;
  }

  *[Symbol.iterator](): Iterator<AgentUser> {
    for (const c of this.chunks) yield* c;
  }

  /** Users from position `from` up to (not including) `to`, as an array. */
  slice(from: number, to: number = this.length): AgentUser[] {
    const out: AgentUser[] = [];
    let offset = 0;
    for (const c of this.chunks) {
      if (offset >= to) break;
      const end = offset + c.length;
      if (end > from) out.push(...c.slice(Math.max(0, from - offset), Math.min(c.length, to - offset)));
      offset = end;
    }
    return out;
  }

  /** Every user in one array (tests, tools, and the rare paths that diff whole lists). */
  toArray(): AgentUser[] {
    return ([] as AgentUser[]).concat(...this.chunks);
  }

  /**
   * The list without the users of `leaving` (emails) and with `joining` (sorted by email; one
   * whose email is present replaces that user). Only the chunks these emails fall in are copied.
   */
  replaced(leaving: Iterable<string>, joining: readonly AgentUser[]): UserList {
    const byChunk = new Map<number, { leaving: string[]; joining: AgentUser[] }>();
    const at = (email: string) => {
      const k = this.chunkOf(email);
      let e = byChunk.get(k);
      if (!e) byChunk.set(k, (e = { leaving: [], joining: [] }));
      return e;
    };
    for (const email of leaving) at(email).leaving.push(email);
    for (const u of joining) at(u.email).joining.push(u);
    if (byChunk.size === 0) return this;
    const chunks: (readonly AgentUser[])[] = this.chunks.slice();
    for (const [k, change] of byChunk) chunks[k] = replaceUsers(this.chunks[k] ?? [], change.leaving, change.joining);
    // A chunk that grew past twice the size is cut again, so a chunk copy stays small.
    return UserList.fromChunks(chunks.flatMap((c) => (c.length > 2 * USER_CHUNK ? UserList.of(c).chunks : [c])));
  }
}

/** Where `email` is, or would go, in users sorted by email (byEmail: code units). */
export function positionOf(users: readonly AgentUser[], email: string): number {
  let lo = 0;
  let hi = users.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (users[mid]!.email < email) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** `users` (sorted by email) without `leaving` and with `joining` (sorted), as a new array; the input is untouched. */
export function replaceUsers(users: readonly AgentUser[], leaving: Iterable<string>, joining: readonly AgentUser[]): AgentUser[] {
  const joiningByEmail = new Map(joining.map((u) => [u.email, u]));
  // Code-unit order, as byEmail: the positions found below only grow.
  const named = [...new Set([...leaving, ...joiningByEmail.keys()])].sort();
  const runs: (readonly AgentUser[])[] = [];
  let from = 0;
  for (const email of named) {
    const at = positionOf(users, email);
    runs.push(users.slice(from, at));
    const joined = joiningByEmail.get(email);
    if (joined) runs.push([joined]);
    from = users[at]?.email === email ? at + 1 : at;
  }
  runs.push(users.slice(from));
  return ([] as AgentUser[]).concat(...runs);
}
