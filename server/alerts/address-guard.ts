/**
 * Where a webhook may be delivered (issue 21, point 5): never to this machine or a private
 * network unless ROUTEBOARD_ALERTS_ALLOW_PRIVATE=1. Checked twice:
 * - on save, on the URL's host as the WHATWG parser reads it (which turns 2130706433,
 *   0x7f000001, 127.1, 0177.0.0.1 into 127.0.0.1 and [::ffff:127.0.0.1] into [::ffff:7f00:1]),
 *   plus names that always mean this machine (localhost, *.localhost);
 * - at delivery, on every address the name resolves to (a `lookup` that drops refused ones)
 *   and again on the connected socket's remote address, before a byte of the request is
 *   written, so a name that resolves to a public address on save and to 127.0.0.1 later
 *   (DNS rebinding) is still refused.
 */
import dns from "node:dns";
import net from "node:net";

/** The one reason shown when an address is refused (never which address or why exactly). */
export const PRIVATE_ADDRESS_REASON = "address not allowed: loopback, private or link-local network";

/** Raised by the guarded lookup and socket check; the worker maps it to PRIVATE_ADDRESS_REASON. */
export class PrivateAddressError extends Error {
  override name = "PrivateAddressError";
  readonly code = "EPRIVATEADDRESS";
  constructor() {
    super(PRIVATE_ADDRESS_REASON);
  }
}

function ipv4Bytes(ip: string): number[] | null {
  if (!net.isIPv4(ip)) return null;
  return ip.split(".").map(Number);
}

/** The 16 bytes of an IPv6 address (no zone id), or null. */
function ipv6Bytes(ip: string): number[] | null {
  if (!net.isIPv6(ip) || ip.includes("%")) return null;
  let text = ip;
  // A dotted IPv4 tail (::ffff:127.0.0.1) becomes two hex groups.
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail) {
    const b = ipv4Bytes(tail[1]!);
    if (!b) return null;
    text = `${text.slice(0, -tail[1]!.length)}${((b[0]! << 8) | b[1]!).toString(16)}:${((b[2]! << 8) | b[3]!).toString(16)}`;
  }
  const [head, rest] = text.split("::") as [string, string | undefined];
  const groupsOf = (s: string) => (s === "" ? [] : s.split(":").map((g) => parseInt(g, 16)));
  const h = groupsOf(head);
  const r = rest === undefined ? [] : groupsOf(rest);
  const groups = rest === undefined ? h : [...h, ...new Array<number>(8 - h.length - r.length).fill(0), ...r];
  if (groups.length !== 8 || groups.some((g) => !Number.isInteger(g) || g < 0 || g > 0xffff)) return null;
  return groups.flatMap((g) => [g >> 8, g & 0xff]);
}

function v4Refused(b: readonly number[]): boolean {
  const [a, c] = [b[0]!, b[1]!];
  return (
    a === 0 || // 0.0.0.0/8: "this network", 0.0.0.0 reaches this machine
    a === 10 || // private
    a === 127 || // loopback
    (a === 100 && c >= 64 && c <= 127) || // 100.64.0.0/10: carrier-grade NAT
    (a === 169 && c === 254) || // link-local (cloud metadata at 169.254.169.254)
    (a === 172 && c >= 16 && c <= 31) || // private
    (a === 192 && c === 168) || // private
    (a === 192 && c === 0 && b[2] === 0) || // 192.0.0.0/24: IETF protocol assignments
    (a === 198 && (c === 18 || c === 19)) || // 198.18.0.0/15: benchmarking, used inside labs
    a >= 224 // multicast, reserved, broadcast
  );
}

/**
 * True for an address a webhook must not reach: loopback, private (RFC 1918), link-local,
 * carrier-grade NAT, unique local (fc00::/7), unspecified, multicast and reserved; IPv6
 * forms that carry an IPv4 address (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64
 * 64:ff9b::/96, 6to4 2002::/16) are judged by that IPv4 address. Not an IP at all: true
 * (the caller asked about something that is not an address it can vouch for).
 */
export function isPrivateAddress(ip: string): boolean {
  const bare = ip.replace(/^\[|\]$/g, "");
  const v4 = ipv4Bytes(bare);
  if (v4) return v4Refused(v4);
  const b = ipv6Bytes(bare);
  if (!b) return true;
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return v4Refused(b.slice(12)); // ::ffff:a.b.c.d
  if (zeros(0, 12)) return true; // ::, ::1 and the deprecated ::a.b.c.d: never a public host
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12)) return v4Refused(b.slice(12)); // NAT64
  if (b[0] === 0x20 && b[1] === 0x02) return v4Refused(b.slice(2, 6)); // 6to4
  if ((b[0]! & 0xfe) === 0xfc) return true; // fc00::/7 unique local
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return true; // fe80::/10 link-local
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0xc0) return true; // fec0::/10 site-local (deprecated)
  if (b[0] === 0xff) return true; // multicast
  return false;
}

/** Names that always mean this machine, whatever DNS says (RFC 6761). */
function isLocalName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.+$/, "");
  return h === "localhost" || h.endsWith(".localhost") || h === "localhost.localdomain";
}

/**
 * Why this URL may not be a webhook target (null = it may): its host as the URL parser
 * normalises it is a refused IP literal or a local name. Names are not resolved here: the
 * answer could change before delivery, where it is checked again.
 */
export function privateUrlReason(url: string): string | null {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return null; // not a URL: the format check names that
  }
  const bare = host.replace(/^\[|\]$/g, "");
  if (isLocalName(bare) || (net.isIP(bare) !== 0 && isPrivateAddress(bare))) {
    return "URL must not point at this machine or a private network (set ROUTEBOARD_ALERTS_ALLOW_PRIVATE=1 for a lab)";
  }
  return null;
}

type LookupAddress = { address: string; family: number };
type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
/** The shape of dns.lookup as net.connect calls it (options always given). */
export type LookupFn = (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => void;

const systemLookup: LookupFn = (hostname, options, callback) =>
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => callback(err, addresses as LookupAddress[]));

/**
 * A `lookup` for net.connect that resolves with `resolve` (the system resolver by default)
 * and keeps only allowed addresses; none left is a PrivateAddressError before any connect.
 */
export function guardedLookup(resolve: LookupFn = systemLookup): LookupFn {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, options.all ? [] : "", 0);
      const list = (Array.isArray(addresses) ? addresses : [{ address: addresses, family: net.isIP(addresses) }]).filter((a) => !isPrivateAddress(a.address));
      if (list.length === 0) return callback(new PrivateAddressError(), options.all ? [] : "", 0);
      if (options.all) return callback(null, list);
      return callback(null, list[0]!.address, list[0]!.family);
    });
  };
}
