/**
 * The agent end to end against a stand-in panel (fake-panel.ts) and the real v2ray: config by
 * long-poll, traffic counted once through panel outages and agent restarts, 429/400/duplicate
 * answers, the last good config at start, and the one-line refusal of a bad token.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { fetchViaSocks, freePort, startV2rayClient, waitForPort, type V2rayClient } from "../e2e/vless-client";
import type { AgentConfig } from "../core/agent-wire";
import { Agent, FatalError } from "./agent";
import { CoreManager } from "./core-manager";
import { Delivery } from "./delivery";
import { FakePanel, waitFor } from "./fake-panel";
import { memoryLog, type Log } from "./log";
import { PanelClient, UNAUTHORIZED_MESSAGE } from "./panel";
import { STATE_FILES } from "./state";
import type { TrafficByEmail } from "./stats";
import { agentConfig, IDS, inbound, makeCert, requireV2ray, startHttpTarget, tempDir, vlessLink } from "./test-support";

const bins = { kind: "v2ray" as const, ...requireV2ray() };
const dirs: string[] = [];
const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const s of stops.reverse()) await s().catch(() => {});
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** `coreOrApiPort`: a stand-in core, or the API port of a real v2ray wired as main.ts does. */
function makeAgent(panel: FakePanel, stateDir: string, log: Log, coreOrApiPort: CoreManager | number, over: { reportIntervalOverrideS?: number; heartbeatIntervalS?: number; client?: PanelClient } = {}) {
  let agent: Agent | null = null;
  const core =
    typeof coreOrApiPort === "number"
      ? new CoreManager({ bins, stateDir, apiPort: coreOrApiPort, log, onCoreExit: () => agent?.coreExited(), beforeRestart: async () => agent?.drainCounters() })
      : coreOrApiPort;
  agent = new Agent({ panel: over.client ?? new PanelClient(panel.url, panel.token, "test"), core, delivery: new Delivery(path.join(stateDir, STATE_FILES.delivery)), log, stateDir, coreVersion: "V2Ray 4.34.0", agentVersion: "test", reportIntervalOverrideS: over.reportIntervalOverrideS ?? 1, configWaitS: 5, minBackoffMs: 100, maxBackoffMs: 300, heartbeatIntervalS: over.heartbeatIntervalS });
  const running = agent.run();
  running.catch(() => {});
  stops.push(() => agent!.stop());
  return { agent, running, core };
}

/** A state folder and a stand-in panel serving `config`, both gone after the file. */
async function startPanel(prefix: string, config: AgentConfig = agentConfig()): Promise<{ stateDir: string; panel: FakePanel }> {
  const stateDir = tempDir(prefix);
  dirs.push(stateDir);
  const panel = new FakePanel(config);
  await panel.start();
  stops.push(() => panel.close());
  return { stateDir, panel };
}

