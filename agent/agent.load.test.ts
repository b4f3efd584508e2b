/**
 * The load the agent measures every load interval and sends in its next heartbeat
 * (core/heartbeat.ts LOAD_INTERVAL_S), against the stand-in panel and a stand-in core whose
 * reads the test hands out (or holds, or fails). The load window's clock is the test's: it
 * stands still until a test moves it, so a window's length is known exactly.
 */
import fs from "node:fs";
import { afterAll, expect, it } from "vitest";
import type { HeartbeatBody, HeartbeatLoad } from "../core/agent-wire";
import { Agent, LIMIT_FULL_READ_MAX_USERS, loadStride, type AgentDeps } from "./agent";
import type { CoreManager } from "./core-manager";
import { Delivery } from "./delivery";
import { FakePanel, waitFor } from "./fake-panel";
import { memoryLog } from "./log";
import { PanelClient } from "./panel";
import type { TrafficByEmail } from "./stats";
import { agentConfig, tempDir } from "./test-support";

const dirs: string[] = [];
const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const s of stops.reverse()) await s().catch(() => {});
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** A core stand-in, always up unless told: each read hands out the next queued traffic (none: nothing moved). */
class LoadCore {
  readonly kind = "v2ray";
  running = true;
  readonly runningVersion = "v1";
  readonly configError = null;
  readonly unserved = [];
  readonly servedInbounds = [];
  readonly apiPort = 1;
  readonly pid = 1;
  userCount = 3;
  readonly queue: TrafficByEmail[] = [];
  /** Reads throw, as when the core's API does not answer. */
  failing = false;
  /** Reads wait until the test answers them (`held`, in order). */
  hold = false;
  readonly held: Array<(traffic: TrafficByEmail) => void> = [];
  reads = 0;

  async apply(): Promise<boolean> {
    return true;
  }

  readTraffic(): Promise<TrafficByEmail> {
    this.reads++;
    if (this.failing) return Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:1"));
    if (this.hold) return new Promise((resolve) => this.held.push(resolve));
    return Promise.resolve(this.queue.shift() ?? new Map());
  }

  async stop(): Promise<void> {}
}

function traffic(rows: Record<string, [up: number, down: number]>): TrafficByEmail {
  return new Map(Object.entries(rows).map(([email, [up, down]]) => [email, { up, down }]));
}

/** The loads the panel received, in order. */
function loads(panel: FakePanel): HeartbeatLoad[] {
  return panel.heartbeatBodies.filter((b) => b !== null).map((b) => (b as HeartbeatBody).load!);
}

/** The loads in which somebody moved traffic, in order (windows without traffic send zeros). */
function busyLoads(panel: FakePanel): HeartbeatLoad[] {
  return loads(panel).filter((l) => l.usersOnline > 0);
}

/**
 * An agent sampling and heartbeating every 50 ms, reporting only when a test asks (after the
 * report sent at start, which has been read when this resolves). With `held`, the load
 * timer's reads are held from then on: a sample comes only when the test ends one (`sample`),
 * so no later sample replaces the one a test waits for before a heartbeat carries it.
 */
async function start(over: Partial<AgentDeps> = {}, opts: { refuseHeartbeatBodies?: boolean; held?: boolean } = {}) {
  const stateDir = tempDir("rb-agent-load-");
  dirs.push(stateDir);
  const panel = new FakePanel(agentConfig({ reportIntervalS: 3600 }));
  panel.refuseHeartbeatBodies = opts.refuseHeartbeatBodies ?? false;
  await panel.start();
  stops.push(() => panel.close());
  const core = new LoadCore();
  const clock = { ms: 1_700_000_000_000 };
  const log = memoryLog();
  const agent = new Agent({
    panel: new PanelClient(panel.url, panel.token, "test"),
    core: core as unknown as CoreManager,
    delivery: new Delivery(null),
    log,
    stateDir,
    coreVersion: "V2Ray 4.34.0",
    agentVersion: "test",
    reportIntervalOverrideS: 3600,
    configWaitS: 5,
    minBackoffMs: 100,
    maxBackoffMs: 300,
    heartbeatIntervalS: 0.05,
    loadIntervalS: 0.05,
    now: () => clock.ms,
    ...over,
  });
  agent.run().catch(() => {});
  // stop() waits for the load read in flight: a held one ends first.
  stops.push(() => {
    core.hold = false;
    for (const end of core.held.splice(0)) end(new Map());
    return agent.stop();
  });
  await waitFor("the report sent at start", () => panel.reports.length >= 1);
  core.hold = opts.held ?? false;
  return { panel, core, clock, log, agent };
}

/** Ends the load timer's held read with `t`; the next one is held in turn. */
async function sample(core: LoadCore, t: TrafficByEmail = new Map()): Promise<void> {
  await waitFor("a load read held", () => core.held.length > 0);
  core.held.shift()!(t);
}

/**
 * Two load ticks take no sample, and of the next four heartbeats none after the first two
 * carries a load (the one in flight, or the next, may still carry the sample taken before).
 */
