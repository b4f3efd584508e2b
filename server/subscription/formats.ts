/**
 * Subscription bodies for VPN apps (DESIGN §4): share links (base64, the default), JSON,
 * Clash (mihomo) YAML and sing-box JSON. Pure functions of the chosen entries.
 */
import type { BlockReason } from "@/server/usage/access";
import { flagEmoji } from "@/core/format";

export interface SubscriptionEntry {
  routeId: string;
  route: string;
  /** The route's flag as an ISO 3166-1 alpha-2 code, or null/absent for none. */
  routeFlag?: string | null;
  inboundId: string;
  /** What the user sees in the app: the chosen inbound's name. */
  inbound: string;
  server: string;
  address: string;
  port: number;
  security: "reality" | "tls" | "none";
  sni: string | null;
  realityPublicKey: string | null;
  realityShortId: string | null;
}

export type SubscriptionFormat = "base64" | "json" | "clash" | "singbox";

export function parseFormat(v: string | null): SubscriptionFormat | null {
  if (v === null || v === "" || v === "base64" || v === "links") return "base64";
  if (v === "json" || v === "clash" || v === "singbox") return v;
  if (v === "sing-box") return "singbox";
  return null;
}

/** IPv6 literals go in brackets inside a URI authority. */
function hostForUri(address: string): string {
  return address.includes(":") && !address.startsWith("[") ? `[${address}]` : address;
}

/** Everything of a share link after `<uuid>@`, per entry (entries are immutable). */
const linkTails = new WeakMap<SubscriptionEntry, string>();

/** `vless://<uuid>@<address>:<port>?...#<url-encoded inbound name>` */
export function vlessShareLink(uuid: string, e: SubscriptionEntry): string {
  return `vless://${uuid}@${cachedTail(e)}`;
}

function cachedTail(e: SubscriptionEntry): string {
  let tail = linkTails.get(e);
  if (tail === undefined) {
    tail = linkTail(e);
    linkTails.set(e, tail);
  }
  return tail;
}

function linkTail(e: SubscriptionEntry): string {
  const q = new URLSearchParams({ encryption: "none", type: "tcp", security: e.security });
  if (e.security === "reality") {
    q.set("flow", "xtls-rprx-vision");
    q.set("fp", "chrome");
    if (e.sni) q.set("sni", e.sni);
    if (e.realityPublicKey) q.set("pbk", e.realityPublicKey);
    if (e.realityShortId) q.set("sid", e.realityShortId);
  } else if (e.security === "tls") {
    q.set("fp", "chrome");
    if (e.sni) q.set("sni", e.sni);
  }
  return `${hostForUri(e.address)}:${e.port}?${q.toString()}#${encodeURIComponent(e.inbound)}`;
}

/** `@<tail>` as UTF-8, per entry: what the base64 body copies for each link. */
const linkTailBytes = new WeakMap<SubscriptionEntry, Buffer>();
const VLESS_PREFIX = Buffer.from("vless://", "latin1");
const NEWLINE = 10;

function tailBytes(e: SubscriptionEntry): Buffer {
  let b = linkTailBytes.get(e);
  if (b === undefined) {
    b = Buffer.from(`@${cachedTail(e)}`, "utf8");
    linkTailBytes.set(e, b);
  }
  return b;
}

/**
 * The share links, one a line, base64-encoded. Each link's bytes are copied into one buffer
 * (prefix, uuid, the entry's cached `@<tail>`), which is encoded once: no link strings, no
 * joined string and no second UTF-8 pass per answer. The same bytes as encoding the joined
 * links, since every part ends and begins with an ASCII character.
 */
export function renderBase64(uuid: string, entries: readonly SubscriptionEntry[]): string {
  const n = entries.length;
  if (n === 0) return "";
  const id = Buffer.from(uuid, "utf8");
  const tails = new Array<Buffer>(n);
  let size = n - 1 + n * (VLESS_PREFIX.length + id.length);
  for (let i = 0; i < n; i++) size += (tails[i] = tailBytes(entries[i]!)).length;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (let i = 0; i < n; i++) {
    if (i > 0) out[at++] = NEWLINE;
    out.set(VLESS_PREFIX, at);
    at += VLESS_PREFIX.length;
    out.set(id, at);
    at += id.length;
    const t = tails[i]!;
    out.set(t, at);
    at += t.length;
  }
  return out.toString("base64");
}

export function renderJson(uuid: string, entries: readonly SubscriptionEntry[]): string {
  return JSON.stringify({
    routes: entries.map((e) => ({
      routeId: e.routeId,
      route: e.route,
      // The flag as apps show it, and its country code for tools.
      flag: flagEmoji(e.routeFlag) || null,
      flagCode: e.routeFlag ?? null,
      inboundId: e.inboundId,
      inbound: e.inbound,
      server: e.server,
      link: vlessShareLink(uuid, e),
    })),
  });
}

