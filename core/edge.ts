/**
 * The trust boundary at the edge of a VPN server (issue 21, point 1): what a subscriber's
 * traffic may not reach through the tunnel, and the exact private destinations an operator
 * may open per cluster. Browser-safe (the cluster settings form validates with it) and used by
 * the agent to render the cores' routing rules.
 *
 * An allowed destination is `ip[:port]` or `cidr[:port]`; IPv6 with a port goes in brackets:
 * `10.0.0.5`, `10.0.0.5:5432`, `10.0.0.0/24:80`, `fd00::7`, `[fd00::7]:8080`, `[fd00::/64]:443`.
 */

/**
 * Blocked for every subscriber: loopback, "this host" (0.0.0.0/8 and :: connect to the server
 * itself on Linux), private (RFC 1918), CGNAT, link-local (cloud metadata at 169.254.169.254),
 * multicast, IPv6 loopback, ULA and link-local. Explicit CIDRs, never geoip:private: Debian's
 * v2ray may have no geoip.dat.
 */
export const BLOCKED_CIDRS: readonly string[] = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "224.0.0.0/4",
  "::/128",
  "::1/128",
  "fc00::/7",
  "fe80::/10",
  "ff00::/8",
];

/** Where the core's API could be reached from inside the server: loopback and "this host". */
export const LOCAL_HOST_CIDRS: readonly string[] = ["0.0.0.0/8", "127.0.0.0/8", "::/128", "::1/128"];

export const MAX_ALLOWED_DESTINATIONS = 64;

/** An address as bytes: 4 for IPv4, 16 for IPv6. */
export type IpBytes = number[];

export function parseIPv4(s: string): IpBytes | null {
  const parts = s.split(".");
  if (parts.length !== 4) return null;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    out.push(n);
  }
  return out;
}

export function parseIPv6(s: string): IpBytes | null {
  if (!/^[0-9a-fA-F:.]+$/.test(s)) return null;
  let text = s;
  let tail: number[] = [];
  // An embedded IPv4 tail ("::ffff:10.0.0.1", "64:ff9b::1.2.3.4") counts as two groups.
  if (s.includes(".")) {
    const i = s.lastIndexOf(":");
    const v4 = parseIPv4(s.slice(i + 1));
    if (!v4) return null;
    tail = v4;
    text = s.slice(0, i + 1);
    if (!text.endsWith("::")) text = text.slice(0, -1);
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = (h: string) => (h === "" ? [] : h.split(":"));
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  const wanted = 8 - tail.length / 2;
  const given = head.length + rest.length;
  // Without "::" every group is written; "::" stands for at least one.
  if (halves.length === 1 ? given !== wanted : given > wanted - 1) return null;
  const all = [...head, ...Array<string>(wanted - given).fill("0"), ...rest];
  const out: number[] = [];
  for (const g of all) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
    const n = parseInt(g, 16);
    out.push(n >> 8, n & 255);
  }
  return [...out, ...tail];
}

export function parseIp(s: string): IpBytes | null {
  return s.includes(":") ? parseIPv6(s) : parseIPv4(s);
}

export interface IpNet {
  bytes: IpBytes;
  prefix: number;
}

export function parseCidr(s: string): IpNet | null {
  const [ip, prefixText, extra] = s.split("/");
  if (extra !== undefined || ip === undefined) return null;
  const bytes = parseIp(ip);
  if (!bytes) return null;
  const max = bytes.length * 8;
  if (prefixText === undefined) return { bytes, prefix: max };
  if (!/^\d{1,3}$/.test(prefixText)) return null;
  const prefix = Number(prefixText);
  return prefix <= max ? { bytes, prefix } : null;
}

/** True when `ip` lies in `net` (same family). */
export function netContains(net: IpNet, ip: IpBytes): boolean {
  if (net.bytes.length !== ip.length) return false;
  let bits = net.prefix;
  for (let i = 0; i < ip.length && bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 255 : (0xff << (8 - bits)) & 255;
    if ((net.bytes[i]! & mask) !== (ip[i]! & mask)) return false;
  }
  return true;
}

