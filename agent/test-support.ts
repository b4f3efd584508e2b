/**
 * Helpers for the agent's tests that run real parts (v2ray, openssl, sockets). Not shipped:
 * nothing in main.ts imports this file.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { AgentConfig, AgentInbound } from "../core/agent-wire";
import type { CoreBinaries } from "./core-binary";

/** Fails (never skips) when the real v2ray is missing, saying how to get it. */
export function requireV2ray(): { bin: string; ctl: string } {
  for (const f of ["/usr/bin/v2ray", "/usr/bin/v2ctl"]) {
    if (!fs.existsSync(f)) throw new Error(`${f} is missing: these tests run the real v2ray 4.34; install it with apt-get install v2ray (scripts/test.sh does)`);
  }
  return { bin: "/usr/bin/v2ray", ctl: "/usr/bin/v2ctl" };
}

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** A self-signed P-256 certificate for localhost and 127.0.0.1. */
export function makeCert(dir: string): { certFile: string; keyFile: string } {
  const certFile = path.join(dir, "cert.pem");
  const keyFile = path.join(dir, "key.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-days", "2", "-keyout", keyFile, "-out", certFile], { stdio: "ignore" });
  return { certFile, keyFile };
}

/** A local HTTP target answering `body` on every path. */
export async function startHttpTarget(body: string): Promise<{ url: string; paths: string[]; close(): Promise<void> }> {
  /** Every request's path and query, in arrival order: a refusal test checks what never came. */
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    paths.push(req.url ?? "");
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/target`,
    paths,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export const IDS = {
  server: "00000000-0000-4000-8000-000000000001",
  inNone: "00000000-0000-4000-8000-0000000000a1",
  inTls: "00000000-0000-4000-8000-0000000000a2",
  inReality: "00000000-0000-4000-8000-0000000000a3",
  alice: "11111111-1111-4111-8111-111111111111",
  bob: "22222222-2222-4222-8222-222222222222",
  neighbour: "00000000-0000-4000-8000-000000000002",
} as const;

export function inbound(over: Partial<AgentInbound> & Pick<AgentInbound, "id" | "port" | "security">): AgentInbound {
  return { tag: `in-${over.port}`, name: `Inbound ${over.port}`, protocol: "vless", sni: null, flow: "", tls: null, reality: null, ...over };
}

export function agentConfig(over: Partial<AgentConfig> = {}): AgentConfig {
  return {
    version: "v1",
    server: { id: IDS.server, name: "test", address: "127.0.0.1", enabled: true },
    reportIntervalS: 30,
    inbounds: [],
    users: [{ id: IDS.alice, email: "sub-alice" }],
    neighbours: [],
    ...over,
  };
}

export function vlessLink(uuid: string, port: number, security: "none" | "tls", sni?: string): string {
  return `vless://${uuid}@127.0.0.1:${port}?encryption=none&security=${security}&type=tcp${sni ? `&sni=${sni}` : ""}#test`;
}

/** The Xray stand-in (testdata/fake-xray.mjs): the real Xray-core is not installed here. */
export const FAKE_XRAY = path.join(import.meta.dirname, "testdata/fake-xray.mjs");
export const FAKE_XRAY_BINS: CoreBinaries = { kind: "xray", bin: FAKE_XRAY, ctl: FAKE_XRAY };

/**
 * A state folder for a core running the stand-in. With $FAKE_XRAY_LOG set to `logFile`, the
 * stand-in appends each command it is run with there; `calls()` reads them in order.
 */
export function fakeXrayDir(prefix: string): { dir: string; logFile: string; calls(): string[] } {
  const dir = tempDir(prefix);
  const logFile = path.join(dir, "calls.log");
  return { dir, logFile, calls: () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, "utf8").trim().split("\n") : []) };
}

/** A port for a core's API or an inbound, random so that test files running side by side do not collide. */
export function randomPort(): number {
  return 20000 + Math.floor(Math.random() * 20000);
}

/** A REALITY inbound with settings the stand-in accepts as Xray would. */
export function realityInbound(port: number): AgentInbound {
  return inbound({
    id: IDS.inReality,
    port,
    security: "reality",
    flow: "xtls-rprx-vision",
    reality: { privateKey: "priv", publicKey: "pub", shortIds: ["ab"], serverNames: ["www.example.com"], dest: "www.example.com:443" },
  });
}

/**
 * Traffic through the Xray stand-in (testdata/fake-xray.mjs) running on this API port: its
 * counters grow as the real core's would, for users it knows. Resolves with how many it took.
 */
export async function addTraffic(apiPort: number, rows: Array<[email: string, up: number, down: number]>): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${apiPort}/traffic`, { method: "POST", body: JSON.stringify(rows) });
  return ((await res.json()) as { counted: number }).counted;
}

/** Whether the stand-in's REALITY inbound `tag` would let a client of this version in. */
export async function realityAdmits(apiPort: number, tag: string, clientVersion: string): Promise<boolean> {
  const res = await fetch(`http://127.0.0.1:${apiPort}/reality`, { method: "POST", body: JSON.stringify({ tag, clientVersion }) });
  return ((await res.json()) as { admitted: boolean }).admitted;
}
