/**
 * Real clients for the panel's share links of every protocol v2ray 4.34 speaks (issue 26):
 * `vless://`, `vmess://` (v2rayN's base64 "v2" JSON) and `trojan://`, over tcp, ws or h2, with
 * TLS or none, all in one Debian v2ray process (one SOCKS inbound per link, routed to its own
 * outbound); and Debian's `trojan` client, a second implementation of Trojan. TLS trust as in
 * vless-client.ts: the test CA in SSL_CERT_FILE for v2ray, in the trojan config for trojan.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { stopProcess } from "../scripts/harness/process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, waitForPort } from "./vless-client";

export interface ShareLink {
  protocol: "vless" | "vmess" | "trojan";
  /** The UUID (VLESS, VMess) or password (Trojan). */
  credential: string;
  address: string;
  port: number;
  /** v2ray's network names: tcp, ws, http (h2). */
  network: "tcp" | "ws" | "http";
  path: string | null;
  host: string | null;
  security: "none" | "tls";
  sni: string | null;
}

const NETWORKS: Record<string, ShareLink["network"]> = { tcp: "tcp", ws: "ws", h2: "http", http: "http" };

function network(type: string | undefined): ShareLink["network"] {
  const n = NETWORKS[type ?? "tcp"];
  if (!n) throw new Error(`transport ${type} is not one v2ray 4.34 speaks`);
  return n;
}

/** Reads a vless://, trojan:// or vmess:// link as the panel writes it. */
export function parseShareLink(link: string): ShareLink {
  if (link.startsWith("vmess://")) {
    const j = JSON.parse(Buffer.from(link.slice("vmess://".length), "base64").toString("utf8")) as Record<string, string>;
    if (j.v !== "2") throw new Error(`vmess link of version ${j.v}, expected 2`);
    return { protocol: "vmess", credential: j.id!, address: j.add!, port: Number(j.port), network: network(j.net), path: j.path || null, host: j.host || null, security: j.tls === "tls" ? "tls" : "none", sni: j.sni || null };
  }
  const url = new URL(link);
  const protocol = url.protocol.slice(0, -1);
  if (protocol !== "vless" && protocol !== "trojan") throw new Error(`not a link v2ray 4.34 can follow: ${link.slice(0, 40)}`);
  const q = url.searchParams;
  const security = q.get("security") ?? "none";
  if (security !== "none" && security !== "tls") throw new Error(`security ${security} needs an Xray client`);
  return {
    protocol,
    credential: decodeURIComponent(url.username),
    address: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: Number(url.port),
    network: network(q.get("type") ?? undefined),
    path: q.get("path"),
    host: q.get("host"),
    security,
    sni: q.get("sni"),
  };
}

/** The v2ray 4.34 outbound that follows a link. */
export function v2rayOutbound(link: ShareLink, tag: string): Record<string, unknown> {
  const server = { address: link.address, port: link.port };
  const settings =
    link.protocol === "trojan"
      ? { servers: [{ ...server, password: link.credential }] }
      : { vnext: [{ ...server, users: [link.protocol === "vless" ? { id: link.credential, encryption: "none", level: 0 } : { id: link.credential, alterId: 0, security: "auto", level: 0 }] }] };
  const stream: Record<string, unknown> = { network: link.network, security: link.security };
  if (link.network === "ws") stream.wsSettings = { path: link.path ?? "/", ...(link.host ? { headers: { Host: link.host } } : {}) };
  if (link.network === "http") stream.httpSettings = { path: link.path ?? "/", ...(link.host ? { host: [link.host] } : {}) };
  if (link.security === "tls") stream.tlsSettings = { serverName: link.sni ?? link.address, allowInsecure: false };
  return { tag, protocol: link.protocol, settings, streamSettings: stream };
}

export interface Client {
  /** The SOCKS port of each link, in the order given. */
  socksPorts: number[];
  output(): string;
  stop(): Promise<void>;
}

/** Runs `bin` with `args` until stop(); resolves once every port in `ports` listens. */
async function runClient(bin: string, args: string[], ports: number[], env: NodeJS.ProcessEnv, dir: string): Promise<Client> {
  const child: ChildProcess = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"], env });
  let out = "";
  const collect = (b: Buffer) => (out = (out + b.toString("utf8")).slice(-20_000));
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  let exited = false;
  const closed = new Promise<void>((resolve) =>
    child.once("close", () => {
      exited = true;
      resolve();
    }),
  );
  child.once("error", (err) => (out += `\nspawn failed: ${err.message}`));
  const stop = async () => {
    if (!exited) {
      await stopProcess(child, 3000);
      await closed;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const p of ports) await waitForPort(p, 60_000, () => !exited);
  } catch (err) {
    await stop();
    throw new Error(`the ${path.basename(bin)} client did not start: ${(err as Error).message}\n${out}`);
  }
  return { socksPorts: ports, output: () => out, stop };
}

/** One Debian v2ray with a SOCKS inbound per link on 127.0.0.1, each routed to that link's outbound. */
export async function startV2rayLinksClient(links: readonly ShareLink[], caFile: string): Promise<Client> {
  const ports: number[] = [];
  for (let k = 0; k < links.length; k++) ports.push(await freePort());
  const config = {
    log: { loglevel: "warning", access: "none" },
    inbounds: links.map((_, k) => ({ tag: `socks-${k}`, listen: "127.0.0.1", port: ports[k], protocol: "socks", settings: { auth: "noauth", udp: false } })),
    outbounds: links.map((l, k) => v2rayOutbound(l, `out-${k}`)),
    routing: { rules: links.map((_, k) => ({ type: "field", inboundTag: [`socks-${k}`], outboundTag: `out-${k}` })) },
  };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "links-client-"));
  const file = path.join(dir, "client.json");
  fs.writeFileSync(file, JSON.stringify(config));
  return runClient("/usr/bin/v2ray", ["-config", file], ports, { ...process.env, SSL_CERT_FILE: caFile }, dir);
}

/** Debian's trojan (trojan-gfw) as a SOCKS5 client for a trojan:// link, trusting `caFile`. */
export async function startTrojanClient(link: ShareLink, caFile: string): Promise<Client> {
  if (link.protocol !== "trojan" || link.network !== "tcp" || link.security !== "tls") throw new Error("the trojan client follows trojan:// links over tcp with TLS only");
  const port = await freePort();
  const config = {
    run_type: "client",
    local_addr: "127.0.0.1",
    local_port: port,
    remote_addr: link.address,
    remote_port: link.port,
    password: [link.credential],
    log_level: 2,
    ssl: { verify: true, verify_hostname: true, cert: caFile, sni: link.sni ?? link.address, alpn: ["h2", "http/1.1"], reuse_session: true, session_ticket: false },
    tcp: { no_delay: true, keep_alive: true, reuse_port: false, fast_open: false },
  };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "trojan-client-"));
  const file = path.join(dir, "client.json");
  fs.writeFileSync(file, JSON.stringify(config));
  return runClient("/usr/bin/trojan", ["-c", file], [port], process.env, dir);
}
