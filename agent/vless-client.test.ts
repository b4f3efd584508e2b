/** The test VLESS client (e2e/vless-client.ts) reads the panel's share links. */
import { describe, expect, it } from "vitest";
import { parseVlessLink, v2rayClientConfig } from "../e2e/vless-client";

describe("parseVlessLink", () => {
  it("reads a TLS link as the panel writes it", () => {
    const link = "vless://11111111-1111-4111-8111-111111111111@127.0.0.1:8443?encryption=none&type=tcp&security=tls&fp=chrome&sni=localhost#%F0%9F%87%A9%F0%9F%87%AA%20Berlin%20TLS";
    expect(parseVlessLink(link)).toMatchObject({ uuid: "11111111-1111-4111-8111-111111111111", address: "127.0.0.1", port: 8443, security: "tls", sni: "localhost", flow: "", name: "🇩🇪 Berlin TLS" });
  });
  it("reads Reality and IPv6 links", () => {
    const r = parseVlessLink("vless://11111111-1111-4111-8111-111111111111@[2001:db8::1]:443?encryption=none&type=tcp&security=reality&flow=xtls-rprx-vision&fp=chrome&sni=www.example.com&pbk=abc&sid=ab#x");
    expect(r).toMatchObject({ address: "2001:db8::1", port: 443, security: "reality", flow: "xtls-rprx-vision", sni: "www.example.com" });
    expect(r.params.pbk).toBe("abc");
    expect(() => v2rayClientConfig(r, 1080)).toThrow(/Reality/);
  });
  it("refuses what is not a VLESS link", () => {
    expect(() => parseVlessLink("vmess://abc")).toThrow(/not a vless/);
    expect(() => parseVlessLink("vless://nope@1.2.3.4:443")).toThrow(/UUID/);
  });
  it("builds a v2ray client: SOCKS on loopback, VLESS with the link's TLS server name", () => {
    const config = v2rayClientConfig(parseVlessLink("vless://11111111-1111-4111-8111-111111111111@127.0.0.1:8443?security=tls&sni=localhost#x"), 1080);
    expect(config.inbounds).toEqual([{ tag: "socks-in", listen: "127.0.0.1", port: 1080, protocol: "socks", settings: { auth: "noauth", udp: false } }]);
    expect(JSON.stringify(config.outbounds)).toContain('"serverName":"localhost"');
  });
});
