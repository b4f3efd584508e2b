/**
 * What both cores' configs share: the stats/API plumbing that lets the agent read per-user
 * counters, and the choice of the API port. Pure: config in, JSON out.
 */
import type { AgentConfig, AgentInbound } from "../core/agent-wire";

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

export interface RenderOptions {
  /** Preferred API port on 127.0.0.1; moved up past any inbound port that takes it. */
  apiPort: number;
}

/** The tag of the API inbound, routing rule and outbound (the core registers the outbound). */
export const API_TAG = "api";

/** The preferred port unless an inbound uses it: then the next one no inbound uses. */
export function chooseApiPort(preferred: number, inbounds: readonly AgentInbound[]): number {
  const taken = new Set(inbounds.map((i) => i.port));
  let port = preferred;
  for (let n = 0; n < 65535 && taken.has(port); n++) port = port >= 65535 ? 1024 : port + 1;
  return port;
}

/** The API inbound, stats, policy, routing and outbound parts common to Xray and v2ray. */
export function commonSections(config: AgentConfig, apiPort: number, services: string[]) {
  void config;
  return {
    // Access lines would be one per connection: too many to forward; errors still come.
    log: { loglevel: "warning", access: "none" },
    stats: {},
    api: { tag: API_TAG, services },
    policy: {
      levels: { "0": { statsUserUplink: true, statsUserDownlink: true } },
      system: { statsInboundUplink: false, statsInboundDownlink: false },
    },
    apiInbound: { tag: API_TAG, listen: "127.0.0.1", port: apiPort, protocol: "dokodemo-door", settings: { address: "127.0.0.1" } },
    outbounds: [{ tag: "direct", protocol: "freedom", settings: {} }],
    routing: { rules: [{ type: "field", inboundTag: [API_TAG], outboundTag: API_TAG }] },
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
