/**
 * v2ray 4.x config from the panel's agent config: VLESS, VMess and Trojan over tcp, ws and h2
 * with TLS or none. What 4.34 cannot serve (Reality, Shadowsocks with one key per subscriber,
 * gRPC, HTTPUpgrade, XHTTP: core/inbound-protocols.ts v2rayCannotServe) is skipped and
 * reported to the panel as unserved. 4.34 knows no `xtls-rprx-vision` flow, so it is dropped
 * (its clients still connect when the link's flow is ignored; the panel is told through the
 * notes in the log).
 */
import { usersOfInbound, type AgentConfig, type AgentInbound } from "../core/agent-wire";
import { v2rayCannotServe } from "../core/inbound-protocols";
import { assemble, chooseApiPort, commonSections, protocolSettings, tlsStream, transportStream, type RenderOptions, type RenderedCore, type UnservedInbound } from "./render-common";

export const REALITY_ON_V2RAY = v2rayCannotServe({ protocol: "vless", security: "reality" })!;

export function renderV2ray(config: AgentConfig, options: RenderOptions): RenderedCore {
  const apiPort = chooseApiPort(options.apiPort, config.inbounds);
  const served: AgentInbound[] = [];
  const unserved: UnservedInbound[] = [];
  const notes: string[] = [];
  const inbounds: unknown[] = [];
  for (const inbound of config.inbounds) {
    let stream: Record<string, unknown>;
    const cannot = v2rayCannotServe(inbound);
    if (cannot !== null) {
      unserved.push({ inboundId: inbound.id, reason: cannot });
      notes.push(`inbound ${inbound.name} (port ${inbound.port}) is skipped: ${cannot}`);
      continue;
    } else if (inbound.security === "tls") {
      const tls = tlsStream(inbound, options, "v2ray");
      if (typeof tls === "string") {
        unserved.push({ inboundId: inbound.id, reason: tls });
        notes.push(`inbound ${inbound.name} (port ${inbound.port}) is not served: ${tls}`);
        continue;
      }
      stream = tls;
    } else {
      stream = { ...transportStream(inbound, "v2ray"), security: "none" };
    }
    if (inbound.flow !== "") notes.push(`inbound ${inbound.name} (port ${inbound.port}): flow ${inbound.flow} is not supported by v2ray 4.x, served without it`);
    served.push(inbound);
    inbounds.push({ tag: inbound.tag, port: inbound.port, ...protocolSettings(inbound, usersOfInbound(inbound, config.users), ""), streamSettings: stream });
  }
  const common = commonSections(config, apiPort, ["StatsService"], options);
  return { json: assemble(common, inbounds), served, unserved, notes, apiPort };
}