/** Clash (mihomo): the built-in outbounds and our one selector group, which rules refer to. */
export const CLASH_GROUP = "Proxy";
export const CLASH_FIXED_NAMES = ["DIRECT", "REJECT", "REJECT-DROP", "PASS", "COMPATIBLE", "GLOBAL", CLASH_GROUP] as const;
/** sing-box: our selector and direct outbounds, the tun inbound, and the usual block/dns tags. */
export const SINGBOX_SELECTOR = "proxy";
export const SINGBOX_FIXED_TAGS = [SINGBOX_SELECTOR, "direct", "block", "dns-out", "tun-in"] as const;
/** sing-box DNS server tags (their own namespace, apart from outbound tags). */
export const SINGBOX_DNS_REMOTE = "dns-remote";
export const SINGBOX_DNS_LOCAL = "dns-local";
/** Both renderers avoid every fixed name of both, so a name means the same in either. */
const FIXED_NAMES = new Set([...CLASH_FIXED_NAMES, ...SINGBOX_FIXED_TAGS].map((n) => n.toLowerCase()));

/** Invisible characters (zero-width, bidi marks, BOM): a name of only these shows as blank. */
const INVISIBLE_RE = /[\s\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff\u00ad]/gu;
const looksEmpty = (s: string) => s.replace(INVISIBLE_RE, "") === "";

/**
 * Proxy names for Clash and sing-box: unique, and never one of the fixed group/outbound
 * names. Two routes may pick same-named inbounds, and an inbound may be called "DIRECT",
 * "Proxy" or "dup (2)": a name that is taken (compared case-insensitively, the stricter of
 * the clients' rules) gets the first free " (n)" suffix, checked against every name given
 * out so far, so a suffixed name can never collide with a later literal one either.
 */
export function proxyNames(entries: readonly Pick<SubscriptionEntry, "inbound" | "route">[]): string[] {
  const taken = new Set(FIXED_NAMES);
  return entries.map((e) => {
    const base = !looksEmpty(e.inbound) ? e.inbound : !looksEmpty(e.route) ? e.route : "Server";
    let name = base;
    for (let n = 2; taken.has(name.toLowerCase()); n++) name = `${base} (${n})`;
    taken.add(name.toLowerCase());
    return name;
  });
}

