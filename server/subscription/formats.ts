/**
 * Subscription bodies for VPN apps (DESIGN §4): share links (base64, the default), JSON,
 * Clash (mihomo) YAML and sing-box JSON. Pure functions of the chosen entries.
 */
import type { BlockReason } from "@/server/usage/access";
import { flagEmoji } from "@/core/format";
import { shadowsocksUserSecret, trojanPassword } from "@/core/credentials";
import { INBOUND_DEFAULTS, ss2022KeyBytes, type InboundProtocol, type InboundTransport } from "@/core/inbound-protocols";

export interface SubscriptionEntry {
  routeId: string;
  route: string;
  /** The route's flag as an ISO 3166-1 alpha-2 code, or null/absent for none. */
  routeFlag?: string | null;
  inboundId: string;
  /** The chosen inbound's name: what the user sees in the app unless `lineName` is set. */
  inbound: string;
  /** The line's name in the app when its route names it (routes.line_name "route"); absent = the inbound's. */
  lineName?: string;
  server: string;
  address: string;
  port: number;
  security: "reality" | "tls" | "none";
  sni: string | null;
  realityPublicKey: string | null;
  realityShortId: string | null;
  /** Issue 26; absent = VLESS over tcp. */
  protocol?: InboundProtocol;
  transport?: InboundTransport;
  path?: string | null;
  host?: string | null;
  serviceName?: string | null;
  ssMethod?: string | null;
  /** SS-2022's server key: links carry `<server key>:<subscriber's key>`. */
  ssServerKey?: string | null;
}

const protocolOf = (e: SubscriptionEntry): InboundProtocol => e.protocol ?? INBOUND_DEFAULTS.protocol;
/** What the app shows for the entry: the share-link fragment, the proxy name, the tag, `ps`. */
export const lineNameOf = (e: Pick<SubscriptionEntry, "inbound" | "lineName">): string => e.lineName ?? e.inbound;
const transportOf = (e: SubscriptionEntry): InboundTransport => e.transport ?? INBOUND_DEFAULTS.transport;
const pathOf = (e: SubscriptionEntry) => e.path ?? "/";
const serviceNameOf = (e: SubscriptionEntry) => e.serviceName ?? "grpc";
/** VLESS with Vision: Reality over tcp only (server/dataplane/config.ts flowFor). */
const visionOf = (e: SubscriptionEntry) => e.security === "reality" && protocolOf(e) === "vless" && transportOf(e) === "tcp";