describe("the agent with real v2ray", () => {
  let target: Awaited<ReturnType<typeof startHttpTarget>>;
  const clients: V2rayClient[] = [];
  beforeAll(async () => {
    target = await startHttpTarget("through the agent");
    stops.push(() => target.close());
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.stop();
  });

  it("serves the panel's config, reports traffic once through outages and restarts, and starts from the saved config", async () => {
    const stateDir = tempDir("rb-agent-");
    dirs.push(stateDir);
    const port = await freePort();
    const apiPort = await freePort();
    const config = agentConfig({
      version: "v1",
      reportIntervalS: 1,
      inbounds: [inbound({ id: IDS.inNone, port, security: "none" })],
      users: [
        { id: IDS.alice, email: "sub-alice" },
        { id: IDS.bob, email: "sub-bob" },
      ],
      // The target is on loopback: reachable through the tunnel only because it is allowed.
      allowedPrivateDestinations: [`127.0.0.1:${new URL(target.url).port}`],
    });
    const panel = new FakePanel(config);
    await panel.start();
    stops.push(() => panel.close());
    const log = memoryLog();
    const first = makeAgent(panel, stateDir, log, apiPort);
    await waitForPort(port);

    const alice = await startV2rayClient({ link: vlessLink(IDS.alice, port, "none") });
    clients.push(alice);
    expect(await fetchViaSocks(alice.socksPort, target.url)).toEqual({ status: 200, body: "through the agent" });
    const withTraffic = await waitFor("a report with alice's traffic", () => panel.reports.find((r) => r.users?.some((u) => u.email === "sub-alice")));
    expect(withTraffic).toMatchObject({ seq: 1, listenerAlive: true, serviceRunning: true, usersOnline: 1, configVersion: "v1", configError: null, unservedInbounds: [], listenersDown: [], core: { kind: "v2ray", version: "V2Ray 4.34.0" }, agentVersion: "test" });
    // Rates are the reported bytes over the interval. A report reads the counters at any moment
    // of the exchange, so the request's bytes (rx) and the response's (tx) can land in different
    // reports, on a busy machine too: each direction is looked for on its own.
    await waitFor("reports with rates both ways", () => panel.reports.some((r) => r.rxBps > 0) && panel.reports.some((r) => r.txBps > 0));
    const countedBefore = structuredClone(panel.counted.get("sub-alice")!);
    expect(countedBefore.down).toBeGreaterThan(0);

    // The panel goes away: the core keeps serving, traffic waits in the state dir.
    panel.down = true;
    await waitFor("the agent to find the panel away", () => panel.reportsRefusedWhileDown > 0);
    expect(await fetchViaSocks(alice.socksPort, target.url)).toEqual({ status: 200, body: "through the agent" });
    await waitFor("the traffic to be buffered", () => {
      const state = JSON.parse(fs.readFileSync(path.join(stateDir, STATE_FILES.delivery), "utf8"));
      return state.pending?.users.some((u: { email: string }) => u.email === "sub-alice");
    });
    // The agent restarts while the panel is still away (the core is stopped with it).
    await first.agent.stop();
    const second = makeAgent(panel, stateDir, log, await freePort());
    // It starts the core from the last good config without the panel.
    await waitForPort(port).catch((err: Error) => {
      throw new Error(`${err.message}\n${log.lines.join("\n")}`);
    });
    expect(await fetchViaSocks(alice.socksPort, target.url)).toEqual({ status: 200, body: "through the agent" });
    expect(log.lines.some((l) => l.includes("starting the core on the last good config v1"))).toBe(true);

    // The panel returns: everything counted meanwhile arrives, once.
    const reportsBefore = panel.reports.length;
    panel.down = false;
    // Three fetches of the same page: the two later ones count about twice the first. The
    // third one's bytes may come a report later than the buffer: a report that read the
    // core's counters before that fetch can reach the panel just as it returns.
    await waitFor("the buffered traffic and the third fetch to be acknowledged", () => {
      const state = JSON.parse(fs.readFileSync(path.join(stateDir, STATE_FILES.delivery), "utf8"));
      return panel.reports.length > reportsBefore && state.pending === null && state.open.length === 0 && panel.counted.get("sub-alice")!.down > countedBefore.down * 2.5;
    });
    const after = panel.counted.get("sub-alice")!;
    expect(after.down).toBeLessThan(countedBefore.down * 3.5);
    const seqs = panel.reports.filter((r) => r.seq !== undefined).map((r) => r.seq!);
    expect(new Set(seqs).size).toBeGreaterThanOrEqual(2);

    // A user removed in the panel reaches the core by long-poll.
    panel.setConfig({ ...config, version: "v2", users: [{ id: IDS.bob, email: "sub-bob" }] });
    await waitFor("config v2 to run", () => second.core.runningVersion === "v2");
    await waitForPort(port);
    await expect(fetchViaSocks(alice.socksPort, target.url, { timeoutMs: 5000 })).rejects.toThrow();
    await waitFor("a report on config v2", () => panel.reports.some((r) => r.configVersion === "v2"));
  }, 60_000);
});

describe("a TLS inbound whose certificate is missing", () => {
  it("is reported unserved at once, the rest is served, and it is served once the files are there", async () => {
    const stateDir = tempDir("rb-agent-certs-");
    dirs.push(stateDir);
    const certDir = path.join(stateDir, "certs");
    const [nonePort, tlsPort] = [await freePort(), await freePort()];
    const v1 = agentConfig({ version: "r1", reportIntervalS: 30, inbounds: [inbound({ id: IDS.inNone, port: nonePort, security: "none" })] });
    const panel = new FakePanel(v1);
    await panel.start();
    stops.push(() => panel.close());
    const log = memoryLog();
    const { core } = makeAgent(panel, stateDir, log, await freePort(), { reportIntervalOverrideS: 3600 });
    await waitFor("config r1 to run", () => core.runningVersion === "r1");
    const tls = inbound({ id: IDS.inTls, port: tlsPort, security: "tls", tls: { certificateFile: path.join(certDir, "cert.pem"), keyFile: path.join(certDir, "key.pem") } });
    panel.setConfig({ ...v1, version: "r2", inbounds: [...v1.inbounds, tls] });
    // Not a rejected config (that would block every user change on the server): r2 runs without it.
    const report = await waitFor("a report naming the unserved inbound", () => panel.reports.find((r) => r.configVersion === "r2" && r.unservedInbounds?.length)).catch((err: Error) => {
      throw new Error(`${err.message}\n${log.lines.join("\n")}`);
    });
    expect(report.configError).toBeNull();
    expect(report.unservedInbounds).toEqual([{ inboundId: IDS.inTls, reason: expect.stringMatching(/^the TLS certificate file .*cert\.pem does not exist on this server/) }]);
    await waitForPort(nonePort);
    // The operator puts the certificate in place: the next long-poll round picks it up.
    fs.mkdirSync(certDir);
    makeCert(certDir);
    await waitFor("the TLS inbound to be served", () => core.servedInbounds.some((i) => i.port === tlsPort));
    await waitForPort(tlsPort);
    expect(core.unserved).toEqual([]);
    await waitFor("a report with nothing unserved", () => panel.reports.some((r) => r.configVersion === "r2" && r.unservedInbounds?.length === 0));
  }, 40_000);
});

