/**
 * The protocols and transports an inbound may use (issue 26), which combinations the cores
 * accept, and which core serves what. Shared by the API, the form, the agent and the diagram:
 * browser-safe (no Node modules).
 */

export const PROTOCOLS = ["vless", "vmess", "trojan", "shadowsocks"] as const;
export type InboundProtocol = (typeof PROTOCOLS)[number];

export const TRANSPORTS = ["tcp", "ws", "grpc", "httpupgrade", "xhttp", "h2"] as const;
export type InboundTransport = (typeof TRANSPORTS)[number];

export type InboundSecurity = "reality" | "tls" | "none";

/**
 * Shadowsocks ciphers: the 2022 ones whose multi-user form Xray serves (a server key plus one
 * key per subscriber; 2022-blake3-chacha20-poly1305 has no multi-user form), and the AEAD ones.
 */
export const SS_METHODS = ["2022-blake3-aes-128-gcm", "2022-blake3-aes-256-gcm", "aes-128-gcm", "aes-256-gcm", "chacha20-ietf-poly1305"] as const;
export type SsMethod = (typeof SS_METHODS)[number];

/** SS-2022 keys are exactly this many random bytes (base64 in configs and links); AEAD ciphers take a password. */
export function ss2022KeyBytes(method: string): number | null {
  if (method === "2022-blake3-aes-128-gcm") return 16;
  if (method === "2022-blake3-aes-256-gcm") return 32;
  return null;
}

/**
 * What an inbound is when the input leaves a field out: VLESS over tcp with Reality. The API's
 * schema fills these in, storage reads a missing protocol or transport as them, and the form
 * starts from them, so a new inbound is the same wherever it is made.
 */
export const INBOUND_DEFAULTS = { protocol: "vless", transport: "tcp", security: "reality" } as const satisfies {
  protocol: InboundProtocol;
  transport: InboundTransport;
  security: InboundSecurity;
};

/** The Shadowsocks cipher the form offers first: SS-2022, one key per subscriber. */
export const DEFAULT_SS_METHOD: SsMethod = "2022-blake3-aes-128-gcm";

/**
 * An inbound's settings as the form edits them and createInbound takes them (name and port
 * beside). An absent protocol, transport or SS cipher is its INBOUND_DEFAULTS value (or none).
 */
export interface InboundSettings {
  protocol?: InboundProtocol;
  transport?: InboundTransport;
  path?: string | null;
  host?: string | null;
  serviceName?: string | null;
  ssMethod?: SsMethod | null;
  security: InboundSecurity;
  sni: string | null;
  realityDest?: string | null;
  realityServerNames?: string[];
  /** Absent: one is generated for Reality. */
  realityShortIds?: string[];
  tlsCertificateFile?: string | null;
  tlsKeyFile?: string | null;
}

export const PROTOCOL_LABELS: Record<InboundProtocol, string> = { vless: "VLESS", vmess: "VMess", trojan: "Trojan", shadowsocks: "SS" };
export const TRANSPORT_LABELS: Record<InboundTransport, string> = { tcp: "tcp", ws: "ws", grpc: "gRPC", httpupgrade: "HTTPUpgrade", xhttp: "XHTTP", h2: "h2" };
export const SECURITY_LABELS: Record<InboundSecurity, string> = { reality: "Reality", tls: "TLS", none: "none" };

/** Transports that carry an HTTP path (and may carry a Host header). */
export const PATH_TRANSPORTS: readonly InboundTransport[] = ["ws", "httpupgrade", "xhttp", "h2"];
export const usesPath = (t: InboundTransport) => PATH_TRANSPORTS.includes(t);
export const usesHost = usesPath;

/** "VMess·ws·TLS", "VLESS·tcp·Reality", "SS·tcp": the diagram chip's compact form. */
export function protocolSummary(i: { protocol: string; transport?: string | null; security: InboundSecurity }): string {
  const p = PROTOCOL_LABELS[i.protocol as InboundProtocol] ?? i.protocol;
  const t = TRANSPORT_LABELS[(i.transport ?? INBOUND_DEFAULTS.transport) as InboundTransport] ?? i.transport;
  return i.security === "none" ? `${p}·${t}` : `${p}·${t}·${SECURITY_LABELS[i.security]}`;
}

