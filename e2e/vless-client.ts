/**
 * A real VLESS client for tests: Debian's v2ray 4.34 started with a SOCKS inbound on loopback
 * and a VLESS outbound built from a share link, plus a small SOCKS5 client to fetch through it.
 * TLS trust: v2ray is a Go program, and Go's x509 reads extra roots from SSL_CERT_FILE on
 * Linux, so the test CA goes into the child's environment (no allowInsecure).
 * Processes are spawned directly (no shell), so the PID held is v2ray's own and stop() kills it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort } from "../scripts/harness/app";
import { stopProcess } from "../scripts/harness/process";

export { freePort };

export interface VlessLink {
  uuid: string;
  address: string;
  port: number;
  security: "none" | "tls" | "reality";
  sni: string | null;
  flow: string;
  name: string;
  /** Every query parameter of the link, as given. */
  params: Record<string, string>;
}

export function parseVlessLink(link: string): VlessLink {
  if (!link.startsWith("vless://")) throw new Error(`not a vless:// link: ${link.slice(0, 40)}`);
  const url = new URL(link);
  const uuid = decodeURIComponent(url.username);
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(uuid)) throw new Error(`vless link without a UUID: ${link.slice(0, 60)}`);
  const address = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = Number(url.port);
  if (!address || !Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`vless link without address:port: ${link.slice(0, 60)}`);
  const params = Object.fromEntries(url.searchParams.entries());
  const security = (params.security ?? "none") as VlessLink["security"];
  if (!["none", "tls", "reality"].includes(security)) throw new Error(`vless link with unknown security ${security}`);
  return { uuid, address, port, security, sni: params.sni || null, flow: params.flow ?? "", name: decodeURIComponent(url.hash.replace(/^#/, "")), params };
}

/** The v2ray client config for a link: SOCKS on 127.0.0.1:socksPort → VLESS to the link's server. */
export function v2rayClientConfig(link: VlessLink, socksPort: number): Record<string, unknown> {
  if (link.security === "reality") throw new Error("v2ray 4.34 cannot connect to a Reality inbound: use an Xray client");
  const stream =
    link.security === "tls" ? { network: "tcp", security: "tls", tlsSettings: { serverName: link.sni ?? link.address, allowInsecure: false } } : { network: "tcp", security: "none" };
  return {
    log: { loglevel: "warning", access: "none" },
    inbounds: [{ tag: "socks-in", listen: "127.0.0.1", port: socksPort, protocol: "socks", settings: { auth: "noauth", udp: false } }],
    // v2ray 4.34 knows no xtls-rprx-vision flow: the client goes without it, as the server does.
    outbounds: [{ tag: "vless-out", protocol: "vless", settings: { vnext: [{ address: link.address, port: link.port, users: [{ id: link.uuid, encryption: "none", level: 0 }] }] }, streamSettings: stream }],
  };
}


/** Resolves once 127.0.0.1:port accepts connections; rejects after timeoutMs (a hang bound) or when `alive()` turns false. */
export async function waitForPort(port: number, timeoutMs = 60_000, alive: () => boolean = () => true): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!alive()) throw new Error(`the process meant to listen on ${port} has exited`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: "127.0.0.1", port });
      s.once("connect", () => {
        s.destroy();
        resolve(true);
      });
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
}

export interface V2rayClient {
  socksPort: number;
  pid: number;
  /** What v2ray printed so far (for failure messages). */
  output(): string;
  stop(): Promise<void>;
}

export const V2RAY_BIN = "/usr/bin/v2ray";