describe("a core that dies", () => {
  it("is reported at once, out of schedule, and restarted", async () => {
    const port = await freePort();
    const { stateDir, panel } = await startPanel("rb-agent-kill-", agentConfig({ version: "k1", reportIntervalS: 3600, inbounds: [inbound({ id: IDS.inNone, port, security: "none" })] }));
    const log = memoryLog();
    const { core } = makeAgent(panel, stateDir, log, await freePort(), { reportIntervalOverrideS: 3600 });
    await waitFor("a healthy report", () => panel.reports.find((r) => r.serviceRunning && r.listenerAlive));
    const pid = core.pid!;
    expect(fs.readFileSync(path.join(stateDir, STATE_FILES.corePid), "utf8")).toBe(`${pid}\n`);
    const before = panel.reports.length;
    process.kill(pid, "SIGKILL");
    // Out of schedule: the next scheduled report is an hour away.
    const down = await waitFor("a report saying the core is down", () => panel.reports.slice(before).find((r) => !r.serviceRunning));
    expect(down.listenerAlive).toBe(false);
    await waitFor("the core to be restarted", () => core.running && core.pid !== pid);
    await waitForPort(port);
    expect(log.lines.some((l) => l.includes("the core exited (signal SIGKILL)"))).toBe(true);
  });
});

/** A core stand-in for the delivery rules: hands out queued traffic, always "running". */
function stubCore(queue: TrafficByEmail[]): CoreManager {
  const stub = {
    kind: "v2ray",
    running: true,
    runningVersion: "v1",
    configError: null,
    unserved: [],
    servedInbounds: [],
    apiPort: 1,
    pid: 1,
    apply: async () => true,
    readTraffic: async () => queue.shift() ?? new Map(),
    stop: async () => {},
  };
  return stub as unknown as CoreManager;
}

