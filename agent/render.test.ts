import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { agentConfigSchema } from "../core/agent-wire";
import { BLOCKED_CIDRS } from "../core/edge";
import { chooseApiPort, type RenderOptions } from "./render-common";
import { jsonParts } from "./state";
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
/** The config as the core reads it: the text the agent writes (clients are made only there). */
const written = (json: Record<string, unknown>): Json => JSON.parse([...jsonParts(json)].join("")) as Json;
const inboundByTag = (json: Json, tag: string) => (json.inbounds as Json[]).find((i) => i.tag === tag)!;

function expectStatsPlumbing(json: Json, apiPort: number, services: string[]) {
  expect(json.stats).toEqual({});
  expect(json.api).toEqual({ tag: "api", services });
  expect(json.policy.levels["0"]).toEqual({ statsUserUplink: true, statsUserDownlink: true });
  expect(inboundByTag(json, "api")).toEqual({ tag: "api", listen: "127.0.0.1", port: apiPort, protocol: "dokodemo-door", settings: { address: "127.0.0.1" } });
  expect(json.routing.rules[0]).toEqual({ type: "field", inboundTag: ["api"], outboundTag: "api" });
  expect(json.outbounds[0]).toMatchObject({ tag: "direct", protocol: "freedom" });
  expect(json.log.loglevel).toBe("warning");
}

