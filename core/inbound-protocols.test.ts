import { describe, expect, it } from "vitest";
import { inboundFieldsSchema } from "./validation";
import { coreNeeded, protocolSummary, v2rayCannotServe, xrayCannotServe } from "./inbound-protocols";

const tls = { name: "x", port: 443, security: "tls" as const, sni: "cdn.example.com", tlsCertificateFile: "/etc/ssl/c.pem", tlsKeyFile: "/etc/ssl/k.pem" };
const issues = (input: Record<string, unknown>) => {
  const r = inboundFieldsSchema.safeParse(input);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
};

describe("protocol and transport combinations", () => {
  it("defaults to VLESS over tcp, as before the fields", () => {
    const r = inboundFieldsSchema.parse({ name: "x", port: 443, sni: "www.example.com" });
    expect(r).toMatchObject({ protocol: "vless", transport: "tcp", path: null, host: null, serviceName: null, ssMethod: null, security: "reality" });
  });
  it("accepts what the cores serve", () => {
    expect(issues({ ...tls, protocol: "vmess", transport: "ws", path: "/ws", host: "front.example.com" })).toEqual([]);
    expect(issues({ ...tls, protocol: "trojan" })).toEqual([]);
    expect(issues({ ...tls, protocol: "vless", transport: "h2", path: "/h2" })).toEqual([]);
    expect(issues({ name: "x", port: 443, protocol: "trojan", transport: "grpc", serviceName: "tun", security: "reality", sni: "www.example.com" })).toEqual([]);
    expect(issues({ name: "x", port: 443, protocol: "vless", transport: "xhttp", path: "/x", security: "reality", sni: "www.example.com" })).toEqual([]);
    expect(issues({ name: "x", port: 8388, protocol: "shadowsocks", ssMethod: "2022-blake3-aes-128-gcm", security: "none" })).toEqual([]);
  });
  it("refuses each other combination on the field to change", () => {
    expect(issues({ name: "x", port: 443, protocol: "vmess", security: "reality", sni: "www.example.com" })).toEqual(["security: Reality carries VLESS or Trojan only: choose TLS or none for VMess"]);
    expect(issues({ name: "x", port: 443, protocol: "vless", transport: "ws", path: "/ws", security: "reality", sni: "www.example.com" })).toEqual([
      "transport: Reality runs over tcp, gRPC or XHTTP only, not ws: choose one of those, or TLS",
    ]);
    expect(issues({ name: "x", port: 443, protocol: "trojan", security: "none" })).toEqual(["security: Trojan needs TLS or Reality"]);
    expect(issues({ name: "x", port: 443, protocol: "vless", transport: "h2", path: "/", security: "none" })).toEqual(["security: h2 needs TLS"]);
    expect(issues({ ...tls, protocol: "vmess", transport: "ws" })).toEqual(["path: ws needs a path, e.g. /ws"]);
    expect(issues({ ...tls, transport: "grpc" })).toEqual(["serviceName: gRPC needs a service name, e.g. grpc"]);
    expect(issues({ ...tls, protocol: "shadowsocks", transport: "ws", path: "/" })).toEqual([
      "transport: Shadowsocks runs over tcp only, not ws",
      "security: Shadowsocks encrypts by itself: choose security none",
      "ssMethod: Shadowsocks needs a cipher",
    ]);
  });
  it("checks the fields' own format", () => {
    expect(issues({ ...tls, transport: "ws", path: "ws" })).toContain("path: Path must start with /, e.g. /ws");
    expect(issues({ ...tls, transport: "ws", path: "/a b" })).toContain("path: Path must be printable ASCII without spaces");
    expect(issues({ ...tls, transport: "ws", path: "/", host: "not a host" })).toContain("host: Host must be a hostname such as cdn.example.com");
    expect(issues({ ...tls, transport: "grpc", serviceName: "a/b" })).toContain("serviceName: Service name: letters, digits, dots, dashes, _ or ~, e.g. grpc");
    expect(issues({ ...tls, protocol: "quic" })[0]).toBe("protocol: Protocol must be VLESS, VMess, Trojan or Shadowsocks");
    expect(issues({ name: "x", port: 1, protocol: "shadowsocks", security: "none", ssMethod: "rc4-md5" })[0]).toMatch(/^ssMethod: Cipher must be one of 2022-blake3-aes-128-gcm/);
  });
});

describe("which core serves what", () => {
  it("v2ray 4.34 serves VLESS, VMess and Trojan over tcp, ws and h2 with TLS or none", () => {
    for (const protocol of ["vless", "vmess", "trojan"]) for (const transport of ["tcp", "ws", "h2"]) expect(v2rayCannotServe({ protocol, transport, security: "tls" })).toBeNull();
    expect(v2rayCannotServe({ protocol: "vless", transport: "grpc", security: "tls" })).toMatch(/^gRPC needs Xray-core/);
    expect(v2rayCannotServe({ protocol: "vless", transport: "httpupgrade", security: "none" })).toMatch(/^HTTPUpgrade needs Xray-core/);
    expect(v2rayCannotServe({ protocol: "vless", transport: "xhttp", security: "tls" })).toMatch(/^XHTTP needs Xray-core/);
    expect(v2rayCannotServe({ protocol: "shadowsocks", transport: "tcp", security: "none" })).toMatch(/^Shadowsocks with one key per subscriber needs Xray-core/);
    expect(v2rayCannotServe({ protocol: "trojan", transport: "tcp", security: "reality" })).toMatch(/^Reality needs Xray-core/);
  });
  it("Xray serves everything but h2, which it removed; the form names the core a combination needs", () => {
    for (const transport of ["tcp", "ws", "grpc", "httpupgrade", "xhttp"]) expect(xrayCannotServe({ transport })).toBeNull();
    expect(xrayCannotServe({ transport: "h2" })).toMatch(/^h2 needs v2ray: Xray-core removed it/);
    expect(coreNeeded({ protocol: "vmess", transport: "h2", security: "tls" })).toMatch(/^h2 needs v2ray/);
    expect(coreNeeded({ protocol: "vless", transport: "grpc", security: "tls" })).toMatch(/^gRPC needs Xray-core/);
    expect(coreNeeded({ protocol: "vmess", transport: "ws", security: "tls" })).toBeNull();
  });
  it("summarises an inbound for the diagram chip", () => {
    expect(protocolSummary({ protocol: "vmess", transport: "ws", security: "tls" })).toBe("VMess·ws·TLS");
    expect(protocolSummary({ protocol: "vless", transport: null, security: "reality" })).toBe("VLESS·tcp·Reality");
    expect(protocolSummary({ protocol: "shadowsocks", transport: "tcp", security: "none" })).toBe("SS·tcp");
  });
});