describe("report answers", () => {
  it("waits Retry-After on 429, drops a batch the panel rejects (loudly), and takes a duplicate ack as delivered", async () => {
    const { stateDir, panel } = await startPanel("rb-agent-ans-", agentConfig({ reportIntervalS: 1 }));
    const log = memoryLog();
    const t = (up: number) => new Map([["sub-alice", { up, down: 1 }]]);
    panel.nextReplies.push({ status: 429, body: { error: "too fast" }, headers: { "retry-after": "2" } });
    const { agent } = makeAgent(panel, stateDir, log, stubCore([t(1), t(2), t(3), t(4), t(5)]));
    await waitFor("the first report", () => panel.reports.length >= 1);
    const at429 = Date.now();
    await waitFor("the report after Retry-After", () => panel.reports.length >= 2);
    expect(Date.now() - at429).toBeGreaterThanOrEqual(1800);
    // The same batch went out again after the 429.
    expect(panel.reports[1]!.seq).toBe(panel.reports[0]!.seq);
    expect(panel.reports[1]!.users).toEqual(panel.reports[0]!.users);

    panel.nextReplies.push({ status: 400, body: { error: "users[0].up: expected number ≤ 1000000000000000" } });
    const n = panel.reports.length;
    await waitFor("the 400 and the next batch", () => panel.reports.length >= n + 2);
    expect(log.lines.some((l) => l.startsWith("error:") && l.includes("DROPPED") && l.includes("users[0].up"))).toBe(true);
    expect(panel.reports[n + 1]!.seq).toBe(panel.reports[n]!.seq! + 1);

    panel.nextReplies.push({ status: 200, body: { ok: true, status: "healthy", duplicate: true } });
    const m = panel.reports.length;
    await waitFor("two more reports", () => panel.reports.length >= m + 2);
    const dupSeq = panel.reports[m]!.seq;
    // Delivered: never resent with the same seq.
    expect(panel.reports.slice(m + 1).every((r) => r.seq === undefined || r.seq > dupSeq!)).toBe(true);
    await agent.stop();
  }, 30_000);

  it("a batch sent right after an ack repeats that report's rates and users: no measurement over milliseconds", async () => {
    const { stateDir, panel } = await startPanel("rb-agent-drain-", agentConfig({ reportIntervalS: 1 }));
    const users = (n: number, bytes: number): TrafficByEmail => new Map(Array.from({ length: n }, (_, k) => [`sub-${k}`, { up: bytes, down: 2 * bytes }]));
    // The first report fails (its batch is kept); the next one's read leaves traffic open, so
    // after the kept batch's ack a second batch goes out at once.
    panel.nextReplies.push({ status: 500, body: { error: "down for a moment" } });
    makeAgent(panel, stateDir, memoryLog(), stubCore([users(3, 1000), users(40, 50_000), users(5, 10)]));
    const drain = () => panel.reports.findIndex((r, k) => k > 0 && r.seq !== undefined && panel.reports[k - 1]!.seq !== undefined && r.seq === panel.reports[k - 1]!.seq! + 1);
    await waitFor("a batch right after an ack", () => drain() > 0);
    const k = drain();
    const [first, next] = [panel.reports[k - 1]!, panel.reports[k]!];
    expect(first.usersOnline).toBe(40);
    expect(first.rxBps).toBeGreaterThan(0);
    expect({ usersOnline: next.usersOnline, rxBps: next.rxBps, txBps: next.txBps }).toEqual({ usersOnline: first.usersOnline, rxBps: first.rxBps, txBps: first.txBps });
    // The next scheduled report reads the counters again.
    await waitFor("a scheduled report with the third read", () => panel.reports.slice(k + 1).find((r) => r.usersOnline === 5));
  });

  it("reports as soon as the core first comes up, not one report interval later", async () => {
    const { stateDir, panel } = await startPanel("rb-agent-first-");
    // The core comes up only when the test lets it: after the report sent at start.
    let letStart!: () => void;
    const started = new Promise<void>((r) => (letStart = r));
    const core = stubCore([]) as unknown as { running: boolean; runningVersion: string | null; apply: (c: { version: string }) => Promise<boolean> };
    core.running = false;
    core.runningVersion = null;
    core.apply = async (config) => {
      await started;
      core.running = true;
      core.runningVersion = config.version;
      return true;
    };
    makeAgent(panel, stateDir, memoryLog(), core as unknown as CoreManager, { reportIntervalOverrideS: 3600 });
    await waitFor("the report sent at start", () => panel.reports.find((r) => !r.serviceRunning));
    letStart();
    // The interval is an hour: only the core coming up can send this one.
    await waitFor("a report of the running core", () => panel.reports.find((r) => r.serviceRunning));
  });

  it("sends a heartbeat every interval on its own timer, however long the report interval", async () => {
    const { stateDir, panel } = await startPanel("rb-agent-hb-");
    // When the agent sends each one: arrivals at the panel can bunch up on a busy machine.
    const sent: number[] = [];
    class TimedPanelClient extends PanelClient {
      override postHeartbeat(...args: Parameters<PanelClient["postHeartbeat"]>) {
        sent.push(Date.now());
        return super.postHeartbeat(...args);
      }
    }
    const client = new TimedPanelClient(panel.url, panel.token, "test");
    const { agent } = makeAgent(panel, stateDir, memoryLog(), stubCore([]), { reportIntervalOverrideS: 3600, heartbeatIntervalS: 0.2, client });
    await waitFor("five heartbeats", () => panel.heartbeats.length >= 5);
    await agent.stop();
    const gaps = sent.slice(1).map((t, i) => t - sent[i]!);
    // Paced, not a loop: each goes out a whole interval after the one before (less a timer's rounding).
    expect(gaps.length).toBeGreaterThanOrEqual(4);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(195);
  });

  it("stops heartbeating against a panel that predates heartbeats (404), and keeps reporting", async () => {
    const stateDir = tempDir("rb-agent-hb404-");
    dirs.push(stateDir);
    const panel = new FakePanel(agentConfig());
    panel.heartbeatStatus = 404;
    await panel.start();
    stops.push(() => panel.close());
    const log = memoryLog();
    makeAgent(panel, stateDir, log, stubCore([]), { heartbeatIntervalS: 0.05 });
    // A heartbeat whose answer is later than the interval is asked again (a busy machine can
    // do that), so count from the 404 the agent heard: none may follow it.
    await waitFor("the 404 heard", () => log.lines.some((l) => l.includes("does not take heartbeats (404)")));
    const asked = panel.heartbeats.length;
    const reportsThen = panel.reports.length;
    await waitFor("two more reports", () => panel.reports.length >= reportsThen + 2);
    expect(panel.heartbeats.length).toBe(asked);
    expect(log.lines.filter((l) => l.includes("does not take heartbeats")).length).toBe(1);
  });

  it("says once that the panel is unreachable, once that it reconnected, and nothing after", async () => {
    const { stateDir, panel } = await startPanel("rb-agent-reconnect-", agentConfig({ reportIntervalS: 1 }));
    // Retry after 1 s rather than the default 5 s (its own test is below): the outages stay short.
    panel.downRetryAfterS = 1;
    const log = memoryLog();
    const traffic = () => new Map([["sub-alice", { up: 10, down: 10 }]]);
    makeAgent(panel, stateDir, log, stubCore(Array.from({ length: 50 }, traffic)), { heartbeatIntervalS: 0 });
    const panelLines = () => log.lines.filter((l) => l.includes("the panel") && !l.includes("heartbeat"));
    await waitFor("the first report", () => panel.reports.length >= 1);
    for (let outage = 1; outage <= 2; outage++) {
      panel.down = true;
      const refused = panel.reportsRefusedWhileDown;
      // Several reports and config asks fail (503): the outage is still said once.
      await waitFor("two reports refused", () => panel.reportsRefusedWhileDown >= refused + 2);
      panel.down = false;
      await waitFor("reconnected to the panel", () => log.lines.filter((l) => l.includes("reconnected to the panel")).length === outage);
      const reports = panel.reports.length;
      await waitFor("two reports after the panel is back", () => panel.reports.length >= reports + 2);
      await waitFor("a config ask after the panel is back", () => panel.configRequests > 0);
    }
    const sequence = panelLines().filter((l) => l.includes("cannot reach") || l.includes("reconnected"));
    expect(sequence.map((l) => l.replace(/cannot reach the panel: .*/, "cannot reach the panel"))).toEqual([
      "warn: cannot reach the panel",
      "info: reconnected to the panel",
      "warn: cannot reach the panel",
      "info: reconnected to the panel",
    ]);
    // Traffic read while the panel was away is said to wait, not lost, and arrives.
    expect(log.lines.some((l) => /report not delivered.*traffic batch \d+ is kept and resent/.test(l))).toBe(true);
  }, 60_000);

  const BARE_REPORT = { listenerAlive: true, serviceRunning: true, usersOnline: 0, rxBps: 0, txBps: 0, cpu: 0, memory: 0, neighbours: [] };

  it("waits 5 s after a 503 that names no Retry-After (never 0, a tight loop)", async () => {
    const { panel } = await startPanel("rb-agent-503-");
    panel.down = true;
    const answer = await new PanelClient(panel.url, panel.token, "test").postReport(BARE_REPORT);
    expect(answer).toMatchObject({ kind: "retry", afterS: 5, unavailable: true });
    panel.downRetryAfterS = 1;
    expect(await new PanelClient(panel.url, panel.token, "test").postReport(BARE_REPORT)).toMatchObject({ kind: "retry", afterS: 1, unavailable: true });
  });

  it("ends with one line on a refused token", async () => {
    const { stateDir, panel } = await startPanel("rb-agent-401-");
    const { running } = makeAgent(panel, stateDir, memoryLog(), stubCore([]));
    panel.token = "another";
    await expect(running).rejects.toEqual(new FatalError(UNAUTHORIZED_MESSAGE, 3));
  });

  it("main exits 3 with exactly that line", async () => {
    const { stateDir, panel } = await startPanel("rb-agent-main-");
    const child = spawn(process.execPath, ["--import", "tsx", path.join(import.meta.dirname, "main.ts"), "--core", "v2ray", "--state-dir", stateDir, "--api-port", String(await freePort())], {
      env: { ...process.env, ROUTEBOARD_URL: panel.url, ROUTEBOARD_AGENT_TOKEN: "wrong" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    const code = await new Promise<number | null>((r) => child.once("close", r));
    expect(code).toBe(3);
    expect(stderr.trim().split("\n").filter((l) => !l.includes(" info: "))).toEqual([`routeboard-agent: ${UNAUTHORIZED_MESSAGE}`]);
  }, 30_000);
});
