/**
 * A cluster's agent users, sorted by email (code units, as byEmail), kept in chunks of about
 * CHUNK users. Immutable: a change of a few subscribers copies the chunks that hold them and
 * the list of chunks (a thousand pointers at a million users), never the million pointers
 * of one flat array. On a panel holding a million users, copying that array on every change
 * took 100–400 ms of the event loop under garbage collection, twice a second, and
 * /api/health and /sub waited behind it.
 *
 * A chunk keeps its users as their JSON text (what the config body carries), read back into
 * objects only where a change or a lookup needs them. As objects, a user cost the garbage
 * collector three objects to mark (the user and its two strings) on every full collection:
 * with the digest's buckets (core/config-version.ts) half of the panel's marking at a
 * million users, long enough for /api/health to wait behind it.
 */
import type { AgentUser } from "@/core/agent-wire";

/** Users per chunk when a list is cut (a chunk's text stays below V8's large-object size); a chunk grown past twice this is cut again. */
export const USER_CHUNK = 1024;

interface Chunk {
  /** JSON.stringify of the chunk's users, in email order. */
  readonly json: string;
  readonly length: number;
  /** Its first email (its key in chunkOf). */
  readonly first: string;
}

function chunkOfUsers(users: readonly AgentUser[]): Chunk {
  return { json: JSON.stringify(users), length: users.length, first: users[0]?.email ?? "" };
}

function usersOf(chunk: Chunk | undefined): AgentUser[] {
  return chunk ? (JSON.parse(chunk.json) as AgentUser[]) : [];
}

export class UserList {
  private constructor(
    private readonly chunks: readonly Chunk[],
    readonly length: number,
  ) {}

  /** A list of users already sorted by email. */
  static of(sorted: readonly AgentUser[]): UserList {
    const chunks: Chunk[] = [];
    for (let k = 0; k < sorted.length; k += USER_CHUNK) chunks.push(chunkOfUsers(sorted.slice(k, k + USER_CHUNK)));
    return UserList.fromChunks(chunks);
  }

  private static fromChunks(chunks: readonly Chunk[]): UserList {
    const kept = chunks.filter((c) => c.length > 0);
    let length = 0;
    for (const c of kept) length += c.length;
    return new UserList(kept, length);
  }

  /** The chunk that holds `email`, or where it would go: the last whose first email is not after it (0 before all). */
  private chunkOf(email: string): number {
    let lo = 0;
    let hi = this.chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.chunks[mid]!.first <= email) lo = mid + 1;
      else hi = mid;
    }
    return Math.max(0, lo - 1);
  }

  /** The user with this email, if any. */
  find(email: string): AgentUser | undefined {
    const chunk = usersOf(this.chunks[this.chunkOf(email)]);
    const u = chunk[positionOf(chunk, email)];
    return u?.email === email ? u : undefined;
  }

  *[Symbol.iterator](): Iterator<AgentUser> {
    for (const c of this.chunks) yield* usersOf(c);
  }

  /**
   * The users as JSON, in pieces of whole chunks of at least `minChars` characters each (the
   * last may be shorter): each piece is the text of a JSON array's elements without the
   * brackets, so that the pieces joined with "," are JSON.stringify of the whole list's
   * elements. Nothing is parsed: the config body is written from the chunks' own text.
   */
  *jsonPieces(minChars: number): Generator<string> {
    let piece = "";
    for (const c of this.chunks) {
      piece += (piece ? "," : "") + c.json.slice(1, -1);
      if (piece.length >= minChars) {
        yield piece;
        piece = "";
      }
    }
    if (piece) yield piece;
  }

  /** Users from position `from` up to (not including) `to`, as an array. */
  slice(from: number, to: number = this.length): AgentUser[] {
    const out: AgentUser[] = [];
    let offset = 0;
    for (const c of this.chunks) {
      if (offset >= to) break;
      const end = offset + c.length;
      if (end > from) out.push(...usersOf(c).slice(Math.max(0, from - offset), Math.min(c.length, to - offset)));
      offset = end;
    }
    return out;
  }

  /** Every user in one array (tests, tools, and the rare paths that diff whole lists). */
  toArray(): AgentUser[] {
    return ([] as AgentUser[]).concat(...this.chunks.map(usersOf));
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
    const chunks: Chunk[][] = this.chunks.map((c) => [c]);
    for (const [k, change] of byChunk) {
      const users = replaceUsers(usersOf(this.chunks[k]), change.leaving, change.joining);
      // A chunk that grew past twice the size is cut again, so a chunk copy stays small.
      chunks[k] = users.length > 2 * USER_CHUNK ? UserList.of(users).chunks.slice() : [chunkOfUsers(users)];
    }
    return UserList.fromChunks(chunks.flat());
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