/** The subscriber's Shadowsocks password for the entry: SS-2022 joins the server's key and its own. */
function ssPassword(uuid: string, e: SubscriptionEntry): string {
  const method = e.ssMethod ?? "aes-256-gcm";
  const own = shadowsocksUserSecret(uuid, method);
  return ss2022KeyBytes(method) !== null && e.ssServerKey ? `${e.ssServerKey}:${own}` : own;
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

/**
 * The transport parameters of `vless://` and `trojan://` (v2rayN's and Xray's share-link
 * names): type, path and host for ws/httpupgrade/xhttp/h2, serviceName and mode for gRPC.
 */
function setTransportParams(q: URLSearchParams, e: SubscriptionEntry): void {
  const t = transportOf(e);
  q.set("type", t === "h2" ? "http" : t);
  if (t === "grpc") {
    q.set("serviceName", serviceNameOf(e));
    q.set("mode", "gun");
  } else if (t !== "tcp") {
    q.set("path", pathOf(e));
    if (e.host) q.set("host", e.host);
    if (t === "xhttp") q.set("mode", "auto");
  }
}

function linkTail(e: SubscriptionEntry): string {
  const q = new URLSearchParams(protocolOf(e) === "vless" ? { encryption: "none" } : {});
  setTransportParams(q, e);
  q.set("security", e.security);
  if (e.security === "reality") {
    if (visionOf(e)) q.set("flow", "xtls-rprx-vision");
    q.set("fp", "chrome");
    if (e.sni) q.set("sni", e.sni);
    if (e.realityPublicKey) q.set("pbk", e.realityPublicKey);
    if (e.realityShortId) q.set("sid", e.realityShortId);
  } else if (e.security === "tls") {
    q.set("fp", "chrome");
    if (e.sni) q.set("sni", e.sni);
  }
  return `${hostForUri(e.address)}:${e.port}?${q.toString()}#${encodeURIComponent(lineNameOf(e))}`;
}

/** `trojan://<password>@<address>:<port>?...#<name>`: the same parameters as `vless://`. */
export function trojanShareLink(uuid: string, e: SubscriptionEntry): string {
  return `trojan://${trojanPassword(uuid)}@${cachedTail(e)}`;
}

/**
 * SIP002: `ss://<userinfo>@<address>:<port>#<name>`; userinfo is base64url `method:password`
 * for the AEAD ciphers and percent-encoded (never base64) for the 2022 ones, as SIP002 asks.
 */
export function shadowsocksShareLink(uuid: string, e: SubscriptionEntry): string {
  const method = e.ssMethod ?? "aes-256-gcm";
  const password = ssPassword(uuid, e);
  const userinfo = ss2022KeyBytes(method) !== null ? `${encodeURIComponent(method)}:${encodeURIComponent(password)}` : Buffer.from(`${method}:${password}`, "utf8").toString("base64url");
  return `ss://${userinfo}@${hostForUri(e.address)}:${e.port}#${encodeURIComponent(lineNameOf(e))}`;
}

/**
 * `vmess://` + base64 of v2rayN's JSON "v2" form: net is the transport (h2 as "h2"), path the
 * HTTP path or, for gRPC, the service name (type "gun"), tls "tls" or "".
 */
export function vmessShareLink(uuid: string, e: SubscriptionEntry): string {
  const t = transportOf(e);
  const v2 = {
    v: "2",
    ps: lineNameOf(e),
    add: e.address,
    port: String(e.port),
    id: uuid,
    aid: "0",
    scy: "auto",
    net: t,
    type: t === "grpc" ? "gun" : "none",
    host: t === "grpc" || t === "tcp" ? "" : (e.host ?? ""),
    path: t === "grpc" ? serviceNameOf(e) : t === "tcp" ? "" : pathOf(e),
    tls: e.security === "tls" ? "tls" : "",
    sni: e.security === "tls" ? (e.sni ?? "") : "",
    alpn: "",
    fp: e.security === "tls" ? "chrome" : "",
  };
  return `vmess://${Buffer.from(JSON.stringify(v2), "utf8").toString("base64")}`;
}

/** The entry's share link for the subscriber, whatever its protocol. */
export function shareLink(uuid: string, e: SubscriptionEntry): string {
  switch (protocolOf(e)) {
    case "vless":
      return vlessShareLink(uuid, e);
    case "vmess":
      return vmessShareLink(uuid, e);
    case "trojan":
      return trojanShareLink(uuid, e);
    case "shadowsocks":
      return shadowsocksShareLink(uuid, e);
  }
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
  // A VLESS link is prefix + uuid + the cached tail; the other protocols' links carry a
  // per-subscriber secret inside (vmess:// all of it), so they are made whole (`whole`).
  const tails = new Array<Buffer>(n);
  const whole = new Array<boolean>(n);
  let size = n - 1;
  for (let i = 0; i < n; i++) {
    const e = entries[i]!;
    whole[i] = protocolOf(e) !== "vless";
    tails[i] = whole[i] ? Buffer.from(shareLink(uuid, e), "utf8") : tailBytes(e);
    size += tails[i]!.length + (whole[i] ? 0 : VLESS_PREFIX.length + id.length);
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (let i = 0; i < n; i++) {
    if (i > 0) out[at++] = NEWLINE;
    if (!whole[i]) {
      out.set(VLESS_PREFIX, at);
      at += VLESS_PREFIX.length;
      out.set(id, at);
      at += id.length;
    }
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
      // The line's name in the app (the link's fragment): the inbound's, or the route's when it says so.
      name: lineNameOf(e),
      server: e.server,
      protocol: protocolOf(e),
      transport: transportOf(e),
      security: e.security,
      link: shareLink(uuid, e),
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
export function proxyNames(entries: readonly Pick<SubscriptionEntry, "inbound" | "lineName" | "route">[]): string[] {
  const taken = new Set(FIXED_NAMES);
  return entries.map((e) => {
    const shown = lineNameOf(e);
    const base = !looksEmpty(shown) ? shown : !looksEmpty(e.route) ? e.route : "Server";
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

/** The lines of one mihomo proxy (MetaCubeX/mihomo adapter/outbound option structs). */
function clashProxy(uuid: string, e: SubscriptionEntry, name: string): string[] {
  const protocol = protocolOf(e);
  const t = transportOf(e);
  const lines = [`  - name: ${y(name)}`];
  const type = protocol === "shadowsocks" ? "ss" : protocol;
  lines.push(`    type: ${type}`, `    server: ${y(e.address)}`, `    port: ${e.port}`);
  if (protocol === "vless" || protocol === "vmess") lines.push(`    uuid: ${y(uuid)}`);
  if (protocol === "vmess") lines.push("    alterId: 0", "    cipher: auto");
  if (protocol === "trojan") lines.push(`    password: ${y(trojanPassword(uuid))}`);
  if (protocol === "shadowsocks") {
    lines.push(`    cipher: ${y(e.ssMethod ?? "aes-256-gcm")}`, `    password: ${y(ssPassword(uuid, e))}`, "    udp: true");
    return lines;
  }
  // mihomo spells HTTPUpgrade as ws with v2ray-http-upgrade, and h2 as "h2".
  lines.push(`    network: ${t === "httpupgrade" ? "ws" : t}`, "    udp: true");
  if (t === "ws" || t === "httpupgrade") {
    lines.push("    ws-opts:", `      path: ${y(pathOf(e))}`);
    if (e.host) lines.push("      headers:", `        Host: ${y(e.host)}`);
    if (t === "httpupgrade") lines.push("      v2ray-http-upgrade: true");
  } else if (t === "grpc") {
    lines.push("    grpc-opts:", `      grpc-service-name: ${y(serviceNameOf(e))}`);
  } else if (t === "h2") {
    lines.push("    h2-opts:", `      path: ${y(pathOf(e))}`);
    if (e.host) lines.push("      host:", `        - ${y(e.host)}`);
  } else if (t === "xhttp") {
    lines.push("    xhttp-opts:", `      path: ${y(pathOf(e))}`, "      mode: auto");
    if (e.host) lines.push(`      host: ${y(e.host)}`);
  }
  // Trojan is always TLS in mihomo (no `tls` key); its server name is `sni`.
  if (protocol === "trojan") {
    lines.push("    client-fingerprint: chrome");
    if (e.sni) lines.push(`    sni: ${y(e.sni)}`);
  } else if (e.security !== "none") {
    lines.push("    tls: true", "    client-fingerprint: chrome");
    if (e.sni) lines.push(`    servername: ${y(e.sni)}`);
  } else {
    lines.push("    tls: false");
  }
  if (e.security === "reality") {
    if (visionOf(e)) lines.push("    flow: xtls-rprx-vision");
    lines.push("    reality-opts:", `      public-key: ${y(e.realityPublicKey ?? "")}`, `      short-id: ${y(e.realityShortId ?? "")}`);
  }
  return lines;
}

export function renderClash(uuid: string, entries: readonly SubscriptionEntry[]): string {
  const names = proxyNames(entries);
  const lines = ["mixed-port: 7890", "allow-lan: false", "mode: rule", "log-level: warning", "proxies:"];
  entries.forEach((e, i) => lines.push(...clashProxy(uuid, e, names[i]!)));
  if (entries.length === 0) lines[lines.length - 1] = "proxies: []";
  lines.push("proxy-groups:", `  - name: ${y(CLASH_GROUP)}`, "    type: select", "    proxies:");
  for (const n of names) lines.push(`      - ${y(n)}`);
  lines.push("      - DIRECT", "rules:", `  - MATCH,${CLASH_GROUP}`, "");
  return lines.join("\n");
}

/** sing-box's V2Ray transport object (SagerNet/sing-box option/v2ray_transport.go); tcp has none. */
function singboxTransport(e: SubscriptionEntry): Record<string, unknown> | null {
  switch (transportOf(e)) {
    case "tcp":
    case "xhttp":
      return null;
    case "ws":
      return { type: "ws", path: pathOf(e), ...(e.host ? { headers: { Host: e.host } } : {}) };
    case "httpupgrade":
      return { type: "httpupgrade", path: pathOf(e), ...(e.host ? { host: e.host } : {}) };
    case "grpc":
      return { type: "grpc", service_name: serviceNameOf(e) };
    case "h2":
      return { type: "http", path: pathOf(e), ...(e.host ? { host: [e.host] } : {}) };
  }
}

/** sing-box has no XHTTP: such entries are left out of its profile (the other formats carry them). */
export const singboxServes = (e: SubscriptionEntry) => transportOf(e) !== "xhttp";

function singboxOutbound(uuid: string, e: SubscriptionEntry, tag: string): Record<string, unknown> {
  const protocol = protocolOf(e);
  if (protocol === "shadowsocks") return { type: "shadowsocks", tag, server: e.address, server_port: e.port, method: e.ssMethod ?? "aes-256-gcm", password: ssPassword(uuid, e) };
  const transport = singboxTransport(e);
  return {
    type: protocol,
    tag,
    server: e.address,
    server_port: e.port,
    ...(protocol === "trojan" ? { password: trojanPassword(uuid) } : { uuid }),
    ...(protocol === "vmess" ? { security: "auto", alter_id: 0 } : {}),
    ...(visionOf(e) ? { flow: "xtls-rprx-vision" } : {}),
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
    ...(transport ? { transport } : {}),
  };
}

export function renderSingbox(uuid: string, allEntries: readonly SubscriptionEntry[]): string {
  const entries = allEntries.filter(singboxServes);
  const names = proxyNames(entries);
  const outbounds: unknown[] = entries.map((e, i) => singboxOutbound(uuid, e, names[i]!));
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

/** The one entry a device the device limit refuses gets (core/devices.ts), in every format. */
export function deviceRefusalMessage(r: { reason: "device-limit"; limit: number } | { reason: "no-device-id" }): string {
  if (r.reason === "no-device-id") return "⛔ This app sends no device id — use an app that does, or contact your provider";
  return `⛔ Device limit reached (${r.limit}) — remove a device or contact your provider`;
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
