/**
 * Issue 26: every output format for every protocol and transport. The field names follow
 * v2rayN's share-link parsers (vmess "v2" JSON, vless/trojan query names), SIP002 for ss://,
 * MetaCubeX/mihomo's adapter/outbound option structs and SagerNet/sing-box's option structs.
 */
import { describe, expect, it } from "vitest";
import { shadowsocksUserSecret, trojanPassword } from "@/core/credentials";
import { renderBase64, renderClash, renderJson, renderSingbox, shareLink, type SubscriptionEntry } from "./formats";

const UUID = "6f1c6c1e-6c2a-4d8e-9d8c-0a1b2c3d4e5f";
const base: SubscriptionEntry = {
  routeId: "r1",
  route: "Europe",
  inboundId: "i1",
  inbound: "Frankfurt",
  server: "de-1",
  address: "198.51.100.10",
  port: 443,
  security: "tls",
  sni: "cdn.example.net",
  realityPublicKey: null,
  realityShortId: null,
};
const vmessWs: SubscriptionEntry = { ...base, protocol: "vmess", transport: "ws", path: "/ws", host: "front.example.com" };
const vmessGrpc: SubscriptionEntry = { ...base, protocol: "vmess", transport: "grpc", serviceName: "tun" };
const trojanTcp: SubscriptionEntry = { ...base, protocol: "trojan" };
const trojanReality: SubscriptionEntry = { ...base, protocol: "trojan", security: "reality", sni: "www.microsoft.com", realityPublicKey: "PUBKEY", realityShortId: "ab12" };
const vlessH2: SubscriptionEntry = { ...base, protocol: "vless", transport: "h2", path: "/h2" };
const vlessXhttpReality: SubscriptionEntry = { ...base, protocol: "vless", transport: "xhttp", path: "/x", security: "reality", sni: "www.microsoft.com", realityPublicKey: "PUBKEY", realityShortId: "ab12" };
const vlessUpgrade: SubscriptionEntry = { ...base, protocol: "vless", transport: "httpupgrade", path: "/up", security: "none", sni: null };
const ss2022: SubscriptionEntry = { ...base, protocol: "shadowsocks", security: "none", sni: null, ssMethod: "2022-blake3-aes-128-gcm", ssServerKey: "c2VydmVyLWtleS0xNi1ieXQ=" };
const ssAead: SubscriptionEntry = { ...base, protocol: "shadowsocks", security: "none", sni: null, ssMethod: "chacha20-ietf-poly1305" };

const vmessJson = (link: string) => JSON.parse(Buffer.from(link.slice("vmess://".length), "base64").toString("utf8"));

describe("credentials", () => {
  it("are stable per subscriber, differ between subscribers and change with the UUID", () => {
    const other = "0d6b9f5e-3c4a-4b2e-8f1d-2a3b4c5d6e7f";
    expect(trojanPassword(UUID)).toBe(trojanPassword(UUID.toUpperCase()));
    expect(trojanPassword(UUID)).toMatch(/^[0-9a-f]{32}$/);
    expect(trojanPassword(other)).not.toBe(trojanPassword(UUID));
    expect(Buffer.from(shadowsocksUserSecret(UUID, "2022-blake3-aes-128-gcm"), "base64")).toHaveLength(16);
    expect(Buffer.from(shadowsocksUserSecret(UUID, "2022-blake3-aes-256-gcm"), "base64")).toHaveLength(32);
    expect(shadowsocksUserSecret(other, "2022-blake3-aes-256-gcm")).not.toBe(shadowsocksUserSecret(UUID, "2022-blake3-aes-256-gcm"));
    // One protocol's secret says nothing of another's.
    expect(shadowsocksUserSecret(UUID, "aes-128-gcm")).not.toBe(trojanPassword(UUID));
  });
});

