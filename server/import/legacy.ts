/**
 * Old subscription URLs of imported subscribers (issue 27 point 1): where they are served,
 * and the in-memory index that maps a request's host and path to the subscriber.
 *
 * Where: under a path prefix, on every host ("/sub/" for Marzban, 3x-ui and CSV by default),
 * or at the root of one host only (Remnawave serves `https://<SUB_PUBLIC_DOMAIN>/<shortUuid>`:
 * a root path is taken only on that host, so it never shadows the dashboard's own pages on
 * the panel's host). A prefix may not start with a segment the app itself serves (RESERVED).
 *
 * Marzban signs a new token each time a user is shown, so a user's app holds one of many
 * valid tokens: those rows are keyed by username (host "@marzban:<tag>", which no request's
 * Host can be) and a token is checked against the panel's secret the way Marzban's
 * get_subscription_payload does, tokens signed before the user's sub_revoked_at refused.
 *
 * Lookups are Map reads keyed by the whole path, like the token lookup of /sub/<token>; a
 * Marzban check is one SHA-256 per secret of that prefix and a constant-time compare.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { inArray } from "drizzle-orm";
import type { DbOrTx } from "@/db/client";
import { legacyMarzbanSecrets, subscriberLegacyLinks } from "@/db/schema";
import type { ImportSource } from "./rows";

/** First path segments the app serves (app/ pages, machine routes, Next's assets): never a legacy prefix. */
export const RESERVED_SEGMENTS = ["api", "_next", "agent", "metrics", "login", "setup", "clusters", "team", "tokens", "alerts", "favicon.svg", "favicon.ico", "robots.txt"];

export const DEFAULT_LEGACY_PREFIX: Record<ImportSource, string> = { marzban: "/sub/", "3x-ui": "/sub/", csv: "/sub/", remnawave: "/" };

const SEGMENT = /^[A-Za-z0-9._~-]{1,64}$/;
const HOST = /^(?=.{1,253}$)[a-z0-9-]+(\.[a-z0-9-]+)*(:\d{1,5})?$/;
export const MARZBAN_HOST_PREFIX = "@marzban:";

/** Why this prefix (and host) cannot hold old URLs, or null. */
export function prefixProblem(prefix: string, host: string): string | null {
  if (!prefix.startsWith("/") || !prefix.endsWith("/")) return `Legacy prefix must start and end with "/" (got ${JSON.stringify(prefix)})`;
  if (prefix.length > 200) return "Legacy prefix must be at most 200 characters";
  if (host !== "" && !HOST.test(host)) return `Legacy host must be a host name such as sub.example.com (got ${JSON.stringify(host)})`;
  if (prefix === "/") return host === "" ? 'A legacy prefix of "/" needs the old subscription host (e.g. sub.example.com): at the root of every host it would shadow the dashboard' : null;
  const segments = prefix.slice(1, -1).split("/");
  if (segments.some((s) => !SEGMENT.test(s) || s === "." || s === "..")) return `Legacy prefix ${JSON.stringify(prefix)} has a segment that is not letters, digits, ".", "_", "~" or "-"`;
  if (RESERVED_SEGMENTS.includes(segments[0]!.toLowerCase())) return `Legacy prefix ${prefix} would shadow the app's own /${segments[0]}/ routes: choose another`;
  return null;
}

/** The key (last segment) of an old URL: what may follow the prefix. */
export function keyProblem(key: string): string | null {
  if (!SEGMENT.test(key) || key === "." || key === "..") return `subscription key ${JSON.stringify(key.slice(0, 70))} is not 1–64 letters, digits, ".", "_", "~" or "-"`;
  return null;
}

// ---------------------------------------------------------------------------------------------
// Marzban tokens (app/utils/jwt.py)
// ---------------------------------------------------------------------------------------------

