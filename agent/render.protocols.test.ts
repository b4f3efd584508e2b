/**
 * Issue 26: each protocol and transport as the agent renders it. The Xray renderings are
 * checked field by field against XTLS/Xray-examples (copied into testdata/xray-examples, each
 * file naming the commit and path it came from): every key the example's inbound sets is one
 * ours sets, with the example's value where it is not a placeholder of the operator's. The v2ray
 * renderings are checked against v2ray 4.34 itself (`v2ray -test`) and what it cannot serve is
 * reported not served.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { AgentInbound } from "../core/agent-wire";
import { shadowsocksUserSecret, trojanPassword } from "../core/credentials";
import { renderV2ray } from "./render-v2ray";
import { renderXray } from "./render-xray";
import { agentConfig, IDS, inbound, requireV2ray, tempDir } from "./test-support";

const USERS = [
  { id: IDS.alice, email: "sub-alice" },
  { id: IDS.bob, email: "sub-bob" },
];
const TLS = { certificateFile: "/etc/ssl/c.pem", keyFile: "/etc/ssl/k.pem" };
const REALITY = { privateKey: "priv", publicKey: "pub", shortIds: ["ab"], serverNames: ["www.example.com"], dest: "www.example.com:443" };

/** JSON with // comments (outside strings), as Xray-examples writes its configs. */
function readJsonc(file: string): { inbounds: Array<Record<string, unknown>> } {
  const text = fs.readFileSync(path.join(import.meta.dirname, "testdata/xray-examples", file), "utf8");
  let out = "";
  let inString = false;
  for (let k = 0; k < text.length; k++) {
    const c = text[k]!;
    if (inString) {
      out += c;
      if (c === "\\") out += text[++k] ?? "";
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
      out += c;
    } else if (c === "/" && text[k + 1] === "/") {
      while (k < text.length && text[k] !== "\n") k++;
      out += "\n";
    } else out += c;
  }
  return JSON.parse(out.replace(/,(\s*[}\]])/g, "$1"));
}

/** The value at a dotted path ("settings.clients.0.password") of parsed JSON. */
const get = (o: unknown, at: string): unknown => at.split(".").reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], o);

/** The one inbound Xray renders for `ib`, as JSON (clients written out). */
function xrayOf(ib: AgentInbound): Record<string, unknown> {
  const r = renderXray(agentConfig({ inbounds: [ib], users: USERS }), { apiPort: 10085 });
  expect(r.unserved).toEqual([]);
  return JSON.parse(JSON.stringify((r.json.inbounds as unknown[])[1]));
}

/**
 * Every key of `example` is in `ours`, recursively (arrays: their first elements); values are
 * compared where `same` lists the key path. Returns the key paths missing from ours.
 */
function missingKeys(example: unknown, ours: unknown, at = ""): string[] {
  if (Array.isArray(example)) return example.length > 0 && Array.isArray(ours) ? missingKeys(example[0], ours[0], `${at}[0]`) : Array.isArray(ours) ? [] : [at];
  if (example === null || typeof example !== "object") return [];
  if (ours === null || typeof ours !== "object") return [at];
  return Object.entries(example).flatMap(([k, v]) => (k in (ours as object) ? missingKeys(v, (ours as Record<string, unknown>)[k], `${at}.${k}`) : [`${at}.${k}`]));
}