async function noSampleNorLoad(agent: Agent, panel: FakePanel): Promise<void> {
  const [ticks, samples] = [agent.loadTicks, agent.loadSamples];
  await waitFor("two load ticks", () => agent.loadTicks >= ticks + 2);
  expect(agent.loadSamples).toBe(samples);
  const n = panel.heartbeatBodies.length;
  await waitFor("four more heartbeats", () => panel.heartbeatBodies.length >= n + 4);
  expect(panel.heartbeatBodies.slice(n + 2).filter((b) => b !== null)).toEqual([]);
}

it("sends the load since the last sample in the next heartbeat: each user once, rates over the window's length, traffic a report read meanwhile included; the window starts again after", async () => {
  const { panel, core, clock, agent } = await start({}, { held: true });
  // While the load timer's read is held, only the report asked for here reads the counters.
  await waitFor("a load read held", () => core.held.length === 1);
  core.hold = false;
  core.queue.push(traffic({ "sub-alice": [1000, 4000], "sub-bob": [0, 0] }));
  agent.reportSoon();
  await waitFor("the report carrying that traffic", () => panel.reports.find((r) => r.users?.some((u) => u.email === "sub-alice")));
  core.hold = true;
  // The window began when the clock last stood (every sample so far ran at that instant):
  // it is 10 s long when the held read ends.
  clock.ms += 10_000;
  await sample(core, traffic({ "sub-alice": [500, 1000], "sub-carol": [1500, 0] }));
  const first = await waitFor("a heartbeat with that load", () => busyLoads(panel)[0]);
  // alice read twice and carol: 2 users (bob moved nothing); uplink is rx.
  expect(first).toEqual({ usersOnline: 2, rxBps: (3000 * 8) / 10, txBps: (5000 * 8) / 10 });

  // The next window holds only what came after that sample, over the 5 s since it.
  clock.ms += 5000;
  await sample(core, traffic({ "sub-bob": [2000, 3000] }));
  const second = await waitFor("the next load with traffic", () => busyLoads(panel)[1]);
  expect(second).toEqual({ usersOnline: 1, rxBps: (2000 * 8) / 5, txBps: (3000 * 8) / 5 });
  // Accounting is unchanged: the panel counted every byte, once.
  core.hold = false;
  await sample(core);
  agent.reportSoon();
  await waitFor("bob's bytes counted", () => panel.counted.get("sub-bob")?.down === 3000);
  expect(Object.fromEntries(panel.counted)).toEqual({ "sub-alice": { up: 1500, down: 5000 }, "sub-bob": { up: 2000, down: 3000 }, "sub-carol": { up: 1500, down: 0 } });
});

it("sends each sample once: heartbeats go without a body until the next sample", async () => {
  const { panel, core } = await start({}, { held: true });
  await sample(core, traffic({ "sub-alice": [10, 10] }));
  await waitFor("the sample in a heartbeat", () => busyLoads(panel).length === 1);
  // The next read is held: no sample comes, no heartbeat carries one.
  const n = panel.heartbeatBodies.length;
  await waitFor("four more heartbeats", () => panel.heartbeatBodies.length >= n + 4);
  expect(panel.heartbeatBodies.slice(n)).toEqual(panel.heartbeatBodies.slice(n).map(() => null));
  await sample(core, traffic({ "sub-carol": [10, 10] }));
  await waitFor("the next sample in a heartbeat", () => busyLoads(panel).length === 2);
});

it("measures no load while the core is not running or its counters cannot be read, and the next window starts after the outage", async () => {
  const { panel, core, clock, log, agent } = await start({}, { held: true });
  await sample(core);
  await waitFor("a first sample", () => agent.loadSamples >= 1);

  // The core is down for a minute: no read, no sample, no load in heartbeats.
  core.running = false;
  clock.ms += 60_000;
  const [reads, samples] = [core.reads, agent.loadSamples];
  await noSampleNorLoad(agent, panel);
  expect(core.reads).toBe(reads);
  // Back: the first sample spans the 2 s since, not the outage.
  core.running = true;
  clock.ms += 2000;
  await sample(core, traffic({ "sub-alice": [1000, 2000] }));
  expect(await waitFor("the load after the core came back", () => busyLoads(panel)[0])).toEqual({ usersOnline: 1, rxBps: (1000 * 8) / 2, txBps: (2000 * 8) / 2 });

  // The core's API fails for a minute: said once, no sample, no load.
  await sample(core);
  await waitFor("the sample before", () => agent.loadSamples >= samples + 2);
  core.failing = true;
  clock.ms += 60_000;
  await noSampleNorLoad(agent, panel);
  const failed = log.lines.filter((l) => l.startsWith("warn: reading traffic counters for the load failed"));
  expect(failed).toEqual(["warn: reading traffic counters for the load failed: connect ECONNREFUSED 127.0.0.1:1 (heartbeats go without the load until a read works)"]);
  // Reads work again: the first sample spans the 3 s since, and that is said once.
  core.failing = false;
  clock.ms += 3000;
  await sample(core, traffic({ "sub-bob": [3000, 6000] }));
  expect(await waitFor("the load after reads work again", () => busyLoads(panel)[1])).toEqual({ usersOnline: 1, rxBps: (3000 * 8) / 3, txBps: (6000 * 8) / 3 });
  expect(log.lines.filter((l) => l.includes("for the load works again"))).toEqual(["info: reading traffic counters for the load works again"]);
});

