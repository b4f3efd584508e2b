/**
 * Xray-core config from the panel's agent config: VLESS, VMess, Trojan and Shadowsocks over
 * tcp, ws, gRPC, HTTPUpgrade and XHTTP with Reality, TLS or none (h2, which Xray no longer
 * loads, is reported not served; the combinations
 * core/inbound-protocols.ts allows), the inbound's flow on every VLESS client (the share links
 * carry the same flow). Shapes follow XTLS/Xray-examples (render.xray-examples.test.ts checks
 * them field by field) and Xray's API docs; HandlerService is on so users can be added and
 * removed live (`xray api adu` / `rmu`).
 */
import { usersOfInbound, type AgentConfig, type AgentInbound, type AgentUser } from "../core/agent-wire";
import { xrayCannotServe } from "../core/inbound-protocols";
import { assemble, chooseApiPort, commonSections, protocolSettings, tlsStream, transportStream, type EdgePlan, type RenderOptions, type RenderedCore, type UnservedInbound } from "./render-common";

/**
 * The version each REALITY client writes into its ClientHello (the session id's first three
 * bytes), which the server compares with `minClientVer`:
 * - Xray-core clients (share links in v2rayN/v2rayNG, the JSON format) send their own version;
 *   REALITY arrived in Xray 1.8.0, so none sends less;
 * - sing-box (the sing-box format) sends 1.8.1 (SagerNet/sing-box common/tls/reality_client.go);
 * - mihomo (the Clash format) sends 1.8.2 (MetaCubeX/mihomo component/tls/reality.go).
 */
export const REALITY_CLIENT_VERSIONS = { xray: "1.8.0", singBox: "1.8.1", mihomo: "1.8.2" } as const;

/**
 * REALITY's `minClientVer`, always set: since Xray 26.7.11 a REALITY inbound without it refuses
 * clients below 26.3.27 (infra/conf/transport_security.go), which sends sing-box, mihomo and
 * older Xray clients to the masquerade site without an error. 1.8.0, the lowest of
 * REALITY_CLIENT_VERSIONS, lets every one of them in. Xray logs that changing the default makes
 * the server easier to spot; serving the apps the subscription formats promise comes first.
 */
export const REALITY_MIN_CLIENT_VERSION = "1.8.0";

function streamSettings(inbound: AgentInbound, options: RenderOptions): Record<string, unknown> | string {
  switch (inbound.security) {
    case "none":
      return { ...transportStream(inbound, "xray"), security: "none" };
    case "tls":
      return tlsStream(inbound, options, "xray");
    case "reality":
      if (!inbound.reality) return "a Reality inbound needs its keys, short ids, server names and dest";
      return {
        ...transportStream(inbound, "xray"),
        security: "reality",
        realitySettings: {
          show: false,
          dest: inbound.reality.dest,
          xver: 0,
          serverNames: inbound.reality.serverNames,
          privateKey: inbound.reality.privateKey,
          shortIds: inbound.reality.shortIds,
          minClientVer: REALITY_MIN_CLIENT_VERSION,
        },
      };
  }
}

/** One inbound with the given users: also the body of `xray api adu` for user changes. */
export function xrayInbound(inbound: AgentInbound, users: readonly AgentUser[], stream: Record<string, unknown>) {
  return {
    tag: inbound.tag,
    port: inbound.port,
    ...protocolSettings(inbound, users, inbound.flow),
    streamSettings: stream,
    // routeOnly: sniffing names the destination for routing without rewriting it.
    sniffing: { enabled: true, destOverride: ["http", "tls", "quic"], routeOnly: true },
  };
}

/**
 * Freedom's finalRules (Xray-core ≥ 26.5, infra/conf/freedom.go): checked against the address
 * freedom really dials, after its own DNS lookup, so a name that resolved to a public address
 * for the router and resolves to a private one for the dial (DNS rebinding) is still refused.
 * Xray's own default there blocks private ranges, so the operator's exceptions are repeated as
 * allow rules, after the API port. Older Xray ignores the field (the routing rules still hold).
 */
export function xrayFinalRules(plan: EdgePlan, apiPort: number): Record<string, unknown>[] {
  return [
    { action: "block", ip: plan.apiAddresses, port: String(apiPort) },
    ...plan.allowed.map((a) => ({ action: "allow", ip: [a.ip], ...(a.port !== null ? { port: String(a.port) } : {}) })),
    { action: "block", ip: plan.blocked },
  ];
}

export function renderXray(config: AgentConfig, options: RenderOptions): RenderedCore {
  const apiPort = chooseApiPort(options.apiPort, config.inbounds);
  const served: AgentInbound[] = [];
  const unserved: UnservedInbound[] = [];
  const notes: string[] = [];
  const inbounds: unknown[] = [];
  for (const inbound of config.inbounds) {
    const stream = xrayCannotServe(inbound) ?? streamSettings(inbound, options);
    if (typeof stream === "string") {
      unserved.push({ inboundId: inbound.id, reason: stream });
      notes.push(`inbound ${inbound.name} (port ${inbound.port}) is not served: ${stream}`);
      continue;
    }
    served.push(inbound);
    // Only the users whose plan gives this inbound (issue 27 point 2).
    inbounds.push(xrayInbound(inbound, usersOfInbound(inbound, config.users), stream));
  }
  const common = commonSections(config, apiPort, ["HandlerService", "StatsService"], options);
  common.outbounds[0]!.settings = { finalRules: xrayFinalRules(common.plan, apiPort) };
  return { json: assemble(common, inbounds), served, unserved, notes, apiPort };
}