const JWT_HEAD = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.";
const b64url = (b: Buffer) => b.toString("base64").replace(/\+/g, "-").replace(/\//g, "_");

export function marzbanSecretTag(secret: string): string {
  return createHash("sha256").update(secret).digest("hex").slice(0, 12);
}

/** Marzban's create_subscription_token, for tests and the fixtures' URLs. */
export function marzbanToken(username: string, secret: string, atS: number): string {
  const data = b64url(Buffer.from(`${username},${atS}`, "utf8")).replace(/=+$/, "");
  return data + b64url(createHash("sha256").update(data + secret, "utf8").digest()).slice(0, 10);
}

/** Who a Marzban subscription token speaks for, if `secret` signed it (get_subscription_payload). */
export function verifyMarzbanToken(token: string, secret: string): { username: string; createdAtS: number } | null {
  if (token.length < 15) return null;
  if (token.startsWith(JWT_HEAD)) {
    const [h, p, sig] = token.split(".");
    if (!h || !p || !sig) return null;
    const want = createHmac("sha256", secret).update(`${h}.${p}`).digest();
    const got = Buffer.from(sig, "base64url");
    if (got.length !== want.length || !timingSafeEqual(got, want)) return null;
    try {
      const payload = JSON.parse(Buffer.from(p, "base64url").toString("utf8")) as { sub?: unknown; access?: unknown; iat?: unknown };
      if (payload.access !== "subscription" || typeof payload.sub !== "string" || typeof payload.iat !== "number") return null;
      return { username: payload.sub, createdAtS: payload.iat };
    } catch {
      return null;
    }
  }
  const data = token.slice(0, -10);
  const sig = Buffer.from(token.slice(-10));
  const want = Buffer.from(b64url(createHash("sha256").update(data + secret, "utf8").digest()).slice(0, 10));
  if (!timingSafeEqual(sig, want)) return null;
  const decoded = Buffer.from(data.replace(/-/g, "+").replace(/_/g, "/"), "base64").toString("utf8");
  const comma = decoded.lastIndexOf(",");
  const createdAtS = Number(decoded.slice(comma + 1));
  if (comma <= 0 || !Number.isSafeInteger(createdAtS)) return null;
  return { username: decoded.slice(0, comma), createdAtS };
}

// ---------------------------------------------------------------------------------------------
// The index
// ---------------------------------------------------------------------------------------------

interface Link {
  subscriberId: string;
  notBeforeMs: number | null;
}

/** One stored old URL (a row of subscriber_legacy_links). */
export interface LegacyLinkRow {
  host: string;
  path: string;
  subscriberId: string;
  notBefore: Date | null;
}

export class LegacyIndex {
  private readonly links = new Map<string, Link>();
  /** Each subscriber's keys in `links`: what replaceSubscribers takes out. */
  private readonly keysBySubscriber = new Map<string, string[]>();
  private readonly secrets = new Map<string, Array<{ tag: string; secret: string }>>();
  /** Prefixes served on every host, and hosts whose root is served: what the router asks first. */
  private readonly prefixes = new Set<string>();
  private readonly rootHosts = new Set<string>();

  static empty(): LegacyIndex {
    return new LegacyIndex([], []);
  }

  constructor(links: readonly LegacyLinkRow[], secrets: Array<{ prefix: string; tag: string; secret: string }>) {
    for (const l of links) this.add(l);
    for (const s of secrets) {
      const list = this.secrets.get(s.prefix) ?? [];
      list.push({ tag: s.tag, secret: s.secret });
      this.secrets.set(s.prefix, list);
      this.prefixes.add(s.prefix);
    }
  }

  private add(l: LegacyLinkRow): void {
    const key = `${l.host}|${l.path}`;
    const before = this.links.get(key);
    if (before) this.forgetKey(before.subscriberId, key);
    this.links.set(key, { subscriberId: l.subscriberId, notBeforeMs: l.notBefore ? l.notBefore.getTime() : null });
    const keys = this.keysBySubscriber.get(l.subscriberId);
    if (keys) keys.push(key);
    else this.keysBySubscriber.set(l.subscriberId, [key]);
    const prefix = l.path.slice(0, l.path.lastIndexOf("/") + 1);
    if (l.host === "" || l.host.startsWith(MARZBAN_HOST_PREFIX)) this.prefixes.add(prefix);
    else if (prefix === "/") this.rootHosts.add(l.host);
    else this.prefixes.add(prefix);
  }

  private forgetKey(subscriberId: string, key: string): void {
    const keys = this.keysBySubscriber.get(subscriberId);
    if (!keys) return;
    const rest = keys.filter((k) => k !== key);
    if (rest.length > 0) this.keysBySubscriber.set(subscriberId, rest);
    else this.keysBySubscriber.delete(subscriberId);
  }

  /**
   * These subscribers' old URLs are now `links` (their rows as stored now; none for a
   * subscriber whose key was rotated or who was deleted): the rest of the index stays. A
   * prefix or root host left without URLs stays in the router's first check, where it only
   * costs a lookup that finds nothing.
   */
  replaceSubscribers(subscriberIds: readonly string[], links: readonly LegacyLinkRow[]): void {
    for (const id of subscriberIds) {
      for (const key of this.keysBySubscriber.get(id) ?? []) this.links.delete(key);
      this.keysBySubscriber.delete(id);
    }
    for (const l of links) this.add(l);
  }

  get size(): number {
    return this.links.size;
  }

  /** Whether a request for `path` on `host` may be an old URL (the router's cheap first check). */
  mayServe(host: string | null, path: string): boolean {
    const prefix = path.slice(0, path.lastIndexOf("/") + 1);
    if (this.prefixes.has(prefix)) return true;
    // At a host's root only the exact old URLs: were the dashboard served on that host too,
    // its own pages (/login, /clusters) stay its own (no key is a reserved name).
    return prefix === "/" && host !== null && this.rootHosts.has(host.toLowerCase()) && this.links.has(`${host.toLowerCase()}|${path}`);
  }

  /** The subscriber an old URL belongs to, or null. */
  resolve(host: string | null, path: string): string | null {
    const any = this.links.get(`|${path}`);
    if (any) return any.subscriberId;
    if (host) {
      const onHost = this.links.get(`${host.toLowerCase()}|${path}`);
      if (onHost) return onHost.subscriberId;
    }
    const cut = path.lastIndexOf("/") + 1;
    const prefix = path.slice(0, cut);
    const token = path.slice(cut);
    for (const { tag, secret } of this.secrets.get(prefix) ?? []) {
      const payload = verifyMarzbanToken(token, secret);
      if (!payload) continue;
      const link = this.links.get(`${MARZBAN_HOST_PREFIX}${tag}|${prefix}${payload.username}`);
      // A token signed before the user's "revoke subscription" is refused, as Marzban does.
      if (link && (link.notBeforeMs === null || payload.createdAtS * 1000 > link.notBeforeMs)) return link.subscriberId;
    }
    return null;
  }
}

const linkColumns = { host: subscriberLegacyLinks.host, path: subscriberLegacyLinks.path, subscriberId: subscriberLegacyLinks.subscriberId, notBefore: subscriberLegacyLinks.notBefore };

export async function loadLegacyIndex(db: DbOrTx): Promise<LegacyIndex> {
  const [links, secrets] = await Promise.all([
    db.select(linkColumns).from(subscriberLegacyLinks),
    db.select({ prefix: legacyMarzbanSecrets.prefix, tag: legacyMarzbanSecrets.tag, secret: legacyMarzbanSecrets.secret }).from(legacyMarzbanSecrets),
  ]);
  return new LegacyIndex(links, secrets);
}

/** The old URLs of these subscribers only (an edit names who it changed: LegacyIndex.replaceSubscribers). */
export async function loadLegacyLinks(db: DbOrTx, subscriberIds: readonly string[]): Promise<LegacyLinkRow[]> {
  const out: LegacyLinkRow[] = [];
  for (let k = 0; k < subscriberIds.length; k += 1000) {
    out.push(...(await db.select(linkColumns).from(subscriberLegacyLinks).where(inArray(subscriberLegacyLinks.subscriberId, subscriberIds.slice(k, k + 1000) as string[]))));
  }
  return out;
}
