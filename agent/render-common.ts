/**
 * What both cores' configs share: the stats/API plumbing that lets the agent read per-user
 * counters, the choice of the API port, and the edge routing that keeps subscribers off the
 * server's own network (core/edge.ts). Pure: config in, JSON out.
 */
import type { AgentConfig, AgentInbound, AgentUser } from "../core/agent-wire";
import { shadowsocksUserSecret, trojanPassword } from "../core/credentials";
import { BLOCKED_CIDRS, LOCAL_HOST_CIDRS, isBlockedAddress, parseAllowedDestinations, parseIp, type AllowedDestination } from "../core/edge";

/** Clients per part of ClientList.jsonParts. */
const CLIENTS_PER_PART = 10_000;

/**
 * How a protocol names a user in the core's clients (issue 26): VLESS and VMess by the UUID,
 * Trojan and Shadowsocks by a secret derived from it (core/credentials.ts), which the share
 * links carry too. `ss-aead` writes the cipher on every client (Xray's multi-user form of the
 * older ciphers); `ss-2022` only the user's key (the cipher and server key are the inbound's).
 */
export type ClientCredential = { kind: "id" } | { kind: "trojan" } | { kind: "ss-aead"; method: string } | { kind: "ss-2022"; method: string };

export type CoreClient = { email: string; level: 0 } & ({ id: string; flow?: string } | { password: string; method?: string });

/**
 * An inbound's clients (level 0, the inbound's flow when it has one), made only when written:
 * at a million users the objects would cost more than the users themselves. JSON.stringify
 * gives the array (small configs, `xray api adu` bodies); the config file is written from
 * jsonParts (state.ts jsonParts).
 */
export class ClientList {
  constructor(
    readonly users: readonly AgentUser[],
    /** The VLESS flow, "" for none. */
    readonly flow: string,
    readonly credential: ClientCredential = { kind: "id" },
  ) {}

  get length(): number {
    return this.users.length;
  }

  /** The same kind of clients for other users (the clients an `xray api adu` adds). */
  withUsers(users: readonly AgentUser[]): ClientList {
    return new ClientList(users, this.flow, this.credential);
  }

  toJSON(): CoreClient[] {
    const c = this.credential;
    switch (c.kind) {
      case "id":
        return this.users.map((u) => (this.flow ? { id: u.id, email: u.email, level: 0, flow: this.flow } : { id: u.id, email: u.email, level: 0 }));
      case "trojan":
        return this.users.map((u) => ({ password: u.password ?? trojanPassword(u.id), email: u.email, level: 0 }));
      case "ss-aead":
        return this.users.map((u) => ({ password: shadowsocksUserSecret(u.id, c.method), method: c.method, email: u.email, level: 0 }));
      case "ss-2022":
        return this.users.map((u) => ({ password: shadowsocksUserSecret(u.id, c.method), email: u.email, level: 0 }));
    }
  }

  /** The array's JSON text, CLIENTS_PER_PART clients a part: only one part's objects exist at a time. */
  *jsonParts(): Generator<string> {
    const users = this.users;
    if (users.length === 0) yield "[]";
    for (let from = 0; from < users.length; from += CLIENTS_PER_PART) {
      // JSON.stringify of short-lived objects: several times faster than concatenating the text.
      const part = JSON.stringify(this.withUsers(users.slice(from, from + CLIENTS_PER_PART)).toJSON());
      yield `${from === 0 ? "[" : ","}${part.slice(1, -1)}${from + CLIENTS_PER_PART >= users.length ? "]" : ""}`;
    }
  }
}

export interface UnservedInbound {
  inboundId: string;
  reason: string;
}

/** A rendered core config plus what it leaves out and why. */
export interface RenderedCore {
  /** The core's JSON config. */
  json: Record<string, unknown>;
  /** The inbounds this config serves (their ports are checked for listenerAlive). */
  served: AgentInbound[];
  unserved: UnservedInbound[];
  /** One line per thing worth logging once (dropped flows, skipped inbounds). */
  notes: string[];
  apiPort: number;
}

export interface TlsFiles {
  certificateFile: string;
  keyFile: string;
}

export interface RenderOptions {
  /** Preferred API port on 127.0.0.1; moved up past any inbound port that takes it. */
  apiPort: number;
  /** The server's own addresses besides `server.address`: the agent's network interfaces. */
  localAddresses?: readonly string[];
  /**
   * Why a TLS inbound's files cannot be used (missing, unreadable), null when they can. The
   * core refuses a whole config over one missing file, so such an inbound is left out and
   * reported unserved instead. Absent: not checked (render stays pure for tests).
   */
  tlsFileProblem?: (files: TlsFiles) => string | null;
}