/** The fields the combination rules read. */
export interface ProtocolFields {
  protocol: InboundProtocol;
  transport: InboundTransport;
  security: InboundSecurity;
  path: string | null;
  serviceName: string | null;
  ssMethod: SsMethod | null;
}

const REALITY_TRANSPORTS: readonly InboundTransport[] = ["tcp", "grpc", "xhttp"];

/**
 * The combinations the cores refuse, as field → message (an empty list: the cores accept it).
 * Vision is not a field: the panel gives VLESS over tcp with Reality the xtls-rprx-vision flow
 * and every other combination none, so a Vision client never meets a transport it cannot use.
 */
export function protocolIssues(v: ProtocolFields): Array<{ path: string; message: string }> {
  const out: Array<{ path: string; message: string }> = [];
  const p = PROTOCOL_LABELS[v.protocol];
  const t = TRANSPORT_LABELS[v.transport];
  if (v.protocol === "shadowsocks") {
    if (v.transport !== "tcp") out.push({ path: "transport", message: `Shadowsocks runs over tcp only, not ${t}` });
    if (v.security !== "none") out.push({ path: "security", message: "Shadowsocks encrypts by itself: choose security none" });
    if (v.ssMethod === null) out.push({ path: "ssMethod", message: "Shadowsocks needs a cipher" });
  }
  if (v.security === "reality") {
    if (v.protocol !== "vless" && v.protocol !== "trojan" && v.protocol !== "shadowsocks") out.push({ path: "security", message: `Reality carries VLESS or Trojan only: choose TLS or none for ${p}` });
    else if (v.protocol !== "shadowsocks" && !REALITY_TRANSPORTS.includes(v.transport)) out.push({ path: "transport", message: `Reality runs over tcp, gRPC or XHTTP only, not ${t}: choose one of those, or TLS` });
  }
  if (v.protocol === "trojan" && v.security === "none") out.push({ path: "security", message: "Trojan needs TLS or Reality" });
  if (v.transport === "h2" && v.security !== "tls") out.push({ path: "security", message: "h2 needs TLS" });
  if (usesPath(v.transport) && v.path === null) out.push({ path: "path", message: `${t} needs a path, e.g. /${v.transport}` });
  if (v.transport === "grpc" && v.serviceName === null) out.push({ path: "serviceName", message: "gRPC needs a service name, e.g. grpc" });
  return out;
}

/**
 * Why v2ray 4.34 cannot serve this combination, null when it can: v2ray serves VLESS, VMess and
 * Trojan over tcp, ws and h2, with TLS or none; Shadowsocks only with one user (every inbound
 * here has one per subscriber), gRPC came in 4.36, HTTPUpgrade and XHTTP and Reality never.
 */
export function v2rayCannotServe(i: { protocol: string; transport?: string | null; security: InboundSecurity }): string | null {
  const transport = (i.transport ?? INBOUND_DEFAULTS.transport) as InboundTransport;
  if (i.security === "reality") return "Reality needs Xray-core: v2ray 4.x cannot serve it (run the agent with --core xray)";
  if (i.protocol === "shadowsocks") return "Shadowsocks with one key per subscriber needs Xray-core: v2ray 4.x serves one user only (run the agent with --core xray)";
  if (transport === "grpc" || transport === "httpupgrade" || transport === "xhttp") return `${TRANSPORT_LABELS[transport]} needs Xray-core: v2ray 4.34 cannot serve it (run the agent with --core xray)`;
  return null;
}

/**
 * Why Xray-core cannot serve this combination, null when it can. Xray removed the h2 transport
 * at the end of 2024: since 24.12 a config with `network: "http"` does not load at all ("The
 * feature HTTP transport … has been removed and migrated to XHTTP stream-one H2 & H3"), so an
 * h2 inbound rendered for it would take every other inbound of the server down with it.
 */
export function xrayCannotServe(i: { transport?: string | null }): string | null {
  if (i.transport === "h2") return "h2 needs v2ray: Xray-core removed it in 24.12 and refuses to start with it (run the agent with --core v2ray, or choose XHTTP, h2's successor in Xray)";
  return null;
}

/** What one of the two cores cannot serve, for the inbound form: the other core's reason first. */
export function coreNeeded(i: { protocol: string; transport?: string | null; security: InboundSecurity }): string | null {
  return v2rayCannotServe(i) ?? xrayCannotServe(i);
}
