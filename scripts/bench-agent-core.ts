/**
 * npm run bench:agent-core — the agent at internet scale (issue 23, point 6): how long it takes,
 * and how much memory, to fetch a panel config of N users (brotli-compressed, as the panel
 * sends it, served by this parent process), read and validate it as it streams in, render the core's config, have the core
 * test it, start the core and save the config for the next start; then the same for a one-user
 * change (live through `xray api adu/rmu` on Xray, a restart on v2ray). Figures, not
 * assertions: the aims are < 10 s and < 500 MB of agent RSS.
 *
 * Phases (BENCH_PHASES, default "xray,v2ray"):
 *  - xray: 1,000,000 users (BENCH_XRAY_USERS) on the Xray stand-in (agent/testdata/fake-xray.mjs),
 *    one VLESS-Reality inbound with the vision flow;
 *  - v2ray: 100,000 users (BENCH_V2RAY_USERS) on the real v2ray 4.34, one VLESS inbound.
 * Each run is a fresh child process, so its peak RSS (VmHWM) is the agent's alone (the panel,
 * serving the bodies, is this parent process; the core and its config tests are processes of
 * their own); the core's RSS is printed next to it, and the CPU seconds of the agent, of the commands it ran and of
 * the core, so a busy machine's wall times can be told from the work. Prints one JSON line
 * per phase, then a summary line. The child bounds its heap's growth as agent/main.ts does
 * (agent/heap.ts); BENCH_AGENT_HEAP_GROWTH=<percent> sets another bound, 0 leaves V8's rule.
 */
import { execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import type { AgentConfig } from "@/core/agent-wire";
import { coreVersion, type CoreBinaries } from "@/agent/core-binary";
import { CoreManager } from "@/agent/core-manager";
import type { Log } from "@/agent/log";
import { PanelClient } from "@/agent/panel";
import { boundHeapGrowth } from "@/agent/heap";
import { writeJsonAtomic } from "@/agent/state";
import { freePort } from "./harness/app";

const ROOT = path.resolve(import.meta.dirname, "..");
const FAKE_XRAY = path.join(ROOT, "agent/testdata/fake-xray.mjs");

type Kind = "xray" | "v2ray";

function vmKb(pid: number | "self", field: "VmHWM" | "VmRSS"): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

/** CPU seconds: this process's, and those of its children that have ended (the core's config tests, its API calls). */
function cpuS(): { self: number; children: number } {
  const f = fs.readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  const tick = 100; // USER_HZ
  return { self: (Number(f[11]) + Number(f[12])) / tick, children: (Number(f[13]) + Number(f[14])) / tick };
}

/** CPU seconds a running process has used so far. */
function cpuOfPid(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

async function until(what: string, fn: () => Promise<boolean> | boolean, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The panel's config for one server: `users` subscribers (ids are UUIDs, as the panel's are). */
function panelConfig(kind: Kind, users: number, inboundPort: number): AgentConfig {
  const inbound =
    kind === "xray"
      ? {
          id: randomUUID(),
          tag: `in-${inboundPort}`,
          name: "Reality",
          protocol: "vless" as const,
          port: inboundPort,
          security: "reality" as const,
          sni: "www.example.com",
          flow: "xtls-rprx-vision" as const,
          tls: null,
          reality: { privateKey: "cK8uY2M7rQ", publicKey: "pub", shortIds: ["0123456789abcdef"], serverNames: ["www.example.com"], dest: "www.example.com:443" },
        }
      : { id: randomUUID(), tag: `in-${inboundPort}`, name: "Plain", protocol: "vless" as const, port: inboundPort, security: "none" as const, sni: null, flow: "" as const, tls: null, reality: null };
  return {
    version: "bench-1",
    server: { id: randomUUID(), name: "bench", address: "127.0.0.1", enabled: true },
    reportIntervalS: 60,
    inbounds: [inbound],
    // Ordered by subscriber id (the email), as the panel sends them.
    users: Array.from({ length: users }, () => ({ id: randomUUID(), email: randomUUID() as string })).sort((a, b) => (a.email < b.email ? -1 : 1)),
    neighbours: [],
  };
}

/** BENCH_DEBUG=1: memory at each step on stderr. */
function step(what: string) {
  if (process.env.BENCH_DEBUG !== "1") return;
  const m = process.memoryUsage();
  process.stderr.write(`${what}: rss ${Math.round(m.rss / 1e6)} MB, heap ${Math.round(m.heapUsed / 1e6)} of ${Math.round(m.heapTotal / 1e6)} MB, peak ${Math.round(vmKb("self", "VmHWM") / 1024)} MB\n`);
}

/** BENCH_AGENT_HEAP_GROWTH: the agent's heap growth percent (agent/heap.ts; 0 = V8's own rule), else the agent's default. */
function heapGrowthOption(): number | undefined {
  const v = process.env.BENCH_AGENT_HEAP_GROWTH;
  if (v === undefined || v === "") return undefined;
  if (!/^\d{1,4}$/.test(v)) throw new Error(`BENCH_AGENT_HEAP_GROWTH: expected a whole percent (0 = V8's own rule), got ${JSON.stringify(v)}`);
  return Number(v);
}

/** One run, in this (child) process: what the agent does with a config the panel serves, timed. */
async function child(kind: Kind, panelUrl: string, stateDir: string) {
  // As agent/main.ts does at start; BENCH_AGENT_HEAP_GROWTH=0 leaves V8's own rule (for comparison).
  boundHeapGrowth(heapGrowthOption());
  const log: Log = { info: () => {}, warn: (m) => process.stderr.write(`warn: ${m.slice(0, 300)}\n`), error: (m) => process.stderr.write(`error: ${m.slice(0, 300)}\n`) };
  const bins: CoreBinaries = kind === "xray" ? { kind, bin: FAKE_XRAY, ctl: FAKE_XRAY } : { kind, bin: "/usr/bin/v2ray", ctl: "/usr/bin/v2ctl" };
  const version = await coreVersion(bins);
  const core = new CoreManager({ bins, stateDir, apiPort: await freePort(), log, coreVersion: version });
  // The config the agent holds: a full config's unchanged users are taken from it (agent.ts passes its own).
  let held: AgentConfig | null = null;
  const apply = async (which: "first" | "change") => {
    const t0 = performance.now();
    const cpu0 = cpuS();
    const coreCpu0 = core.pid ? cpuOfPid(core.pid) : 0;
    const answer = await new PanelClient(`${panelUrl}/${which}`, "bench", "bench").fetchConfig(null, 0, undefined, held);
    if (answer.kind !== "config") throw new Error(`the config was not taken: ${JSON.stringify(answer).slice(0, 300)}`);
    const config = answer.config;
    held = config;
    const tParsed = performance.now();
    step("parsed");
    const pidBefore = core.pid;
    if (!(await core.apply(config))) throw new Error(`the core rejected the config: ${core.configError}`);
    const tApplied = performance.now();
    step("applied");
    // The agent keeps what runs for its next start (agent.ts applyConfig).
    writeJsonAtomic(path.join(stateDir, "last-config.json"), config);
    const tSaved = performance.now();
    step("saved");
    // Serving: the core's API and inbound answer (after a restart, the new process's).
    await until("the core to serve", async () => core.running && core.pid !== undefined && (await connects(core.apiPort!)) && (await connects(config.inbounds[0]!.port)));
    const tServing = performance.now();
    const cpu1 = cpuS();
    const round = (n: number) => Math.round(n * 100) / 100;
    return {
      // CPU seconds: the agent's; the commands it ran (config tests, API calls; after a restart
      // also the stopped core's whole run); the running core's.
      cpuS: { agent: round(cpu1.self - cpu0.self), commands: round(cpu1.children - cpu0.children), core: round(cpuOfPid(core.pid!) - (core.pid === pidBefore ? coreCpu0 : 0)) },
      // Download, brotli, reading and validating as it streams in.
      fetchMs: Math.round(tParsed - t0),
      applyMs: Math.round(tApplied - tParsed),
      saveMs: Math.round(tSaved - tApplied),
      untilServingMs: Math.round(tServing - tSaved),
      totalMs: Math.round(tServing - t0),
      restarted: pidBefore !== undefined && core.pid !== pidBefore,
    };
  };
  const first = await apply("first");
  const change = await apply("change");
  const coreRssMb = Math.round(vmKb(core.pid!, "VmRSS") / 1024);
  await core.stop();
  return { core: version, first, oneUserChange: change, agentPeakRssMb: Math.round(vmKb("self", "VmHWM") / 1024), coreRssMb };
}

/** The first config and a one-user change, as the panel sends them; the objects are dropped (this process serves them). */
function panelBodies(kind: Kind, users: number, inboundPort: number): { bodies: Record<string, Buffer>; configMb: number } {
  const config = panelConfig(kind, users, inboundPort);
  // One subscriber replaced by another: the smallest change that touches the core.
  const added = { id: randomUUID(), email: randomUUID() as string };
  const changed = { ...config, version: "bench-2", users: [...config.users.slice(1), added].sort((a, b) => (a.email < b.email ? -1 : 1)) };
  const first = JSON.stringify(config);
  // Brotli, as the panel sends it (server/dataplane/config-http.ts encodeBody), at quality 1
  // instead of 5: 5 takes minutes on 90 MB of random ids here, and the agent's decoding costs
  // about the same either way.
  const brotli = (text: string) => zlib.brotliCompressSync(text, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 1, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: text.length } });
  return { bodies: { first: brotli(first), change: brotli(JSON.stringify(changed)) }, configMb: Math.round(first.length / 1024 / 1024) };
}