/** The tag of the API inbound, routing rule and outbound (the core registers the outbound). */
export const API_TAG = "api";
/** The freedom outbound: the first one, so it is where unmatched traffic goes. */
export const DIRECT_TAG = "direct";
/** The blackhole outbound for what subscribers may not reach. */
export const BLOCKED_TAG = "blocked";

export const TLS_WITHOUT_FILES = "a TLS inbound needs certificate and key file paths (set them on the inbound in the panel)";

/** A TLS inbound's security settings, or why it cannot be served. */
export function tlsSecurity(inbound: AgentInbound, options: RenderOptions): Record<string, unknown> | string {
  if (!inbound.tls) return TLS_WITHOUT_FILES;
  const problem = options.tlsFileProblem?.(inbound.tls) ?? null;
  if (problem) return problem;
  return { security: "tls", tlsSettings: { certificates: [{ certificateFile: inbound.tls.certificateFile, keyFile: inbound.tls.keyFile }] } };
}

/** A TLS inbound's stream settings (its transport and TLS), or why it cannot be served. */
export function tlsStream(inbound: AgentInbound, options: RenderOptions, core: "xray" | "v2ray" = "xray"): Record<string, unknown> | string {
  const tls = tlsSecurity(inbound, options);
  return typeof tls === "string" ? tls : { ...transportStream(inbound, core), ...tls };
}

/**
 * The transport half of an inbound's stream settings, as each core spells it (shapes from
 * XTLS/Xray-examples and v2fly's 4.x docs): Xray names the Host header `host` in ws and
 * HTTPUpgrade, v2ray 4.x in ws `headers.Host`; h2 is network "http" with a list of hosts.
 */
export function transportStream(inbound: AgentInbound, core: "xray" | "v2ray"): Record<string, unknown> {
  const path = inbound.path ?? "/";
  const host = inbound.host;
  switch (inbound.transport ?? "tcp") {
    case "tcp":
      return { network: "tcp" };
    case "ws":
      return { network: "ws", wsSettings: core === "xray" ? { path, ...(host ? { host } : {}) } : { path, ...(host ? { headers: { Host: host } } : {}) } };
    case "grpc":
      return { network: "grpc", grpcSettings: { serviceName: inbound.serviceName ?? "grpc" } };
    case "httpupgrade":
      return { network: "httpupgrade", httpupgradeSettings: { path, ...(host ? { host } : {}) } };
    case "xhttp":
      return { network: "xhttp", xhttpSettings: { path, ...(host ? { host } : {}), mode: "auto" } };
    case "h2":
      return { network: "http", httpSettings: { path, ...(host ? { host: [host] } : {}) } };
  }
}

/**
 * The protocol and settings of an inbound for the given users. VLESS and VMess clients carry
 * the UUID, Trojan and Shadowsocks ones the derived secret (ClientCredential).
 */
export function protocolSettings(inbound: AgentInbound, users: readonly AgentUser[], flow: string): { protocol: string; settings: Record<string, unknown> & { clients: ClientList } } {
  switch (inbound.protocol) {
    case "vless":
      return { protocol: "vless", settings: { clients: new ClientList(users, flow), decryption: "none" } };
    case "vmess":
      return { protocol: "vmess", settings: { clients: new ClientList(users, "") } };
    case "trojan":
      return { protocol: "trojan", settings: { clients: new ClientList(users, "", { kind: "trojan" }) } };
    case "shadowsocks": {
      const ss = inbound.shadowsocks;
      const method = ss?.method ?? "aes-256-gcm";
      // SS-2022: the server key is the inbound's, each client holds only its own key.
      if (ss?.serverKey) return { protocol: "shadowsocks", settings: { method, password: ss.serverKey, clients: new ClientList(users, "", { kind: "ss-2022", method }), network: "tcp,udp" } };
      return { protocol: "shadowsocks", settings: { clients: new ClientList(users, "", { kind: "ss-aead", method }), network: "tcp,udp" } };
    }
  }
}

/** What the edge rules are made of for one server. */
export interface EdgePlan {
  /** Where the core's API could be reached: loopback, "this host" and the server's own addresses. */
  apiAddresses: string[];
  /** The operator's exact exceptions (core/edge.ts), in their order. */
  allowed: AllowedDestination[];
  /** `server.address` when it is a name: blocked by name too, whatever it resolves to. */
  ownHostname: string | null;
  /** Every blocked range plus the server's own addresses outside them. */
  blocked: string[];
}