export async function startV2rayClient(opts: { link: string | VlessLink; caFile?: string; v2rayBin?: string }): Promise<V2rayClient> {
  const bin = opts.v2rayBin ?? V2RAY_BIN;
  if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: install Debian's v2ray (apt-get install v2ray; scripts/test.sh does it)`);
  const link = typeof opts.link === "string" ? parseVlessLink(opts.link) : opts.link;
  const socksPort = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vless-client-"));
  const file = path.join(dir, "client.json");
  fs.writeFileSync(file, JSON.stringify(v2rayClientConfig(link, socksPort)));
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (opts.caFile) env.SSL_CERT_FILE = opts.caFile;
  const child: ChildProcess = spawn(bin, ["-config", file], { stdio: ["ignore", "pipe", "pipe"], env });
  let out = "";
  const collect = (b: Buffer) => {
    out = (out + b.toString("utf8")).slice(-20_000);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  let exited = false;
  const exitPromise = new Promise<void>((resolve) => child.once("close", () => {
    exited = true;
    resolve();
  }));
  child.once("error", (err) => {
    out += `\nspawn failed: ${err.message}`;
  });
  const stop = async () => {
    if (!exited) {
      await stopProcess(child, 3000);
      await exitPromise;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForPort(socksPort, 60_000, () => !exited);
  } catch (err) {
    await stop();
    throw new Error(`the v2ray client did not start: ${(err as Error).message}\n${out}`);
  }
  return { socksPort, pid: child.pid!, output: () => out, stop };
}

/** Opens a TCP tunnel to host:port through a SOCKS5 proxy on 127.0.0.1:socksPort (no auth). */
export function socksConnect(socksPort: number, host: string, port: number, timeoutMs = 10_000): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port: socksPort });
    const timer = setTimeout(() => fail(new Error(`SOCKS connect to ${host}:${port} timed out`)), timeoutMs);
    let stage: "greeting" | "connect" = "greeting";
    let buf = Buffer.alloc(0);
    const fail = (err: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    };
    socket.once("error", fail);
    socket.once("connect", () => socket.write(Buffer.from([5, 1, 0])));
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (stage === "greeting") {
        if (buf.length < 2) return;
        if (buf[0] !== 5 || buf[1] !== 0) return fail(new Error("the SOCKS proxy wants authentication"));
        buf = buf.subarray(2);
        stage = "connect";
        const ipv4 = net.isIPv4(host);
        const addr = ipv4 ? Buffer.from([1, ...host.split(".").map(Number)]) : Buffer.concat([Buffer.from([3, Buffer.byteLength(host)]), Buffer.from(host)]);
        socket.write(Buffer.concat([Buffer.from([5, 1, 0]), addr, Buffer.from([port >> 8, port & 255])]));
        return;
      }
      if (buf.length < 5) return;
      const atyp = buf[3];
      const len = atyp === 1 ? 10 : atyp === 4 ? 22 : 7 + buf[4]!;
      if (buf.length < len) return;
      if (buf[1] !== 0) return fail(new Error(`the SOCKS proxy refused the connection (reply ${buf[1]})`));
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("error", fail);
      const rest = buf.subarray(len);
      if (rest.length > 0) socket.unshift(rest);
      resolve(socket);
    };
    socket.on("data", onData);
  });
}

/** Downloads `url` through the tunnel until the connection ends (or 50 MB, so a miss fails rather than hangs): the bytes that arrived. */
export async function downloadUntilCut(socksPort: number, url: string): Promise<number> {
  const u = new URL(url);
  const socket = await socksConnect(socksPort, u.hostname, Number(u.port));
  return new Promise((resolve) => {
    let bytes = 0;
    socket.on("data", (d: Buffer) => {
      bytes += d.length;
      if (bytes > 50 * 1024 * 1024) socket.destroy();
    });
    socket.once("close", () => resolve(bytes));
    socket.on("error", () => {});
    socket.write(`GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\n\r\n`);
  });
}

/** GET `url` (http://) through the SOCKS5 proxy; resolves with status and body. */
export async function fetchViaSocks(socksPort: number, url: string, opts: { timeoutMs?: number; headers?: Record<string, string> } = {}): Promise<{ status: number; body: string }> {
  const u = new URL(url);
  if (u.protocol !== "http:") throw new Error("fetchViaSocks speaks plain http:// only");
  const port = Number(u.port || 80);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const socket = await socksConnect(socksPort, u.hostname.replace(/^\[(.*)\]$/, "$1"), port, timeoutMs);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: u.hostname, port, path: `${u.pathname}${u.search}`, method: "GET", headers: { connection: "close", ...opts.headers }, createConnection: () => socket, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer from ${url} through SOCKS within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}

/**
 * A local TCP port whose connections are carried through the SOCKS5 proxy to host:port: lets a
 * program that cannot use a proxy (v2ctl's gRPC client) talk to what the tunnel reaches.
 */
export async function forwardThroughSocks(socksPort: number, host: string, port: number): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((local) => {
    sockets.add(local);
    local.once("close", () => sockets.delete(local));
    local.pause();
    socksConnect(socksPort, host, port, 5000).then(
      (remote) => {
        sockets.add(remote);
        remote.once("close", () => sockets.delete(remote));
        remote.once("error", () => local.destroy());
        local.once("error", () => remote.destroy());
        local.pipe(remote).pipe(local);
        local.resume();
      },
      () => local.destroy(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