describe("renderXray", () => {
  const r = renderXray(agentConfig({ inbounds: [reality, tls, none], users }), { apiPort: 10085 });
  const json = written(r.json);

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
        realitySettings: { show: false, dest: "www.microsoft.com:443", serverNames: ["www.microsoft.com", "microsoft.com"], privateKey: "cK8uY2M7rQ_private", shortIds: ["", "0123456789abcdef"], minClientVer: "1.8.0" },
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
  const json = written(r.json);

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

/** The routing rules every rendered config carries, whatever the core (issue 21, point 1). */
function expectEdgeRouting(render: (c: ReturnType<typeof agentConfig>, o: RenderOptions) => { json: Record<string, unknown> }) {
  const config = agentConfig({
    server: { id: IDS.server, name: "test", address: "203.0.113.7", enabled: true },
    inbounds: [none],
    allowedPrivateDestinations: ["127.0.0.1:8081", "10.0.0.0/24", "[fd00::/64]:443", "127.0.0.1:10085"],
  });
  const json = render(config, { apiPort: 10085, localAddresses: ["127.0.0.1", "10.0.0.5", "198.51.100.4", "fe80::1%eth0", "2001:db8::5"] }).json as Json;
  expect(json.routing.domainStrategy).toBe("IPIfNonMatch");
  expect(json.outbounds.map((o: Json) => [o.tag, o.protocol])).toEqual([
    ["direct", "freedom"],
    ["blocked", "blackhole"],
  ]);
  const own = ["203.0.113.7", "127.0.0.1", "10.0.0.5", "198.51.100.4", "fe80::1", "2001:db8::5"];
  expect(json.routing.rules).toEqual([
    { type: "field", inboundTag: ["api"], outboundTag: "api" },
    // The API port on any local address, before the exceptions: allowing it changes nothing.
    { type: "field", ip: ["0.0.0.0/8", "127.0.0.0/8", "::/128", "::1/128", ...own], port: "10085", outboundTag: "blocked" },
    { type: "field", ip: ["127.0.0.1"], port: "8081", outboundTag: "direct" },
    { type: "field", ip: ["10.0.0.0/24"], outboundTag: "direct" },
    { type: "field", ip: ["fd00::/64"], port: "443", outboundTag: "direct" },
    { type: "field", ip: ["127.0.0.1"], port: "10085", outboundTag: "direct" },
    // Every private range and the server's own public addresses.
    { type: "field", ip: [...BLOCKED_CIDRS, "203.0.113.7", "198.51.100.4", "2001:db8::5"], outboundTag: "blocked" },
  ]);
  for (const range of ["127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10", "::1/128", "fc00::/7", "fe80::/10", "224.0.0.0/4", "ff00::/8"]) {
    expect(BLOCKED_CIDRS).toContain(range);
  }
  // A server known by name: blocked by name too (an IP rule cannot match a name).
  const named = render(agentConfig({ server: { id: IDS.server, name: "t", address: "VPN1.example.com", enabled: true } }), { apiPort: 10085 }).json as Json;
  expect(named.routing.rules).toContainEqual({ type: "field", domain: ["full:vpn1.example.com"], outboundTag: "blocked" });
  expect(named.routing.rules.at(-1)).toEqual({ type: "field", ip: [...BLOCKED_CIDRS], outboundTag: "blocked" });
  return json;
}

describe("edge routing: subscribers stay off the server's own network", () => {
  it("v2ray: blackholes loopback, private, link-local, CGNAT, ULA, multicast and the server's own addresses", () => {
    const json = expectEdgeRouting(renderV2ray);
    expect(json.outbounds[0].settings).toEqual({});
  });

  it("Xray: the same rules, and freedom's finalRules check the address it really dials", () => {
    const json = expectEdgeRouting(renderXray);
    const own = ["203.0.113.7", "127.0.0.1", "10.0.0.5", "198.51.100.4", "fe80::1", "2001:db8::5"];
    expect(json.outbounds[0].settings.finalRules).toEqual([
      { action: "block", ip: ["0.0.0.0/8", "127.0.0.0/8", "::/128", "::1/128", ...own], port: "10085" },
      { action: "allow", ip: ["127.0.0.1"], port: "8081" },
      { action: "allow", ip: ["10.0.0.0/24"] },
      { action: "allow", ip: ["fd00::/64"], port: "443" },
      { action: "allow", ip: ["127.0.0.1"], port: "10085" },
      { action: "block", ip: [...BLOCKED_CIDRS, "203.0.113.7", "198.51.100.4", "2001:db8::5"] },
    ]);
  });

  it("the API port rule follows the port the API really gets", () => {
    const json = renderV2ray(agentConfig({ inbounds: [{ ...none, port: 10085 }] }), { apiPort: 10085 }).json as Json;
    expect(json.routing.rules[1]).toMatchObject({ port: "10086", outboundTag: "blocked" });
  });

  it("v2ray 4.34 accepts the rules (explicit CIDRs, full: names, port strings)", () => {
    const bins = requireV2ray();
    const dir = tempDir("rb-render-edge-");
    try {
      const config = agentConfig({
        server: { id: IDS.server, name: "t", address: "vpn1.example.com", enabled: true },
        inbounds: [none],
        users,
        allowedPrivateDestinations: ["127.0.0.1:8081", "10.0.0.0/24", "[fd00::/64]:443", "fd00::7", "192.168.1.10:5432"],
      });
      const out = renderV2ray(agentConfigSchema.parse(config), { apiPort: 10085, localAddresses: ["127.0.0.1", "10.0.0.5", "2001:db8::5", "fe80::1%eth0"] });
      const file = path.join(dir, "c.json");
      fs.writeFileSync(file, JSON.stringify(out.json));
      expect(execFileSync(bins.bin, ["-test", "-config", file], { encoding: "utf8" })).toContain("Configuration OK");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("TLS files the core cannot read (issue 21, point 11)", () => {
  const missing = (files: { certificateFile: string; keyFile: string }) => (files.certificateFile.includes("gone") ? `the TLS certificate file ${files.certificateFile} does not exist on this server` : null);
  const gone = { ...tls, id: IDS.inTls, tls: { certificateFile: "/etc/ssl/gone.pem", keyFile: "/etc/ssl/vpn.key" } };
  for (const [name, render] of [
    ["v2ray", renderV2ray],
    ["Xray", renderXray],
  ] as const) {
    it(`${name}: leaves that inbound out as unserved and serves the rest`, () => {
      const out = render(agentConfig({ inbounds: [none, gone], users }), { apiPort: 10085, tlsFileProblem: missing });
      expect(out.unserved).toEqual([{ inboundId: IDS.inTls, reason: "the TLS certificate file /etc/ssl/gone.pem does not exist on this server" }]);
      expect(out.served.map((i) => i.port)).toEqual([8080]);
      expect(JSON.stringify(out.json)).not.toContain("gone.pem");
      expect(out.notes.some((n) => n.includes("gone.pem"))).toBe(true);
    });
  }
});

describe("wire schema", () => {
  it("refuses odd-length short ids (Xray hex-decodes them and would refuse the whole config)", () => {
    const withShortIds = (shortIds: string[]) => agentConfigSchema.safeParse(agentConfig({ inbounds: [{ ...reality, reality: { ...reality.reality!, shortIds } }] }));
    expect(withShortIds(["", "ab", "0123456789abcdef"]).success).toBe(true);
    for (const bad of ["abc", "0", "0123456789abcdef0", "zz"]) {
      const r = withShortIds([bad]);
      expect(r.success, bad).toBe(false);
      expect(r.error!.issues[0]!.message).toMatch(/even number of digits/);
    }
  });

  it("checks allowed destinations", () => {
    expect(agentConfigSchema.safeParse(agentConfig({ allowedPrivateDestinations: ["127.0.0.1:80"] })).success).toBe(true);
    expect(agentConfigSchema.safeParse(agentConfig()).success).toBe(true);
    expect(agentConfigSchema.safeParse(agentConfig({ allowedPrivateDestinations: ["localhost:80"] })).success).toBe(false);
  });
});

describe("chooseApiPort", () => {
  it("moves past inbound ports", () => {
    expect(chooseApiPort(10085, [none])).toBe(10085);
    expect(chooseApiPort(10085, [{ ...none, port: 10085 }, { ...none, port: 10086 }])).toBe(10087);
    expect(renderV2ray(agentConfig({ inbounds: [{ ...none, port: 10085 }] }), { apiPort: 10085 }).apiPort).toBe(10086);
  });
});
