/**
 * v2ray 4.x config from the panel's agent config: VLESS over TCP with TLS or none. v2ray has
 * no Reality and 4.34 knows no `xtls-rprx-vision` flow, so Reality inbounds are skipped (and
 * reported to the panel as unserved) and the vision flow is dropped (its clients still connect
 * when the link's flow is ignored; the panel is told through the notes in the log).
 */
import type { AgentConfig, AgentInbound } from "../core/agent-wire";
import { assemble, chooseApiPort, ClientList, commonSections, tlsStream, type RenderOptions, type RenderedCore, type UnservedInbound } from "./render-common";

export const REALITY_ON_V2RAY = "Reality needs Xray-core: v2ray 4.x cannot serve it (run the agent with --core xray)";

export function renderV2ray(config: AgentConfig, options: RenderOptions): RenderedCore {
  const apiPort = chooseApiPort(options.apiPort, config.inbounds);
  const served: AgentInbound[] = [];
  const unserved: UnservedInbound[] = [];
  const notes: string[] = [];
  const inbounds: unknown[] = [];
  const clients = new ClientList(config.users, "");
  for (const inbound of config.inbounds) {
    let stream: Record<string, unknown>;
    if (inbound.security === "reality") {
      unserved.push({ inboundId: inbound.id, reason: REALITY_ON_V2RAY });
      notes.push(`inbound ${inbound.name} (port ${inbound.port}) is skipped: ${REALITY_ON_V2RAY}`);
      continue;
    } else if (inbound.security === "tls") {
      const tls = tlsStream(inbound, options);
      if (typeof tls === "string") {
        unserved.push({ inboundId: inbound.id, reason: tls });
        notes.push(`inbound ${inbound.name} (port ${inbound.port}) is not served: ${tls}`);
        continue;
      }
      stream = tls;
    } else {
      stream = { network: "tcp", security: "none" };
    }
    if (inbound.flow !== "") notes.push(`inbound ${inbound.name} (port ${inbound.port}): flow ${inbound.flow} is not supported by v2ray 4.x, served without it`);
    served.push(inbound);
    inbounds.push({ tag: inbound.tag, port: inbound.port, protocol: "vless", settings: { clients, decryption: "none" }, streamSettings: stream });
  }
  const common = commonSections(config, apiPort, ["StatsService"], options);
  return { json: assemble(common, inbounds), served, unserved, notes, apiPort };
}