function hasHostBits(net: IpNet): boolean {
  let bits = net.prefix;
  for (let i = 0; i < net.bytes.length; i++, bits -= 8) {
    const keep = bits >= 8 ? 255 : bits <= 0 ? 0 : (0xff << (8 - bits)) & 255;
    if ((net.bytes[i]! & ~keep & 255) !== 0) return true;
  }
  return false;
}

function formatNetwork(net: IpNet): string {
  let bits = net.prefix;
  const masked = net.bytes.map((b) => {
    const keep = bits >= 8 ? 255 : bits <= 0 ? 0 : (0xff << (8 - bits)) & 255;
    bits -= 8;
    return b & keep;
  });
  if (masked.length === 4) return `${masked.join(".")}/${net.prefix}`;
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((masked[i]! << 8) | masked[i + 1]!).toString(16));
  return `${groups.join(":")}/${net.prefix}`;
}

const BLOCKED_NETS: readonly IpNet[] = BLOCKED_CIDRS.map((c) => parseCidr(c)!);

/** True when the address is in one of the ranges every subscriber is kept from. */
export function isBlockedAddress(ip: IpBytes): boolean {
  return BLOCKED_NETS.some((n) => netContains(n, ip));
}

/** One allowed destination: `ip` is the address or CIDR as the cores' rules take it. */
export interface AllowedDestination {
  ip: string;
  port: number | null;
}

export type ParsedDestination = { ok: true; value: AllowedDestination } | { ok: false; error: string };

/** Parses one `ip[:port]` / `cidr[:port]` entry; the error says what is wrong with it. */
export function parseAllowedDestination(input: string): ParsedDestination {
  const s = input.trim();
  if (s === "") return { ok: false, error: "Destination is empty: write an IP address or a CIDR, e.g. 10.0.0.5:5432" };
  let hostPart = s;
  let portText: string | null = null;
  if (s.startsWith("[")) {
    const m = /^\[([^\]]+)\](?::(.*))?$/.exec(s);
    if (!m) return { ok: false, error: `"${s}": an IPv6 destination with a port is written [address]:port` };
    hostPart = m[1]!;
    portText = m[2] ?? null;
    if (!hostPart.includes(":")) return { ok: false, error: `"${s}": brackets are for IPv6 only` };
  } else if ((s.match(/:/g) ?? []).length === 1) {
    const i = s.indexOf(":");
    hostPart = s.slice(0, i);
    portText = s.slice(i + 1);
  }
  if (portText !== null && !/^\d{1,5}$/.test(portText)) return { ok: false, error: `"${s}": the port must be a number from 1 to 65535` };
  const port = portText === null ? null : Number(portText);
  if (port !== null && (port < 1 || port > 65535)) return { ok: false, error: `"${s}": the port must be a number from 1 to 65535` };
  if (hostPart.includes("%")) return { ok: false, error: `"${s}": zone ids (%eth0) are not allowed` };
  const net = parseCidr(hostPart);
  if (!net) {
    const looksLikeName = /[g-z]/i.test(hostPart) && !hostPart.includes("/");
    return { ok: false, error: looksLikeName ? `"${s}": use an IP address or a CIDR, not a host name` : `"${s}" is not an IP address or a CIDR (e.g. 10.0.0.5, 10.0.0.0/24, [fd00::7]:8080)` };
  }
  const v6 = net.bytes.length === 16;
  if (v6 && net.bytes.slice(0, 10).every((b) => b === 0) && net.bytes[10] === 255 && net.bytes[11] === 255) {
    return { ok: false, error: `"${s}": write the IPv4 address itself, not its IPv6-mapped form` };
  }
  if (net.prefix === 0) return { ok: false, error: `"${s}" would allow every address: list exact destinations` };
  if (hasHostBits(net)) return { ok: false, error: `"${s}": the address has bits set past /${net.prefix}; did you mean ${formatNetwork(net)}?` };
  return { ok: true, value: { ip: hostPart.toLowerCase(), port } };
}

/** The parsed list, entries that do not parse left out (the schemas refuse them earlier). */
export function parseAllowedDestinations(list: readonly string[]): AllowedDestination[] {
  const out: AllowedDestination[] = [];
  for (const s of list) {
    const p = parseAllowedDestination(s);
    if (p.ok) out.push(p.value);
  }
  return out;
}
