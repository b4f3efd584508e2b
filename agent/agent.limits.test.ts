/**
 * Limits enforced by the agent with the real v2ray (issue 25 point 8): a user with a 1 MB
 * limit downloading from a loopback target at a known pace is cut soon after passing it,
 * with the panel up and with the panel away; every byte still reaches the panel once; a user
 * the panel hands out again is served again.
 */
import fs from "node:fs";
import http from "node:http";
import type net from "node:net";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { downloadUntilCut, fetchViaSocks, freePort, startV2rayClient, waitForPort, type V2rayClient } from "../e2e/vless-client";
import { Agent } from "./agent";
import { CoreManager } from "./core-manager";
import { Delivery } from "./delivery";
import { FakePanel, waitFor } from "./fake-panel";
import { memoryLog } from "./log";
import { PanelClient } from "./panel";
import { STATE_FILES } from "./state";
import { agentConfig, IDS, inbound, requireV2ray, startHttpTarget, tempDir, vlessLink } from "./test-support";

const bins = { kind: "v2ray" as const, ...requireV2ray() };
const LIMIT = 1024 * 1024;
/** The stream's pace: CHUNK bytes every TICK_MS, so what 5 s carry is known. */
const CHUNK = 32 * 1024;
const TICK_MS = 25;
const BYTES_IN_5_S = (CHUNK * 5000) / TICK_MS;
/** What the stream carries in half a second: the window of a core restart, where counters are lost or bytes are still in flight. */
const RESTART_SLACK = (CHUNK * 500) / TICK_MS;

