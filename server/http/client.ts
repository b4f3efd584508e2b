/**
 * What a request says about its client, believing proxy headers only when TRUST_PROXY says
 * a proxy is there. Without it, anybody could send X-Forwarded-For and pick their own
 * throttle bucket, or X-Forwarded-Host and pick the origin the app trusts.
 *
 * TRUST_PROXY=n means n proxies, each appending the address it received from to
 * X-Forwarded-For (nginx's $proxy_add_x_forwarded_for). The client is then the n-th entry
 * from the right: the one the outermost trusted proxy saw. Entries further left were written
 * by the client itself and are ignored. This is Express's numeric `trust proxy`.
 */
import type { IncomingMessage } from "node:http";

export interface ProxyTrust {
  /** Number of trusted reverse proxies in front of the app (TRUST_PROXY). */
  trustProxy: number;
  /** PUBLIC_URL: when set, the one origin the dashboard lives at. */
  publicUrl?: string;
}

const first = (v: string | string[] | undefined): string | undefined => {
  const s = Array.isArray(v) ? v[0] : v;
  const head = s?.split(",")[0]?.trim();
  return head ? head : undefined;
};

const bare = (a: string) => a.replace(/^::ffff:/, "");

export function clientAddress(req: IncomingMessage, trust: ProxyTrust): string {
  const socket = bare(req.socket.remoteAddress ?? "unknown");
  if (trust.trustProxy <= 0) return socket;
  const header = req.headers["x-forwarded-for"];
  const hops = (Array.isArray(header) ? header.join(",") : (header ?? ""))
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (hops.length === 0) return socket;
  // Fewer entries than proxies: the left-most one is as far as we can see.
  return bare(hops[Math.max(0, hops.length - trust.trustProxy)]!);
}

/** Did the browser reach us over HTTPS? The first X-Forwarded-Proto value (the client-facing hop) behind a trusted proxy. */
export function isHttps(req: IncomingMessage, trust: ProxyTrust): boolean {
  if (trust.trustProxy > 0) {
    const proto = first(req.headers["x-forwarded-proto"]);
    if (proto) return proto.toLowerCase() === "https";
  }
  return "encrypted" in req.socket && Boolean((req.socket as { encrypted?: boolean }).encrypted);
}

/** The host the browser asked for: X-Forwarded-Host behind a trusted proxy, else Host. */
export function requestHost(req: IncomingMessage, trust: ProxyTrust): string | undefined {
  const forwarded = trust.trustProxy > 0 ? first(req.headers["x-forwarded-host"]) : undefined;
  return (forwarded ?? req.headers.host)?.toLowerCase();
}

export type OriginVerdict = { ok: true } | { ok: false; reason: string };

/**
 * Cross-origin protection for requests that change something, the algorithm of Go 1.25's
 * http.CrossOriginProtection: browsers send Sec-Fetch-Site (pages cannot forge it), older
 * ones at least Origin; a request with neither comes from a script or an agent, not from a
 * page, and carries no ambient browser credentials worth forging.
 */
export function checkOrigin(req: IncomingMessage, trust: ProxyTrust): OriginVerdict {
  const site = first(req.headers["sec-fetch-site"])?.toLowerCase();
  const origin = first(req.headers.origin);
  if (site === "same-origin" || site === "none") return { ok: true };
  if (site) return { ok: false, reason: `Cross-site request refused (Sec-Fetch-Site: ${site}): use the dashboard itself` };
  if (!origin) return { ok: true };
  // Scheme, host and port, exactly: http://panel is not https://panel, nor :8443 :443.
  const own = ownOrigin(req, trust);
  if (own && parseOrigin(origin) === own) return { ok: true };
  return { ok: false, reason: `Cross-origin request refused (Origin: ${origin.slice(0, 100)}): use the dashboard itself` };
}

/** An origin as the URL standard serialises it (lower-case, default port dropped), or null. */
function parseOrigin(s: string): string | null {
  try {
    const u = new URL(s);
    return u.protocol === "http:" || u.protocol === "https:" ? u.origin : null;
  } catch {
    return null;
  }
}

/**
 * The dashboard's own origin: PUBLIC_URL's when set (nothing else is its own, whatever Host
 * says), else the scheme and host this request came to.
 */
function ownOrigin(req: IncomingMessage, trust: ProxyTrust): string | null {
  if (trust.publicUrl) return parseOrigin(trust.publicUrl);
  const host = requestHost(req, trust);
  return host ? parseOrigin(`${isHttps(req, trust) ? "https" : "http"}://${host}`) : null;
}

/**
 * The credential of an `Authorization: Bearer …` header, trimmed; undefined when there is no
 * such header (none, or another scheme). A malformed one ("Bearer", "Bearer a b") comes back
 * as it is, so it is refused as a wrong token and never mistaken for a cookie request.
 */
export function bearerCredential(authorization: string | string[] | undefined): string | undefined {
  const header = Array.isArray(authorization) ? authorization[0] : authorization;
  if (!header || !/^bearer(?:[ \t]|$)/i.test(header)) return undefined;
  return header.slice("bearer".length).trim();
}