// JSON strings are valid YAML double-quoted scalars, so quoting through JSON is exact.
// U+2028/2029 stay raw in JSON.stringify but end a line for YAML 1.1 readers: escaped as \uXXXX,
// which YAML's double-quoted style also reads.
const y = (s: string | number | boolean) =>
  typeof s === "string" ? JSON.stringify(s).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`) : String(s);

export function renderClash(uuid: string, entries: readonly SubscriptionEntry[]): string {
  const names = proxyNames(entries);
  const lines = ["mixed-port: 7890", "allow-lan: false", "mode: rule", "log-level: warning", "proxies:"];
  entries.forEach((e, i) => {
    lines.push(`  - name: ${y(names[i]!)}`, "    type: vless", `    server: ${y(e.address)}`, `    port: ${e.port}`, `    uuid: ${y(uuid)}`, "    network: tcp", "    udp: true");
    if (e.security !== "none") {
      lines.push("    tls: true", "    client-fingerprint: chrome");
      if (e.sni) lines.push(`    servername: ${y(e.sni)}`);
    } else {
      lines.push("    tls: false");
    }
    if (e.security === "reality") {
      lines.push("    flow: xtls-rprx-vision", "    reality-opts:", `      public-key: ${y(e.realityPublicKey ?? "")}`, `      short-id: ${y(e.realityShortId ?? "")}`);
    }
  });
  if (entries.length === 0) lines[lines.length - 1] = "proxies: []";
  lines.push("proxy-groups:", `  - name: ${y(CLASH_GROUP)}`, "    type: select", "    proxies:");
  for (const n of names) lines.push(`      - ${y(n)}`);
  lines.push("      - DIRECT", "rules:", `  - MATCH,${CLASH_GROUP}`, "");
  return lines.join("\n");
}

export function renderSingbox(uuid: string, entries: readonly SubscriptionEntry[]): string {
  const names = proxyNames(entries);
  const outbounds: unknown[] = entries.map((e, i) => ({
    type: "vless",
    tag: names[i],
    server: e.address,
    server_port: e.port,
    uuid,
    ...(e.security === "reality" ? { flow: "xtls-rprx-vision" } : {}),
    ...(e.security === "none"
      ? {}
      : {
          tls: {
            enabled: true,
            ...(e.sni ? { server_name: e.sni } : {}),
            utls: { enabled: true, fingerprint: "chrome" },
            ...(e.security === "reality" ? { reality: { enabled: true, public_key: e.realityPublicKey ?? "", short_id: e.realityShortId ?? "" } } : {}),
          },
        }),
  }));
  outbounds.unshift({ type: "selector", tag: SINGBOX_SELECTOR, outbounds: [...names, "direct"] });
  outbounds.push({ type: "direct", tag: "direct" });
  return JSON.stringify(
    {
      log: { level: "warn" },
      // sing-box 1.11 through 1.13 read this (the `address` server form; 1.12's typed
      // servers are unknown to 1.11). Names are resolved through the tunnel (DoH to
      // 1.1.1.1, an IP, so it needs no resolver of its own); the VPN servers' own host
      // names by the system resolver, or they would be looked up through themselves.
      dns: {
        servers: [
          { tag: SINGBOX_DNS_REMOTE, address: "https://1.1.1.1/dns-query", detour: SINGBOX_SELECTOR },
          { tag: SINGBOX_DNS_LOCAL, address: "local" },
        ],
        rules: [{ outbound: "any", server: SINGBOX_DNS_LOCAL }],
        final: SINGBOX_DNS_REMOTE,
        strategy: "prefer_ipv4",
      },
      inbounds: [{ type: "tun", tag: "tun-in", address: ["172.19.0.1/30"], auto_route: true, strict_route: true }],
      outbounds,
      // Rule actions (1.11+) instead of the removed special outbounds (dns, block) and
      // inbound sniff fields: sniff first, answer DNS inside sing-box, keep LAN local.
      route: {
        rules: [{ action: "sniff" }, { protocol: "dns", action: "hijack-dns" }, { ip_is_private: true, outbound: "direct" }],
        final: SINGBOX_SELECTOR,
        auto_detect_interface: true,
      },
    },
    null,
    2,
  );
}

export const CONTENT_TYPES: Record<SubscriptionFormat, string> = {
  base64: "text/plain; charset=utf-8",
  json: "application/json; charset=utf-8",
  clash: "text/yaml; charset=utf-8",
  singbox: "application/json; charset=utf-8",
};

export function renderSubscription(format: SubscriptionFormat, uuid: string, entries: readonly SubscriptionEntry[]): string {
  switch (format) {
    case "base64":
      return renderBase64(uuid, entries);
    case "json":
      return renderJson(uuid, entries);
    case "clash":
      return renderClash(uuid, entries);
    case "singbox":
      return renderSingbox(uuid, entries);
  }
}

/** `subscription-userinfo`: what most apps show as usage and expiry. */
export function subscriptionUserinfo(upBytes: number, downBytes: number, limitBytes: number | null, expiresAt: Date | null): string {
  const expire = expiresAt ? Math.floor(expiresAt.getTime() / 1000) : 0;
  const n = (b: number) => Math.max(0, Math.floor(b));
  return `upload=${n(upBytes)}; download=${n(downBytes)}; total=${limitBytes ?? 0}; expire=${expire}`;
}

/** Header values must be ASCII: non-ASCII titles go base64-encoded, as apps expect. */
export function profileTitle(title: string): string {
  return /^[\x20-\x7e]*$/.test(title) ? title : `base64:${Buffer.from(title, "utf8").toString("base64")}`;
}

/**
 * The informational entry of a subscriber who may not connect now (expired, over the
 * traffic limit): one entry whose name is the message, so every app shows it in its server
 * list. It points to 127.0.0.1:1: loopback never leaves the device, so a tap on it sends
 * nothing to any network (0.0.0.0 is "this host" on Linux and an error elsewhere, and a
 * public unroutable range such as TEST-NET would hang until a timeout); port 1 (tcpmux) is
 * as good as never listening, so the attempt is refused at once. No real id travels in it.
 */
export const INFO_ADDRESS = "127.0.0.1";
export const INFO_PORT = 1;
export const INFO_UUID = "00000000-0000-0000-0000-000000000000";

export function infoEntry(message: string): SubscriptionEntry {
  return {
    routeId: "info",
    route: message,
    inboundId: "info",
    inbound: message,
    server: "",
    address: INFO_ADDRESS,
    port: INFO_PORT,
    security: "none",
    sni: null,
    realityPublicKey: null,
    realityShortId: null,
  };
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** "1 Dec 2026" (UTC): the same everywhere, whatever the app's locale. */
export function formatDay(d: Date): string {
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
}

/** "1 Dec" (UTC): a reset is at most a month away, so the year goes without saying. */
export function formatDayMonth(d: Date): string {
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]}`;
}

/**
 * What the app shows. A reached limit with a reset schedule renews on its own at the next
 * reset (00:00 UTC of that day); without one, when the provider raises or resets it, so the
 * message then says whom to ask.
 */
export function blockMessage(r: BlockReason): string {
  if (r.kind === "expired") return `⛔ Subscription expired on ${formatDay(r.at)} — contact your provider to renew`;
  return r.renewsAt ? `⛔ Traffic limit reached — renews on ${formatDayMonth(r.renewsAt)}` : "⛔ Traffic limit reached — contact your provider to renew";
}