const stops: Array<() => Promise<void>> = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const s of stops.reverse()) await s().catch(() => {});
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** An endless download at a steady pace, until the connection is cut. */
async function startStreamTarget(): Promise<{ url: string }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/octet-stream" });
    const chunk = Buffer.alloc(CHUNK, 7);
    const t = setInterval(() => res.write(chunk), TICK_MS);
    res.on("close", () => clearInterval(t));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  stops.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/stream` };
}


describe("traffic limits enforced by the agent with real v2ray", () => {
  const clients: V2rayClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.stop();
  });
  let small: Awaited<ReturnType<typeof startHttpTarget>>;
  let stream: { url: string };
  beforeAll(async () => {
    small = await startHttpTarget("hello");
    stops.push(() => small.close());
    stream = await startStreamTarget();
  });

  it("cuts a 1 MB user within 5 s of passing the limit, panel up or away, counts every byte once, and serves a user handed out again", async () => {
    const stateDir = tempDir("rb-agent-limits-");
    dirs.push(stateDir);
    const port = await freePort();
    const apiPort = await freePort();
    const allowed = [`127.0.0.1:${new URL(small.url).port}`, `127.0.0.1:${new URL(stream.url).port}`];
    const users = [
      { id: IDS.alice, email: "sub-alice" },
      { id: IDS.bob, email: "sub-bob" },
    ];
    const config = (version: string, list = users) => agentConfig({ version, reportIntervalS: 1, inbounds: [inbound({ id: IDS.inNone, port, security: "none" })], users: list, allowedPrivateDestinations: allowed });
    const panel = new FakePanel(config("v1"));
    panel.limitBytes.set("sub-alice", LIMIT);
    panel.limitBytes.set("sub-bob", LIMIT);
    await panel.start();
    stops.push(() => panel.close());
    const log = memoryLog();
    onTestFailed(() => console.log(log.lines.join("\n")));
    /** An agent on `stateDir`, as main.ts wires one (a second start reads what the first left there). */
    const startAgent = () => {
      let a: Agent | null = null;
      const c = new CoreManager({ bins, stateDir, apiPort, log, onCoreExit: () => a?.coreExited(), beforeRestart: async () => a?.drainCounters() });
      a = new Agent({ panel: new PanelClient(panel.url, panel.token, "test"), core: c, delivery: new Delivery(path.join(stateDir, STATE_FILES.delivery)), log, stateDir, coreVersion: "V2Ray 4.34.0", agentVersion: "test", reportIntervalOverrideS: 1, configWaitS: 5, minBackoffMs: 100, maxBackoffMs: 300, heartbeatIntervalS: 0 });
      a.run().catch(() => {});
      stops.push(() => a.stop());
      return { agent: a, core: c };
    };
    let { agent, core } = startAgent();
    await waitForPort(port);

    const alice = await startV2rayClient({ link: vlessLink(IDS.alice, port, "none") });
    const bob = await startV2rayClient({ link: vlessLink(IDS.bob, port, "none") });
    clients.push(alice, bob);
    // A first small fetch each: the answer to the report carrying it says what they have left.
    expect(await fetchViaSocks(alice.socksPort, small.url)).toEqual({ status: 200, body: "hello" });
    expect(await fetchViaSocks(bob.socksPort, small.url)).toEqual({ status: 200, body: "hello" });
    await waitFor("both limits known", () => typeof agent.limits.of("sub-alice") === "object" && typeof agent.limits.of("sub-bob") === "object" && agent.limits.of("sub-bob") !== null);

    // Panel up: alice downloads until she is cut.
    const aliceLeft = (agent.limits.of("sub-alice") as { remaining: number; spent: number }).remaining;
    const aliceBytes = await downloadUntilCut(alice.socksPort, stream.url);
    expect(aliceBytes).toBeGreaterThan(aliceLeft - CHUNK * 4);
    expect(aliceBytes - aliceLeft).toBeLessThan(BYTES_IN_5_S);
    expect([...agent.limits.removed]).toContain("sub-alice");
    await expect(fetchViaSocks(alice.socksPort, small.url, { timeoutMs: 3000 })).rejects.toThrow();
    // Her bytes reach the panel once. What moved between the last read before v2ray's restart
    // and its end dies with the old process's counters (v2ray 4 cannot remove a user live), so
    // the panel may get a little less than she received; never twice as much.
    await waitFor("alice's bytes at the panel", () => (panel.counted.get("sub-alice")?.down ?? 0) >= aliceBytes - RESTART_SLACK);
    expect(panel.counted.get("sub-alice")!.down).toBeLessThan(aliceBytes + RESTART_SLACK);
    expect(log.lines.some((l) => /sub-alice (passed|is over) its traffic limit/.test(l))).toBe(true);

    // Panel away: bob is cut all the same, by the agent alone.
    const bobLeft = (agent.limits.of("sub-bob") as { remaining: number; spent: number }).remaining;
    panel.down = true;
    const refusedBefore = panel.reportsRefusedWhileDown;
    await waitFor("a report refused while the panel is down", () => panel.reportsRefusedWhileDown > refusedBefore);
    const readsBefore = agent.limitReads;
    const bobBytes = await downloadUntilCut(bob.socksPort, stream.url);
    expect(bobBytes - bobLeft).toBeLessThan(BYTES_IN_5_S);
    expect([...agent.limits.removed]).toContain("sub-bob");
    // Cut by the agent's own counter reads: at most as many as the limit takes at this pace, plus two.
    expect(agent.limitReads - readsBefore).toBeLessThanOrEqual(Math.ceil(bobLeft / ((CHUNK * 2000) / TICK_MS)) + 2);
    await expect(fetchViaSocks(bob.socksPort, small.url, { timeoutMs: 3000 })).rejects.toThrow();
    // The agent restarts while the panel is still away: bob stays out.
    await agent.stop();
    ({ agent, core } = startAgent());
    await waitFor("the core on the saved config", () => core.running && core.runningVersion === "v1");
    await waitForPort(port);
    expect([...agent.limits.removed].sort()).toEqual(["sub-alice", "sub-bob"]);
    await expect(fetchViaSocks(bob.socksPort, small.url, { timeoutMs: 3000 })).rejects.toThrow();
    panel.down = false;
    await waitFor("bob's bytes at the panel once it is back", () => (panel.counted.get("sub-bob")?.down ?? 0) >= bobBytes - RESTART_SLACK);
    expect(panel.counted.get("sub-bob")!.down).toBeLessThan(bobBytes + RESTART_SLACK);

    // The panel drops alice (over her limit), then hands her out again (limit raised): served again.
    panel.limitBytes.set("sub-alice", 100 * LIMIT);
    panel.setConfig(config("v2", users.slice(1)));
    await waitFor("config v2", () => core.runningVersion === "v2");
    panel.setConfig(config("v3"));
    await waitFor("config v3", () => core.runningVersion === "v3");
    await waitFor("alice served again", () => fetchViaSocks(alice.socksPort, small.url, { timeoutMs: 3000 }).then((r) => r.status === 200).catch(() => false));
    // Bob, still over his limit and still listed, stays out.
    await expect(fetchViaSocks(bob.socksPort, small.url, { timeoutMs: 3000 })).rejects.toThrow();
  }, 120_000);
});
