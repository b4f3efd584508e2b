/**
 * The version of an agent's config (its ETag) and the user deltas of GET /api/agent/config
 * (issue 23), shared by the panel, which computes them, and the agent, which checks that a
 * config it rebuilt from a delta hashes to the version the panel named.
 *
 * Two schemes, negotiated per request (GET /api/agent/config?scheme=2):
 * - 2: version = first 32 base64url characters of
 *   sha256("routeboard config version 2\n" + canonicalJson(rest) + "\n" + UsersDigest.hash),
 *   the users hashed per bucket (UsersDigest), so that a change of one user costs one bucket.
 * - 1 (agents from before scheme 2): the same without the first line, with
 *   usersHash = sha256(canonicalJson(users)), users sorted by email (code units).
 *
 * Node only (node:crypto): the panel and the agent import it, the browser never does.
 */
import { createHash, type Hash } from "node:crypto";
import { sameAgentUser, type AgentConfig, type AgentConfigDelta, type AgentUser } from "./agent-wire";

export type ConfigWithoutUsers = Omit<AgentConfig, "version" | "users">;

/** Canonical JSON: keys sorted, so equal configs hash alike whatever order they were built in. */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
    .join(",")}}`;
}

/** The users' order in every config: by email, in UTF-16 code units (not locale). */
export function byEmail(a: AgentUser, b: AgentUser): number {
  return a.email < b.email ? -1 : a.email > b.email ? 1 : 0;
}

/**
 * The exact difference of two users lists, both sorted by email (byEmail), in one walk: a
 * user whose id changed is removed and added again. The panel's delta journal and the
 * agent's live plan both use it. A user whose plan changed is removed and added again too.
 */
export function diffSortedUsers(before: readonly AgentUser[], after: readonly AgentUser[]): { added: AgentUser[]; removed: AgentUser[] } {
  const added: AgentUser[] = [];
  const removed: AgentUser[] = [];
  let i = 0;
  let j = 0;
  while (i < before.length || j < after.length) {
    const b = before[i];
    const a = after[j];
    const order = !b ? 1 : !a ? -1 : byEmail(b, a);
    if (order < 0) {
      removed.push(b!);
      i++;
    } else if (order > 0) {
      added.push(a!);
      j++;
    } else {
      if (!sameAgentUser(b!, a!)) {
        removed.push(b!);
        added.push(a!);
      }
      i++;
      j++;
    }
  }
  return { added, removed };
}

/** canonicalJson(u), written directly for the shape every user has (many times faster at a million). */
function userJson(u: AgentUser): string {
  let keys = 0;
  for (const _key in u) keys++;
  if (keys === 2 && typeof u.email === "string" && typeof u.id === "string") return `{"email":${JSON.stringify(u.email)},"id":${JSON.stringify(u.id)}}`;
  return canonicalJson(u);
}

// ---------------------------------------------------------------------------
// Scheme 2 (agents that send ?scheme=2): the users are hashed in buckets, so a change of a
// few users rehashes a few buckets, not a million users.
// ---------------------------------------------------------------------------

/** The version scheme agents check since issue 23's config deltas at scale (GET /api/agent/config?scheme=2). */
export const CONFIG_VERSION_SCHEME = 2;

/** How many buckets the users are spread over (a power of two): about 250 users each at a million. */
export const USER_BUCKETS = 4096;

/**
 * The bucket of a user: FNV-1a over the email's UTF-16 code units. Only the spread matters
 * here, not resistance to chosen inputs: emails that crowd one bucket make its rehash longer,
 * never two sets of users hash alike (that rests on sha256 alone, see UsersDigest).
 */
export function bucketOf(email: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < email.length; i++) h = Math.imul(h ^ email.charCodeAt(i), 0x01000193);
  return (h >>> 0) & (USER_BUCKETS - 1);
}

/**
 * Feeds canonicalJson(users) to `h` in pieces (a million users never become one string),
 * pausing (yield) after every `every` users. Both schemes hash users lists through it.
 */
function* feedUsers(h: Hash, users: readonly AgentUser[], every: number): Generator<void> {
  let piece = "[";
  for (let k = 0; k < users.length; k++) {
    piece += (k > 0 ? "," : "") + userJson(users[k]!);
    if (piece.length > 65_536) {
      h.update(piece);
      piece = "";
    }
    if ((k + 1) % every === 0) yield;
  }
  h.update(`${piece}]`);
}

/**
 * A bucket's users, in email order: as objects, shared with the users list that holds them
 * (the agent, which keeps its users as objects anyway), or as the canonical JSON text that is
 * hashed (the panel: one string where objects cost three per user, a user object and its two
 * strings, for the garbage collector to mark on every full collection; at a million users
 * that halved the time the panel's marking took).
 */
type Bucket = readonly AgentUser[] | string;

/** canonicalJson(users) of users already in email order: the text a bucket digest hashes. */
function bucketText(users: readonly AgentUser[]): string {
  let text = "[";
  for (let k = 0; k < users.length; k++) text += (k > 0 ? "," : "") + userJson(users[k]!);
  return `${text}]`;
}

function usersOfBucket(bucket: Bucket): readonly AgentUser[] {
  return typeof bucket === "string" ? (JSON.parse(bucket) as AgentUser[]) : bucket;
}

/** sha256 of canonicalJson(users), users already in email order, as raw bytes. */
function bucketDigest(bucket: Bucket): Buffer {
  const h = createHash("sha256");
  if (typeof bucket === "string") h.update(bucket);
  else for (const _ of feedUsers(h, bucket, Infinity));
  return h.digest();
}

const EMPTY_BUCKET = bucketDigest([]);

export interface UsersDigestOptions {
  /** Keep each bucket's users as its canonical JSON text, not as the users' objects (the panel). */
  packed?: boolean;
}

/**
 * The users part of a scheme-2 version, kept so that it can be updated per user.
 *
 * hash = base64url sha256(D[0] ‖ D[1] ‖ … ‖ D[4095]), where D[b] = sha256(canonicalJson of the
 * users whose bucketOf(email) is b, sorted by email) (32 bytes each).
 *
 * Collision safety: two different sets of users that gave the same hash would differ in some
 * bucket b. Either D differs somewhere, and the outer sha256 collides on inputs of one fixed
 * length; or every D is equal, and D[b] collides on two different canonical JSON texts (the
 * canonical JSON of a sorted list is one text per set of users). Both are sha256 collisions,
 * so the scheme is exactly as collision resistant as the one before it (sha256 over all the
 * users), with no new assumption: unlike a sum or XOR of per-user digests (a multiset hash,
 * which chosen users can make collide: XOR by linear algebra, a sum mod 2^256 by Wagner's
 * generalised birthday attack), there is nothing to solve for.
 *
 * Cost: building hashes every user once (about what the whole-list hash cost); patched() hashes
 * only the buckets the change touches (a few hundred users each at a million) and the 128 KB
 * of bucket digests.
 */
export class UsersDigest {
  private constructor(
    /** Each bucket's users in email order (shared with the digests patched from this one). */
    private readonly buckets: readonly Bucket[],
    /** D[0] ‖ … ‖ D[USER_BUCKETS - 1]. */
    private readonly digests: Buffer,
    readonly hash: string,
    private readonly packed: boolean,
  ) {}

  static of(users: readonly AgentUser[], options: UsersDigestOptions = {}): UsersDigest {
    const steps = UsersDigest.steps(users, Infinity, options.packed ?? false);
    for (let step = steps.next(); ; step = steps.next()) if (step.done) return step.value;
  }

  /** UsersDigest.of, awaiting `pause` after about every `every` users: a server digesting a million users still answers meanwhile. */
  static async inSteps(users: readonly AgentUser[], pause: () => Promise<void>, every = 50_000, options: UsersDigestOptions = {}): Promise<UsersDigest> {
    const steps = UsersDigest.steps(users, every, options.packed ?? false);
    for (let step = steps.next(); ; step = steps.next()) {
      if (step.done) return step.value;
      await pause();
    }
  }

  private static *steps(users: readonly AgentUser[], every: number, packed: boolean): Generator<void, UsersDigest> {
    const buckets: AgentUser[][] = Array.from({ length: USER_BUCKETS }, () => []);
    for (const u of users) buckets[bucketOf(u.email)]!.push(u);
    const kept: Bucket[] = packed ? new Array<Bucket>(USER_BUCKETS) : buckets;
    const digests = Buffer.allocUnsafe(USER_BUCKETS * 32);
    let sinceYield = 0;
    for (let b = 0; b < USER_BUCKETS; b++) {
      const bucket = buckets[b]!;
      // Users sorted by email stay sorted in their buckets; any other order is sorted here, so
      // the hash is the set's, whatever order the users came in.
      if (!isSortedByEmail(bucket)) bucket.sort(byEmail);
      const stored = packed ? bucketText(bucket) : bucket;
      kept[b] = stored;
      (bucket.length === 0 ? EMPTY_BUCKET : bucketDigest(stored)).copy(digests, b * 32);
      sinceYield += bucket.length;
      if (sinceYield >= every) {
        sinceYield = 0;
        yield;
      }
    }
    return new UsersDigest(kept, digests, outerHash(digests), packed);
  }

  /**
   * The digest of these users without the emails of `leaving`, with `joining` added (one that
   * has an email already present replaces it): what replaceUsers and applyUserDelta make of
   * the users list. Only the buckets touched are copied and hashed again.
   */
  patched(leaving: Iterable<string>, joining: readonly AgentUser[]): UsersDigest {
    const changes = new Map<number, { leaving: Set<string>; joining: AgentUser[] }>();
    const at = (email: string) => {
      const b = bucketOf(email);
      let c = changes.get(b);
      if (!c) changes.set(b, (c = { leaving: new Set(), joining: [] }));
      return c;
    };
    for (const email of leaving) at(email).leaving.add(email);
    for (const u of joining) {
      const c = at(u.email);
      c.leaving.add(u.email);
      c.joining.push(u);
    }
    if (changes.size === 0) return this;
    const buckets = this.buckets.slice();
    const digests = Buffer.from(this.digests);
    for (const [b, c] of changes) {
      const bucket = usersOfBucket(buckets[b]!).filter((u) => !c.leaving.has(u.email));
      bucket.push(...c.joining);
      bucket.sort(byEmail);
      const stored = this.packed ? bucketText(bucket) : bucket;
      buckets[b] = stored;
      (bucket.length === 0 ? EMPTY_BUCKET : bucketDigest(stored)).copy(digests, b * 32);
    }
    return new UsersDigest(buckets, digests, outerHash(digests), this.packed);
  }
}

function isSortedByEmail(users: readonly AgentUser[]): boolean {
  for (let k = 1; k < users.length; k++) if (users[k - 1]!.email > users[k]!.email) return false;
  return true;
}

function outerHash(digests: Buffer): string {
  return createHash("sha256").update(digests).digest("base64url");
}

/** Each users list's digest, kept while the list lives: the agent updates it per delta instead of digesting its million users again. */
const digestOfList = new WeakMap<readonly AgentUser[], UsersDigest>();

/** The digest of a users list (computed once per list; a list applyUserDelta made gets its base's, patched). */
export function usersDigestOf(users: readonly AgentUser[]): UsersDigest {
  let d = digestOfList.get(users);
  if (!d) digestOfList.set(users, (d = UsersDigest.of(users)));
  return d;
}

/**
 * The versions one server's config takes with any users: the rest is hashed once, each users
 * hash then costs one copy of that state (the panel tries many when matching a delta's `from`).
 * A fixed first line sets scheme 2 apart: a config's two versions differ (barring a sha256 collision).
 */
export function versionHasher(rest: ConfigWithoutUsers): (usersHashValue: string) => string {
  return hasherAfter("routeboard config version 2\n", rest);
}

/**
 * sha256(firstLine + canonicalJson(rest) + "\n" + usersHash), first 32 base64url characters:
 * both schemes' version, the rest hashed once and its state copied per users hash.
 */
function hasherAfter(firstLine: string, rest: ConfigWithoutUsers): (usersHashValue: string) => string {
  const prefix: Hash = createHash("sha256").update(firstLine).update(canonicalJson(rest)).update("\n");
  return (u) => prefix.copy().update(u).digest("base64url").slice(0, 32);
}

export function configVersion(rest: ConfigWithoutUsers, usersHashValue: string): string {
  return versionHasher(rest)(usersHashValue);
}

/** The scheme-2 version a whole config should carry (the agent's check after applying a delta). */
export function versionOfConfig(config: AgentConfig): string {
  const { version: _version, users, ...rest } = config;
  return configVersion(rest, usersDigestOf(users).hash);
}

// ---------------------------------------------------------------------------
// Scheme 1: what agents from before ?scheme=2 check. The panel computes it only when such an
// agent asks (it costs a pass over every user per change).
//
// version = first 32 base64url characters of sha256(canonicalJson(rest) + "\n" + usersHash),
// usersHash = base64url sha256(canonicalJson(users)), users sorted by email (code units).
// ---------------------------------------------------------------------------

/** Scheme 1's users hash: sha256 of canonicalJson(users), base64url. */
export function legacyUsersHash(users: readonly AgentUser[]): string {
  const h = createHash("sha256");
  for (const _ of feedUsers(h, users, Infinity));
  return h.digest("base64url");
}

/** legacyUsersHash, awaiting `pause` after every `every` users. */
export async function legacyUsersHashInSteps(users: readonly AgentUser[], pause: () => Promise<void>, every = 50_000): Promise<string> {
  const h = createHash("sha256");
  for (const _ of feedUsers(h, users, every)) await pause();
  return h.digest("base64url");
}

/** Scheme 1's versionHasher. */
export function legacyVersionHasher(rest: ConfigWithoutUsers): (usersHashValue: string) => string {
  return hasherAfter("", rest);
}

/** The scheme-1 version of a whole config (what an agent from before scheme 2 checks). */
export function legacyVersionOfConfig(config: AgentConfig): string {
  const { version: _version, users, ...rest } = config;
  return legacyVersionHasher(rest)(legacyUsersHash(users));
}

/**
 * The config a delta turns `base` into: `usersRemoved` leave, then `usersAdded` join (an id
 * change is both), users kept in email order. An error names what does not fit; the caller
 * then asks for the full config.
 */
export function applyUserDelta(base: AgentConfig, delta: AgentConfigDelta): { config: AgentConfig } | { error: string } {
  if (delta.from !== base.version) return { error: `the delta starts at version ${delta.from}, this agent has ${base.version}` };
  const removed = new Set(delta.usersRemoved);
  if (removed.size !== delta.usersRemoved.length) return { error: "usersRemoved names an email twice" };
  const kept: AgentUser[] = [];
  for (const u of base.users) {
    if (removed.delete(u.email)) continue;
    kept.push(u);
  }
  if (removed.size > 0) return { error: `usersRemoved names ${removed.size} email(s) this config does not have, e.g. ${[...removed][0]}` };
  const added = [...delta.usersAdded].sort(byEmail);
  const users: AgentUser[] = [];
  let i = 0;
  for (const a of added) {
    while (i < kept.length && byEmail(kept[i]!, a) < 0) users.push(kept[i++]!);
    if (i < kept.length && kept[i]!.email === a.email) return { error: `usersAdded has ${a.email}, which the config already has and usersRemoved does not name` };
    if (users.length > 0 && users[users.length - 1]!.email === a.email) return { error: `usersAdded names ${a.email} twice` };
    users.push(a);
  }
  while (i < kept.length) users.push(kept[i++]!);
  // The new list's digest is its base's with the delta's buckets rehashed (versionOfConfig then
  // costs those buckets, not a million users): the checks above make the two describe one set.
  digestOfList.set(users, usersDigestOf(base.users).patched(delta.usersRemoved, delta.usersAdded));
  return { config: { ...base, version: delta.version, users } };
}