it("sends no load with loadIntervalS 0: the counters are read for reports only", async () => {
  const { panel, core, agent } = await start({ loadIntervalS: 0 });
  core.queue.push(traffic({ "sub-alice": [1000, 1000] }));
  agent.reportSoon();
  await waitFor("the report with alice's traffic", () => panel.reports.find((r) => r.usersOnline === 1));
  const n = panel.heartbeats.length;
  // Ten heartbeat intervals: many load intervals had it been on (the test above's 50 ms).
  await waitFor("ten more heartbeats", () => panel.heartbeats.length >= n + 10);
  expect(panel.heartbeatBodies.filter((b) => b !== null)).toEqual([]);
  expect(agent.loadTicks).toBe(0);
  expect(core.reads).toBe(2);
});

it("keeps heartbeating, without the load, after a 400 to a heartbeat carrying one, and says once that it is a bug", async () => {
  const { panel, core, log } = await start({}, { refuseHeartbeatBodies: true });
  await waitFor("the refusal said", () => log.lines.some((l) => l.includes("rejected a heartbeat's load")));
  const [n, reads] = [panel.heartbeats.length, core.reads];
  await waitFor("five more heartbeats", () => panel.heartbeats.length >= n + 5);
  expect(panel.heartbeatBodies.slice(n).filter((b) => b !== null)).toEqual([]);
  expect(log.lines.filter((l) => l.includes("rejected a heartbeat's load"))).toEqual([
    "error: the panel rejected a heartbeat's load (400: load: not a field of a heartbeat); heartbeats go on without it until the agent restarts. This is a bug: please report it.",
  ]);
  // No counter reads for a load nobody takes.
  expect(core.reads).toBe(reads);
});

it("posts a heartbeat's body as JSON and none without one; 400 or 413 to a body is a rejection, 404 still means unsupported", async () => {
  const panel = new FakePanel(agentConfig());
  await panel.start();
  stops.push(() => panel.close());
  const client = new PanelClient(panel.url, panel.token, "test");
  const load = { usersOnline: 3, rxBps: 1.5, txBps: 2e6 };
  // The stand-in answers 400 to a body that is not declared JSON or does not fit the contract.
  expect(await client.postHeartbeat(10_000, undefined, { load })).toBe("ok");
  expect(await client.postHeartbeat(10_000)).toBe("ok");
  expect(panel.heartbeatBodies).toEqual([{ load }, null]);
  const tooLarge = { load, padding: "x".repeat(2000) } as unknown as HeartbeatBody;
  expect(await client.postHeartbeat(10_000, undefined, tooLarge)).toEqual({ kind: "rejected", status: 413, error: "heartbeat body too large" });
  panel.refuseHeartbeatBodies = true;
  expect(await client.postHeartbeat(10_000, undefined, { load })).toEqual({ kind: "rejected", status: 400, error: "load: not a field of a heartbeat" });
  expect(await client.postHeartbeat(10_000)).toBe("ok");
  // Without a body a 400 is what it was before: an error, not a contract mismatch.
  panel.heartbeatStatus = 400;
  expect(await client.postHeartbeat(10_000)).toBe("error");
  panel.heartbeatStatus = 404;
  expect(await client.postHeartbeat(10_000, undefined, { load })).toEqual({ kind: "unsupported", status: 404 });
  panel.heartbeatStatus = 405;
  expect(await client.postHeartbeat(10_000)).toEqual({ kind: "unsupported", status: 405 });
});

it("samples a config past LIMIT_FULL_READ_MAX_USERS users every few load intervals, so the counters read for the load stay about that many users per interval", async () => {
  expect([0, 3, LIMIT_FULL_READ_MAX_USERS].map(loadStride)).toEqual([1, 1, 1]);
  expect([LIMIT_FULL_READ_MAX_USERS + 1, 100_000, 1_000_000].map(loadStride)).toEqual([2, 5, 50]);
  expect([Number.NaN, Number.POSITIVE_INFINITY].map(loadStride)).toEqual([1, 1]);
  const { core, agent } = await start();
  core.userCount = 3 * LIMIT_FULL_READ_MAX_USERS;
  const ticks0 = agent.loadTicks;
  const samples0 = agent.loadSamples;
  await waitFor("twelve load ticks", () => agent.loadTicks - ticks0 >= 12);
  // One sample per three ticks (a tick may have begun one still being read).
  const samples = agent.loadSamples - samples0;
  expect(samples).toBeGreaterThanOrEqual(3);
  expect(samples).toBeLessThanOrEqual(5);
});
