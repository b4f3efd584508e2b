/**
 * The version of an agent's config (its ETag) and the user deltas of GET /api/agent/config
 * (issue 23), shared by the panel, which computes them, and the agent, which checks that a
 * config it rebuilt from a delta hashes to the version the panel named.
 *
 * version = first 32 base64url characters of sha256(canonicalJson(rest) + "\n" + usersHash),
 * usersHash = base64url sha256(canonicalJson(users)), users sorted by email (code units).
 *
 * Node only (node:crypto): the panel and the agent import it, the browser never does.
 */
import { createHash, type Hash } from "node:crypto";
import type { AgentConfig, AgentConfigDelta, AgentUser } from "./agent-wire";

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
 * agent's live plan both use it.
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
      if (b!.id !== a!.id) {
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

/**
 * Feeds canonicalJson(users) to `h` in pieces (a million users never become one string),
 * pausing (yield) after every `every` users. `jsonOf` keeps each user's canonical JSON for the
 * next call: the panel, which hashes the same user objects again after every change, passes
 * one (a user object is never modified).
 */
function* feedUsers(h: Hash, users: readonly AgentUser[], jsonOf: WeakMap<AgentUser, string> | undefined, every: number): Generator<void> {
  let piece = "[";
  for (let k = 0; k < users.length; k++) {
    const u = users[k]!;
    let json = jsonOf?.get(u);
    if (json === undefined) {
      json = userJson(u);
      jsonOf?.set(u, json);
    }
    piece += (k > 0 ? "," : "") + json;
    if (piece.length > 65_536) {
      h.update(piece);
      piece = "";
    }
    if ((k + 1) % every === 0) yield;
  }
  h.update(`${piece}]`);
}

/** sha256 of canonicalJson(users), base64url. */
export function usersHash(users: readonly AgentUser[], jsonOf?: WeakMap<AgentUser, string>): string {
  const h = createHash("sha256");
  for (const _ of feedUsers(h, users, jsonOf, Infinity));
  return h.digest("base64url");
}

/** usersHash, awaiting `pause` after every `every` users: a server hashing a million users still answers meanwhile. */
export async function usersHashInSteps(users: readonly AgentUser[], jsonOf: WeakMap<AgentUser, string> | undefined, pause: () => Promise<void>, every = 50_000): Promise<string> {
  const h = createHash("sha256");
  for (const _ of feedUsers(h, users, jsonOf, every)) await pause();
  return h.digest("base64url");
}

/**
 * The versions one server's config takes with any users: the rest is hashed once, each
 * users hash then costs one copy of that state (the panel tries many when matching a delta's
 * `from`).
 */
export function versionHasher(rest: ConfigWithoutUsers): (usersHashValue: string) => string {
  const prefix: Hash = createHash("sha256").update(canonicalJson(rest)).update("\n");
  return (u) => prefix.copy().update(u).digest("base64url").slice(0, 32);
}

export function configVersion(rest: ConfigWithoutUsers, usersHashValue: string): string {
  return versionHasher(rest)(usersHashValue);
}

/** The version a whole config should carry (the agent's check after applying a delta). */
export function versionOfConfig(config: AgentConfig): string {
  const { version: _version, users, ...rest } = config;
  return configVersion(rest, usersHash(users));
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
  return { config: { ...base, version: delta.version, users } };
}