describe("share links", () => {
  it("vmess:// is base64 of v2rayN's v2 JSON: ws with path, host and TLS", () => {
    expect(vmessJson(shareLink(UUID, vmessWs))).toEqual({
      v: "2", ps: "Frankfurt", add: "198.51.100.10", port: "443", id: UUID, aid: "0", scy: "auto",
      net: "ws", type: "none", host: "front.example.com", path: "/ws", tls: "tls", sni: "cdn.example.net", alpn: "", fp: "chrome",
    });
  });
  it("vmess:// over gRPC puts the service name in path with type gun; without TLS tls and sni are empty", () => {
    expect(vmessJson(shareLink(UUID, vmessGrpc))).toMatchObject({ net: "grpc", type: "gun", path: "tun", host: "" });
    expect(vmessJson(shareLink(UUID, { ...vmessWs, security: "none", sni: null }))).toMatchObject({ tls: "", sni: "", fp: "" });
  });
  it("trojan:// carries the subscriber's password and the TLS or Reality parameters", () => {
    const u = new URL(shareLink(UUID, trojanTcp));
    expect(u.protocol).toBe("trojan:");
    expect(u.username).toBe(trojanPassword(UUID));
    expect(Object.fromEntries(u.searchParams)).toEqual({ type: "tcp", security: "tls", fp: "chrome", sni: "cdn.example.net" });
    const r = new URL(shareLink(UUID, trojanReality));
    // Vision is VLESS's: a Trojan link never carries a flow.
    expect(Object.fromEntries(r.searchParams)).toEqual({ type: "tcp", security: "reality", fp: "chrome", sni: "www.microsoft.com", pbk: "PUBKEY", sid: "ab12" });
  });
  it("vless:// names type, path, host, serviceName and mode; Vision only over tcp", () => {
    const h2 = new URL(shareLink(UUID, vlessH2));
    expect(Object.fromEntries(h2.searchParams)).toMatchObject({ encryption: "none", type: "http", path: "/h2", security: "tls" });
    const x = new URL(shareLink(UUID, vlessXhttpReality));
    expect(Object.fromEntries(x.searchParams)).toMatchObject({ type: "xhttp", path: "/x", mode: "auto", security: "reality", pbk: "PUBKEY" });
    expect(x.searchParams.has("flow")).toBe(false);
    const up = new URL(shareLink(UUID, { ...vlessUpgrade, host: "front.example.com" }));
    expect(Object.fromEntries(up.searchParams)).toEqual({ encryption: "none", type: "httpupgrade", path: "/up", host: "front.example.com", security: "none" });
    const g = new URL(shareLink(UUID, { ...base, transport: "grpc", serviceName: "tun" }));
    expect(Object.fromEntries(g.searchParams)).toMatchObject({ type: "grpc", serviceName: "tun", mode: "gun" });
  });
  it("ss:// is SIP002: base64url userinfo for AEAD, percent-encoded server:user keys for 2022", () => {
    const aead = shareLink(UUID, ssAead);
    const m = /^ss:\/\/([A-Za-z0-9_-]+)@198\.51\.100\.10:443#Frankfurt$/.exec(aead);
    expect(m).not.toBeNull();
    expect(Buffer.from(m![1]!, "base64url").toString()).toBe(`chacha20-ietf-poly1305:${shadowsocksUserSecret(UUID, "chacha20-ietf-poly1305")}`);
    const u = new URL(shareLink(UUID, ss2022));
    expect(decodeURIComponent(u.username)).toBe("2022-blake3-aes-128-gcm");
    expect(decodeURIComponent(u.password)).toBe(`c2VydmVyLWtleS0xNi1ieXQ=:${shadowsocksUserSecret(UUID, "2022-blake3-aes-128-gcm")}`);
  });
  it("the base64 body holds each entry's own link, VLESS and the others mixed", () => {
    const entries = [base, vmessWs, trojanTcp, ss2022];
    expect(Buffer.from(renderBase64(UUID, entries), "base64").toString("utf8").split("\n")).toEqual(entries.map((e) => shareLink(UUID, e)));
  });
  it("json names each entry's protocol, transport and security next to its link", () => {
    const j = JSON.parse(renderJson(UUID, [vmessWs]));
    expect(j.routes[0]).toMatchObject({ protocol: "vmess", transport: "ws", security: "tls", link: shareLink(UUID, vmessWs) });
  });
});