async function phase(kind: Kind, users: number) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `rb-bench-agent-core-${kind}-`));
  try {
    const { bodies, configMb } = panelBodies(kind, users, await freePort());
    const panel = http.createServer((req, res) => {
      const body = bodies[(req.url ?? "").split("/")[1] ?? ""];
      if (!body || !new URL(req.url ?? "/", "http://x").pathname.endsWith("/api/agent/config")) return void res.writeHead(404).end();
      res.writeHead(200, { "content-type": "application/json", "content-encoding": "br", "content-length": body.length }).end(body);
    });
    await new Promise<void>((r) => panel.listen(0, "127.0.0.1", r));
    const panelUrl = `http://127.0.0.1:${(panel.address() as net.AddressInfo).port}`;
    const stateDir = path.join(dir, "state");
    fs.mkdirSync(stateDir);
    try {
      const out = await new Promise<string>((resolve, reject) => {
        const p = spawn(process.execPath, ["--import", "tsx", import.meta.filename, "--child", kind, panelUrl, stateDir], { stdio: ["ignore", "pipe", "inherit"], cwd: ROOT });
        let text = "";
        p.stdout.on("data", (c: Buffer) => (text += c.toString("utf8")));
        p.on("close", (code) => (code === 0 ? resolve(text) : reject(new Error(`the ${kind} run exited with ${code}`))));
      });
      // A shared machine's wall times say little without its load; the CPU seconds say what the work was.
      return { phase: kind, users, configMb, brotliMb: Math.round((bodies.first!.length / 1024 / 1024) * 10) / 10, ...(JSON.parse(out) as Record<string, unknown>), loadAverage: Math.round(os.loadavg()[0]! * 10) / 10 };
    } finally {
      panel.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  if (process.argv[2] === "--child") {
    const [kind, panelUrl, stateDir] = process.argv.slice(3) as [Kind, string, string];
    process.stdout.write(JSON.stringify(await child(kind, panelUrl, stateDir)));
    return;
  }
  heapGrowthOption();
  const phases = (process.env.BENCH_PHASES ?? "xray,v2ray").split(",").map((p) => p.trim());
  const results = [];
  for (const kind of phases) {
    if (kind !== "xray" && kind !== "v2ray") throw new Error(`unknown phase ${kind} (xray, v2ray)`);
    if (kind === "v2ray") execFileSync("/usr/bin/v2ray", ["-version"], { stdio: "ignore" });
    const users = Number(kind === "xray" ? (process.env.BENCH_XRAY_USERS ?? 1_000_000) : (process.env.BENCH_V2RAY_USERS ?? 100_000));
    process.stderr.write(`${kind}: ${users} users…\n`);
    const r = await phase(kind, users);
    process.stdout.write(`${JSON.stringify(r)}\n`);
    results.push(r);
  }
  process.stdout.write(`${JSON.stringify({ summary: results.map((r) => ({ phase: r.phase, users: r.users, ...pick(r) })), cores: os.cpus().length })}\n`);
}

function pick(r: Record<string, unknown>) {
  const first = r.first as { totalMs: number };
  const change = r.oneUserChange as { totalMs: number; restarted: boolean };
  return { firstS: first.totalMs / 1000, changeS: change.totalMs / 1000, changeRestarted: change.restarted, agentPeakRssMb: r.agentPeakRssMb, aimsMet: first.totalMs < 10_000 && change.totalMs < 10_000 && (r.agentPeakRssMb as number) < 500 };
}

void main().catch((err: unknown) => {
  process.stderr.write(`bench:agent-core failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
