/**
 * Subscription bodies for VPN apps (DESIGN §4): share links (base64, the default), JSON,
 * Clash (mihomo) YAML and sing-box JSON. Pure functions of the chosen entries.
 */

export interface SubscriptionEntry {
  routeId: string;
  route: string;
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
  let tail = linkTails.get(e);
  if (tail === undefined) {
    tail = linkTail(e);
    linkTails.set(e, tail);
  }
  return `vless://${uuid}@${tail}`;
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

export function renderBase64(uuid: string, entries: readonly SubscriptionEntry[]): string {
  return Buffer.from(entries.map((e) => vlessShareLink(uuid, e)).join("\n"), "utf8").toString("base64");
}

export function renderJson(uuid: string, entries: readonly SubscriptionEntry[]): string {
  return JSON.stringify({
    routes: entries.map((e) => ({
      routeId: e.routeId,
      route: e.route,
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
      inbounds: [{ type: "tun", tag: "tun-in", address: ["172.19.0.1/30"], auto_route: true, strict_route: true }],
      outbounds,
      route: { final: SINGBOX_SELECTOR, auto_detect_interface: true },
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