function bareIp(s: string): string | null {
  const t = s.trim().replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, "").toLowerCase();
  return parseIp(t) ? t : null;
}

export function edgePlan(config: AgentConfig, localAddresses: readonly string[] = []): EdgePlan {
  const own: string[] = [];
  for (const a of [config.server.address, ...localAddresses]) {
    const ip = bareIp(a);
    if (ip && !own.includes(ip)) own.push(ip);
  }
  const serverIsName = bareIp(config.server.address) === null;
  return {
    apiAddresses: [...LOCAL_HOST_CIDRS, ...own],
    allowed: parseAllowedDestinations(config.allowedPrivateDestinations ?? []),
    ownHostname: serverIsName ? config.server.address.trim().replace(/\.$/, "").toLowerCase() : null,
    blocked: [...BLOCKED_CIDRS, ...own.filter((ip) => !isBlockedAddress(parseIp(ip)!))],
  };
}

/**
 * The routing rules, in order: the API inbound to the API; the API port on any local address
 * to the blackhole (before the exceptions, so no allowed range can open it); the operator's
 * exceptions to freedom; the server's own name and every blocked range to the blackhole.
 * With domainStrategy IPIfNonMatch a name that matches no rule is resolved and its addresses
 * go through the same rules, so "localhost" or a name pointing at 10.0.0.5 is caught too. Not
 * IPOnDemand: Xray would then match the IPs of a sniffed name (routeOnly) instead of the
 * address really dialled, so 127.0.0.1 with a TLS SNI of example.com would pass.
 */
export function edgeRoutingRules(plan: EdgePlan, apiPort: number): Record<string, unknown>[] {
  const rules: Record<string, unknown>[] = [
    { type: "field", inboundTag: [API_TAG], outboundTag: API_TAG },
    { type: "field", ip: plan.apiAddresses, port: String(apiPort), outboundTag: BLOCKED_TAG },
  ];
  for (const a of plan.allowed) rules.push({ type: "field", ip: [a.ip], ...(a.port !== null ? { port: String(a.port) } : {}), outboundTag: DIRECT_TAG });
  if (plan.ownHostname) rules.push({ type: "field", domain: [`full:${plan.ownHostname}`], outboundTag: BLOCKED_TAG });
  rules.push({ type: "field", ip: plan.blocked, outboundTag: BLOCKED_TAG });
  return rules;
}

/** The preferred port unless an inbound uses it: then the next one no inbound uses. */
export function chooseApiPort(preferred: number, inbounds: readonly AgentInbound[]): number {
  const taken = new Set(inbounds.map((i) => i.port));
  let port = preferred;
  for (let n = 0; n < 65535 && taken.has(port); n++) port = port >= 65535 ? 1024 : port + 1;
  return port;
}

/** The API inbound, stats, policy, routing and outbound parts common to Xray and v2ray. */
export function commonSections(config: AgentConfig, apiPort: number, services: string[], options: Pick<RenderOptions, "localAddresses"> = {}) {
  const plan = edgePlan(config, options.localAddresses);
  return {
    plan,
    // Access lines would be one per connection: too many to forward; errors still come.
    log: { loglevel: "warning", access: "none" },
    stats: {},
    api: { tag: API_TAG, services },
    policy: {
      levels: { "0": { statsUserUplink: true, statsUserDownlink: true } },
      system: { statsInboundUplink: false, statsInboundDownlink: false },
    },
    apiInbound: { tag: API_TAG, listen: "127.0.0.1", port: apiPort, protocol: "dokodemo-door", settings: { address: "127.0.0.1" } },
    outbounds: [
      { tag: DIRECT_TAG, protocol: "freedom", settings: {} as Record<string, unknown> },
      { tag: BLOCKED_TAG, protocol: "blackhole", settings: {} },
    ],
    routing: { domainStrategy: "IPIfNonMatch", rules: edgeRoutingRules(plan, apiPort) },
  };
}

export function assemble(common: ReturnType<typeof commonSections>, inbounds: unknown[]): Record<string, unknown> {
  return {
    log: common.log,
    stats: common.stats,
    api: common.api,
    policy: common.policy,
    inbounds: [common.apiInbound, ...inbounds],
    outbounds: common.outbounds,
    routing: common.routing,
  };
}