describe("Xray renderings against XTLS/Xray-examples", () => {
  // Keys an example sets that we leave to Xray's default on purpose, each with why.
  const LEFT_TO_DEFAULT: Record<string, string> = {
    ".listen": "0.0.0.0 is the default",
    ".settings.clients[0].flow": "an empty flow is the default; VLESS without Vision carries none",
    ".streamSettings.tlsSettings.alpn": "Xray's default offers h2 and http/1.1",
    ".streamSettings.realitySettings.target": "`dest` is the older name of the same field (ours, which every Xray since 1.8 reads)",
  };
  const check = (file: string, ours: Record<string, unknown>) => {
    const example = readJsonc(file).inbounds[0]!;
    expect(missingKeys(example, ours).filter((k) => !(k in LEFT_TO_DEFAULT))).toEqual([]);
    return example;
  };

  it("VLESS over gRPC with Reality (VLESS-gRPC-REALITY)", () => {
    const ours = xrayOf(inbound({ id: IDS.inReality, port: 443, security: "reality", transport: "grpc", serviceName: "tun", reality: REALITY }));
    const ex = check("vless-grpc-reality.jsonc", ours);
    expect(ours).toMatchObject({ protocol: get(ex, "protocol"), settings: { decryption: "none" }, streamSettings: { network: "grpc", security: "reality", grpcSettings: { serviceName: "tun" } }, sniffing: { enabled: true } });
    expect(get(ours, "settings.clients")).toEqual(USERS.map((u) => ({ id: u.id, email: u.email, level: 0 })));
  });

  it("VLESS over XHTTP with Reality (VLESS-XHTTP-Reality)", () => {
    const ours = xrayOf(inbound({ id: IDS.inReality, port: 443, security: "reality", transport: "xhttp", path: "/yourpath", reality: REALITY }));
    const ex = check("vless-xhttp-reality.jsonc", ours);
    expect(get(ours, "streamSettings")).toMatchObject({ network: get(ex, "streamSettings.network"), xhttpSettings: { path: get(ex, "streamSettings.xhttpSettings.path") }, security: "reality" });
  });

  it("Shadowsocks 2022 (ReverseProxy/Shadowsocks-2022): the inbound's method and key, a key per subscriber", () => {
    const serverKey = Buffer.alloc(32, 7).toString("base64");
    const ours = xrayOf(inbound({ id: IDS.inNone, port: 8388, security: "none", protocol: "shadowsocks", shadowsocks: { method: "2022-blake3-aes-256-gcm", serverKey } }));
    const ex = check("shadowsocks-2022.jsonc", ours);
    expect(get(ours, "settings")).toMatchObject({ method: get(ex, "settings.method"), password: serverKey, network: get(ex, "settings.network") });
    expect(get(ours, "settings.clients")).toEqual(USERS.map((u) => ({ password: shadowsocksUserSecret(u.id, "2022-blake3-aes-256-gcm"), email: u.email, level: 0 })));
    expect(Buffer.from(String(get(ours, "settings.clients.0.password")), "base64")).toHaveLength(32);
  });

  it("Shadowsocks with an AEAD cipher: Xray's multi-user form, the cipher on every client", () => {
    const ours = xrayOf(inbound({ id: IDS.inNone, port: 8388, security: "none", protocol: "shadowsocks", shadowsocks: { method: "chacha20-ietf-poly1305", serverKey: null } }));
    expect(get(ours, "settings")).not.toHaveProperty("method");
    expect(get(ours, "settings.clients.0")).toEqual({ password: shadowsocksUserSecret(IDS.alice, "chacha20-ietf-poly1305"), method: "chacha20-ietf-poly1305", email: "sub-alice", level: 0 });
  });

  it("Trojan: a subscriber's own password (imported from another panel) replaces the derived one", () => {
    const users = [{ id: IDS.alice, email: "sub-alice", password: "kept-from-marzban" }, USERS[1]!];
    const r = renderXray(agentConfig({ inbounds: [inbound({ id: IDS.inTls, port: 443, security: "tls", protocol: "trojan", tls: TLS })], users }), { apiPort: 10085 });
    const clients = JSON.parse(JSON.stringify((r.json.inbounds as Array<{ settings: { clients: unknown[] } }>)[1]!.settings.clients));
    expect(clients).toEqual([
      { password: "kept-from-marzban", email: "sub-alice", level: 0 },
      { password: trojanPassword(IDS.bob), email: "sub-bob", level: 0 },
    ]);
  });

  it("Trojan over tcp with TLS (Trojan-TCP-TLS minimal), and with Reality (its realitySettings as VLESS-TCP-XTLS-Vision-REALITY's)", () => {
    const tls = xrayOf(inbound({ id: IDS.inTls, port: 443, security: "tls", protocol: "trojan", tls: TLS }));
    const ex = check("trojan-tcp-tls.jsonc", tls);
    expect(tls).toMatchObject({ protocol: get(ex, "protocol"), streamSettings: { network: "tcp", security: "tls", tlsSettings: { certificates: [TLS] } } });
    expect(get(tls, "settings.clients")).toEqual(USERS.map((u) => ({ password: trojanPassword(u.id), email: u.email, level: 0 })));
    const reality = xrayOf(inbound({ id: IDS.inReality, port: 443, security: "reality", protocol: "trojan", reality: REALITY }));
    const vision = readJsonc("vless-tcp-vision-reality.jsonc").inbounds[0];
    expect(missingKeys(get(vision, "streamSettings.realitySettings"), get(reality, "streamSettings.realitySettings"))).toEqual([]);
    expect(get(reality, "streamSettings")).toMatchObject({ network: "tcp", security: "reality", realitySettings: { privateKey: "priv", shortIds: ["ab"], serverNames: ["www.example.com"], dest: "www.example.com:443" } });
    // Vision is VLESS's alone.
    expect(get(reality, "settings.clients.0")).not.toHaveProperty("flow");
  });

  it("VMess over ws with TLS (VMess-Websocket-TLS); h2 reported not served, since Xray no longer loads VMess-HTTP2's network", () => {
    const ws = xrayOf(inbound({ id: IDS.inTls, port: 443, security: "tls", protocol: "vmess", transport: "ws", path: "/ws", host: "cdn.example.com", tls: TLS }));
    check("vmess-ws-tls.jsonc", ws);
    expect(get(ws, "streamSettings")).toMatchObject({ network: "ws", security: "tls", wsSettings: { path: "/ws", host: "cdn.example.com" } });
    // The example predates 24.12; since then Xray refuses the whole config for it, as the
    // stand-in does: every other inbound of the server would go down with the h2 one.
    const dir = tempDir("xray-h2-");
    try {
      const file = path.join(dir, "config.json");
      fs.writeFileSync(file, JSON.stringify({ inbounds: readJsonc("vmess-h2.jsonc").inbounds }));
      const stand = path.join(import.meta.dirname, "testdata/fake-xray.mjs");
      expect(() => execFileSync(process.execPath, [stand, "run", "-test", "-c", file], { stdio: "pipe" })).toThrow(/HTTP transport .* has been removed/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    const h2 = inbound({ id: IDS.inTls, port: 443, security: "tls", protocol: "vmess", transport: "h2", path: "/h2", tls: TLS });
    const beside = inbound({ id: IDS.inNone, port: 80, security: "none", protocol: "vmess", transport: "ws", path: "/ws" });
    const r = renderXray(agentConfig({ inbounds: [h2, beside], users: USERS }), { apiPort: 10085 });
    expect(r.unserved).toEqual([{ inboundId: IDS.inTls, reason: expect.stringContaining("h2 needs v2ray: Xray-core removed it") }]);
    expect(r.served.map((i) => i.id)).toEqual([IDS.inNone]);
    expect(JSON.stringify(r.json)).not.toContain('"network":"http"');
  });

  it("HTTPUpgrade (no Xray-examples config: Xray's transport docs' httpupgradeSettings)", () => {
    const ours = xrayOf(inbound({ id: IDS.inNone, port: 80, security: "none", protocol: "vless", transport: "httpupgrade", path: "/up", host: "cdn.example.com" }));
    expect(get(ours, "streamSettings")).toEqual({ network: "httpupgrade", httpupgradeSettings: { path: "/up", host: "cdn.example.com" }, security: "none" });
  });
});

describe("v2ray 4.34 renderings", () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

  it("serves VLESS, VMess and Trojan over tcp, ws and h2, and v2ray itself accepts the config; skips the rest saying which core it needs", () => {
    const dir = tempDir("render-v2ray-");
    dirs.push(dir);
    // Real files: `v2ray -test` loads the certificate.
    const cert = path.join(dir, "c.pem");
    const key = path.join(dir, "k.pem");
    execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=localhost", "-days", "1", "-keyout", key, "-out", cert], { stdio: "ignore" });
    const tls = { certificateFile: cert, keyFile: key };
    const id = (n: number) => `00000000-0000-4000-8000-0000000001${String(n).padStart(2, "0")}`;
    const served: AgentInbound[] = [
      inbound({ id: id(1), port: 20001, security: "none", protocol: "vmess", transport: "ws", path: "/vm", host: "cdn.example.com" }),
      inbound({ id: id(2), port: 20002, security: "tls", protocol: "trojan", tls }),
      inbound({ id: id(3), port: 20003, security: "tls", protocol: "vless", transport: "h2", path: "/h2", host: "cdn.example.com", tls }),
    ];
    const skipped: AgentInbound[] = [
      inbound({ id: id(4), port: 20004, security: "tls", transport: "grpc", serviceName: "tun", tls }),
      inbound({ id: id(5), port: 20005, security: "none", transport: "httpupgrade", path: "/up" }),
      inbound({ id: id(6), port: 20006, security: "tls", transport: "xhttp", path: "/x", tls }),
      inbound({ id: id(7), port: 20007, security: "none", protocol: "shadowsocks", shadowsocks: { method: "aes-128-gcm", serverKey: null } }),
    ];
    const r = renderV2ray(agentConfig({ inbounds: [...served, ...skipped], users: USERS }), { apiPort: 10085 });
    expect(r.served.map((i) => i.id)).toEqual(served.map((i) => i.id));
    expect(r.unserved.map((u) => u.reason)).toEqual([
      "gRPC needs Xray-core: v2ray 4.34 cannot serve it (run the agent with --core xray)",
      "HTTPUpgrade needs Xray-core: v2ray 4.34 cannot serve it (run the agent with --core xray)",
      "XHTTP needs Xray-core: v2ray 4.34 cannot serve it (run the agent with --core xray)",
      "Shadowsocks with one key per subscriber needs Xray-core: v2ray 4.x serves one user only (run the agent with --core xray)",
    ]);
    expect(r.notes.filter((n) => n.includes("is skipped"))).toHaveLength(4);
    const json = JSON.parse(JSON.stringify(r.json));
    const [vmessWs, trojan, vlessH2] = json.inbounds.slice(1);
    // v2ray 4.x names ws's Host header in headers, h2's hosts in a list.
    expect(vmessWs).toMatchObject({ protocol: "vmess", streamSettings: { network: "ws", security: "none", wsSettings: { path: "/vm", headers: { Host: "cdn.example.com" } } } });
    expect(vmessWs.settings.clients[0]).toEqual({ id: IDS.alice, email: "sub-alice", level: 0 });
    expect(trojan.settings.clients[1]).toEqual({ password: trojanPassword(IDS.bob), email: "sub-bob", level: 0 });
    expect(vlessH2).toMatchObject({ protocol: "vless", settings: { decryption: "none" }, streamSettings: { network: "http", security: "tls", httpSettings: { path: "/h2", host: ["cdn.example.com"] } } });
    const file = path.join(dir, "config.json");
    fs.writeFileSync(file, JSON.stringify(json));
    const { bin } = requireV2ray();
    expect(() => execFileSync(bin, ["-test", "-config", file], { stdio: "pipe" })).not.toThrow();
  });
});
