import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chooseApiPort } from "./render-common";
import { REALITY_ON_V2RAY, renderV2ray } from "./render-v2ray";
import { renderXray } from "./render-xray";
import { agentConfig, IDS, inbound, makeCert, requireV2ray, tempDir } from "./test-support";

const reality = inbound({
  id: IDS.inReality,
  port: 443,
  security: "reality",
  sni: "www.microsoft.com",
  flow: "xtls-rprx-vision",
  reality: { privateKey: "cK8uY2M7rQ_private", publicKey: "pub", shortIds: ["", "0123456789abcdef"], serverNames: ["www.microsoft.com", "microsoft.com"], dest: "www.microsoft.com:443" },
});
const tls = inbound({ id: IDS.inTls, port: 8443, security: "tls", sni: "vpn.example.com", tls: { certificateFile: "/etc/ssl/vpn.pem", keyFile: "/etc/ssl/vpn.key" } });
const none = inbound({ id: IDS.inNone, port: 8080, security: "none" });
const users = [
  { id: IDS.alice, email: "sub-alice" },
  { id: IDS.bob, email: "sub-bob" },
];

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const inboundByTag = (json: Json, tag: string) => (json.inbounds as Json[]).find((i) => i.tag === tag)!;

function expectStatsPlumbing(json: Json, apiPort: number, services: string[]) {
  expect(json.stats).toEqual({});
  expect(json.api).toEqual({ tag: "api", services });
  expect(json.policy.levels["0"]).toEqual({ statsUserUplink: true, statsUserDownlink: true });
  expect(inboundByTag(json, "api")).toEqual({ tag: "api", listen: "127.0.0.1", port: apiPort, protocol: "dokodemo-door", settings: { address: "127.0.0.1" } });
  expect(json.routing.rules).toContainEqual({ type: "field", inboundTag: ["api"], outboundTag: "api" });
  expect(json.outbounds[0]).toMatchObject({ protocol: "freedom" });
  expect(json.log.loglevel).toBe("warning");
}

describe("renderXray", () => {
  const r = renderXray(agentConfig({ inbounds: [reality, tls, none], users }), { apiPort: 10085 });
  const json = r.json as Json;

  it("renders Reality with the vision flow, dest, server names, private key and short ids", () => {
    expect(inboundByTag(json, "in-443")).toMatchObject({
      port: 443,
      protocol: "vless",
      settings: {
        decryption: "none",
        clients: [
          { id: IDS.alice, email: "sub-alice", flow: "xtls-rprx-vision" },
          { id: IDS.bob, email: "sub-bob", flow: "xtls-rprx-vision" },
        ],
      },
      streamSettings: {
        network: "tcp",
        security: "reality",
        realitySettings: { show: false, dest: "www.microsoft.com:443", serverNames: ["www.microsoft.com", "microsoft.com"], privateKey: "cK8uY2M7rQ_private", shortIds: ["", "0123456789abcdef"] },
      },
    });
    // The public key is for links only: the server config carries the private one.
    expect(JSON.stringify(inboundByTag(json, "in-443"))).not.toContain('"pub"');
  });

  it("renders TLS with the certificate files and none without flow", () => {
    expect(inboundByTag(json, "in-8443").streamSettings).toEqual({ network: "tcp", security: "tls", tlsSettings: { certificates: [{ certificateFile: "/etc/ssl/vpn.pem", keyFile: "/etc/ssl/vpn.key" }] } });
    expect(inboundByTag(json, "in-8080").streamSettings).toEqual({ network: "tcp", security: "none" });
    expect(inboundByTag(json, "in-8080").settings.clients[0]).toEqual({ id: IDS.alice, email: "sub-alice", level: 0 });
  });

  it("turns on HandlerService and StatsService", () => {
    expectStatsPlumbing(json, 10085, ["HandlerService", "StatsService"]);
    expect(r.served.map((i) => i.port)).toEqual([443, 8443, 8080]);
    expect(r.unserved).toEqual([]);
  });

  it("reports a TLS inbound without files as unserved", () => {
    const out = renderXray(agentConfig({ inbounds: [{ ...tls, tls: null }] }), { apiPort: 10085 });
    expect(out.unserved).toEqual([{ inboundId: IDS.inTls, reason: expect.stringContaining("certificate and key") }]);
  });
});

describe("renderV2ray", () => {
  const r = renderV2ray(agentConfig({ inbounds: [reality, tls, { ...none, flow: "xtls-rprx-vision" }], users }), { apiPort: 10085 });
  const json = r.json as Json;

  it("skips Reality with one reason and reports it unserved", () => {
    expect(r.unserved).toEqual([{ inboundId: IDS.inReality, reason: REALITY_ON_V2RAY }]);
    expect(r.notes.filter((n) => n.includes("Reality"))).toHaveLength(1);
    expect((json.inbounds as Json[]).some((i) => i.port === 443)).toBe(false);
    expect(r.served.map((i) => i.port)).toEqual([8443, 8080]);
  });

  it("renders none and TLS with decryption none and level-0 clients, and drops the vision flow", () => {
    const n = inboundByTag(json, "in-8080");
    expect(n.settings).toEqual({ decryption: "none", clients: [{ id: IDS.alice, email: "sub-alice", level: 0 }, { id: IDS.bob, email: "sub-bob", level: 0 }] });
    expect(JSON.stringify(json)).not.toContain("xtls-rprx-vision");
    expect(r.notes.some((x) => x.includes("flow xtls-rprx-vision is not supported by v2ray"))).toBe(true);
    expect(inboundByTag(json, "in-8443").streamSettings.tlsSettings.certificates).toEqual([{ certificateFile: "/etc/ssl/vpn.pem", keyFile: "/etc/ssl/vpn.key" }]);
    expectStatsPlumbing(json, 10085, ["StatsService"]);
  });

  describe("is accepted by the real v2ray -test", () => {
    const bins = requireV2ray();
    const dir = tempDir("rb-render-");
    afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
    it("with a none and a TLS inbound", () => {
      const cert = makeCert(dir);
      const out = renderV2ray(agentConfig({ inbounds: [none, { ...tls, tls: { certificateFile: cert.certFile, keyFile: cert.keyFile } }], users }), { apiPort: 10085 });
      const file = path.join(dir, "c.json");
      fs.writeFileSync(file, JSON.stringify(out.json));
      expect(execFileSync(bins.bin, ["-test", "-config", file], { encoding: "utf8" })).toContain("Configuration OK");
    });
  });
});

describe("chooseApiPort", () => {
  it("moves past inbound ports", () => {
    expect(chooseApiPort(10085, [none])).toBe(10085);
    expect(chooseApiPort(10085, [{ ...none, port: 10085 }, { ...none, port: 10086 }])).toBe(10087);
    expect(renderV2ray(agentConfig({ inbounds: [{ ...none, port: 10085 }] }), { apiPort: 10085 }).apiPort).toBe(10086);
  });
});