describe("clash (mihomo)", () => {
  const proxyOf = (e: SubscriptionEntry) => {
    const y = renderClash(UUID, [e]);
    return y.slice(y.indexOf("proxies:"), y.indexOf("proxy-groups:"));
  };
  it("vmess over ws: uuid, alterId, cipher, ws-opts with the Host header, tls and servername", () => {
    const p = proxyOf(vmessWs);
    for (const line of ["type: vmess", `uuid: "${UUID}"`, "alterId: 0", "cipher: auto", "network: ws", 'path: "/ws"', 'Host: "front.example.com"', "tls: true", 'servername: "cdn.example.net"']) expect(p).toContain(line);
  });
  it("trojan: password and sni, no tls key; Reality adds reality-opts without a flow", () => {
    const p = proxyOf(trojanReality);
    for (const line of ["type: trojan", `password: "${trojanPassword(UUID)}"`, 'sni: "www.microsoft.com"', "reality-opts:", 'public-key: "PUBKEY"']) expect(p).toContain(line);
    expect(p).not.toContain("tls:");
    expect(p).not.toContain("flow:");
  });
  it("grpc-opts, h2-opts, HTTPUpgrade as ws with v2ray-http-upgrade, xhttp-opts", () => {
    expect(proxyOf(vmessGrpc)).toContain('grpc-service-name: "tun"');
    expect(proxyOf({ ...vlessH2, host: "h.example.com" })).toMatch(/network: h2\n {4}udp: true\n {4}h2-opts:\n {6}path: "\/h2"\n {6}host:\n {8}- "h.example.com"/);
    expect(proxyOf(vlessUpgrade)).toMatch(/network: ws\n {4}udp: true\n {4}ws-opts:\n {6}path: "\/up"\n {6}v2ray-http-upgrade: true/);
    expect(proxyOf(vlessXhttpReality)).toContain('xhttp-opts:\n      path: "/x"\n      mode: auto');
  });
  it("ss: cipher and the 2022 server:user password", () => {
    const p = proxyOf(ss2022);
    for (const line of ["type: ss", 'cipher: "2022-blake3-aes-128-gcm"', `password: "c2VydmVyLWtleS0xNi1ieXQ=:${shadowsocksUserSecret(UUID, "2022-blake3-aes-128-gcm")}"`]) expect(p).toContain(line);
  });
});

describe("sing-box", () => {
  const outbound = (e: SubscriptionEntry) => JSON.parse(renderSingbox(UUID, [e])).outbounds[1];
  it("vmess with a ws transport and TLS", () => {
    expect(outbound(vmessWs)).toEqual({
      type: "vmess", tag: "Frankfurt", server: "198.51.100.10", server_port: 443, uuid: UUID, security: "auto", alter_id: 0,
      tls: { enabled: true, server_name: "cdn.example.net", utls: { enabled: true, fingerprint: "chrome" } },
      transport: { type: "ws", path: "/ws", headers: { Host: "front.example.com" } },
    });
  });
  it("trojan with Reality, gRPC, h2 (http), HTTPUpgrade and shadowsocks", () => {
    expect(outbound(trojanReality)).toMatchObject({ type: "trojan", password: trojanPassword(UUID), tls: { reality: { enabled: true, public_key: "PUBKEY", short_id: "ab12" } } });
    expect(outbound(trojanReality)).not.toHaveProperty("flow");
    expect(outbound(vmessGrpc).transport).toEqual({ type: "grpc", service_name: "tun" });
    expect(outbound({ ...vlessH2, host: "h.example.com" }).transport).toEqual({ type: "http", path: "/h2", host: ["h.example.com"] });
    expect(outbound(vlessUpgrade).transport).toEqual({ type: "httpupgrade", path: "/up" });
    expect(outbound(ss2022)).toEqual({ type: "shadowsocks", tag: "Frankfurt", server: "198.51.100.10", server_port: 443, method: "2022-blake3-aes-128-gcm", password: `c2VydmVyLWtleS0xNi1ieXQ=:${shadowsocksUserSecret(UUID, "2022-blake3-aes-128-gcm")}` });
  });
  it("leaves XHTTP out: sing-box has no such transport", () => {
    const sb = JSON.parse(renderSingbox(UUID, [vlessXhttpReality, vmessWs]));
    expect(sb.outbounds.map((o: { tag: string }) => o.tag)).toEqual(["proxy", "Frankfurt", "direct"]);
    expect(sb.outbounds[1].type).toBe("vmess");
  });
});
