/**
 * The core manager with the real v2ray 4.34: a none and a TLS inbound, a real VLESS client
 * (e2e/vless-client.ts) fetching a local target through each, per-user counters read and reset
 * through StatsService, an unknown UUID refused, and a rejected config keeping the old core;
 * the edge boundary (loopback and the core's API out of a subscriber's reach), and a TLS
 * inbound whose certificate is missing left out without failing the rest.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchViaSocks, forwardThroughSocks, freePort, startV2rayClient, waitForPort, type V2rayClient } from "../e2e/vless-client";
import { CoreManager } from "./core-manager";
import { memoryLog } from "./log";
import { waitFor } from "./fake-panel";
import { agentConfig, IDS, inbound, makeCert, requireV2ray, startHttpTarget, tempDir, vlessLink } from "./test-support";

const bins = requireV2ray();
const dir = tempDir("rb-agent-core-");
const cert = makeCert(dir);
const log = memoryLog();
const clients: V2rayClient[] = [];
let target: Awaited<ReturnType<typeof startHttpTarget>>;
let core: CoreManager;
let nonePort: number;
let tlsPort: number;

beforeAll(async () => {
  target = await startHttpTarget("hello through vless");
  nonePort = await freePort();
  tlsPort = await freePort();
  // v2ray 4.34's test mode passes every config the agent renders from a valid panel config (a
  // missing certificate is now left out before it), so a rejection is injected: the real v2ray
  // behind a wrapper whose test mode refuses a config naming the user "reject-me".
  const wrapper = path.join(dir, "v2ray-refusing");
  fs.writeFileSync(wrapper, `#!/bin/sh\nif [ "$1" = "-test" ] && grep -q '"reject-me"' "$3"; then echo "Failed to start: refused by the test" >&2; exit 23; fi\nexec ${bins.bin} "$@"\n`);
  fs.chmodSync(wrapper, 0o755);
  core = new CoreManager({ bins: { kind: "v2ray", ...bins, bin: wrapper }, stateDir: dir, apiPort: await freePort(), log });
});

afterAll(async () => {
  for (const c of clients) await c.stop();
  await core?.stop();
  await target?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The local port of an http://127.0.0.1:<port>/ target. */
const portOf = (url: string) => Number(new URL(url).port);

/** `v2ctl api … StatsService.QueryStats reset: true` against 127.0.0.1:port: the attack of issue 21, point 1. */
function resetAllCounters(port: number): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(bins.ctl, ["api", `--server=127.0.0.1:${port}`, "StatsService.QueryStats", 'pattern: "" reset: true'], { timeout: 20_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, out: `${stdout}${stderr}` });
    });
  });
}

async function client(uuid: string, port: number, security: "none" | "tls") {
  const c = await startV2rayClient({ link: vlessLink(uuid, port, security, security === "tls" ? "localhost" : undefined), caFile: security === "tls" ? cert.certFile : undefined });
  clients.push(c);
  return c;
}

describe("v2ray driven by the core manager", () => {
  it("serves a none and a TLS inbound, counts per user, refuses strangers, keeps running on a bad config", async () => {
    const config = agentConfig({
      version: "v1",
      inbounds: [inbound({ id: IDS.inNone, port: nonePort, security: "none" }), inbound({ id: IDS.inTls, port: tlsPort, security: "tls", sni: "localhost", tls: { certificateFile: cert.certFile, keyFile: cert.keyFile } })],
      users: [
        { id: IDS.alice, email: "sub-alice" },
        { id: IDS.bob, email: "sub-bob" },
      ],
      // The target is on the server's loopback: reachable only because it is allowed, exactly.
      allowedPrivateDestinations: [`127.0.0.1:${portOf(target.url)}`],
    });
    expect(await core.apply(config)).toBe(true);
    expect(core.configError).toBeNull();
    expect(core.runningVersion).toBe("v1");
    await waitForPort(nonePort);
    await waitForPort(tlsPort);
    await waitForPort(core.apiPort!);
    const firstPid = core.pid;

    const viaNone = await client(IDS.alice, nonePort, "none");
    expect(await fetchViaSocks(viaNone.socksPort, target.url)).toEqual({ status: 200, body: "hello through vless" });
    const viaTls = await client(IDS.bob, tlsPort, "tls");
    expect(await fetchViaSocks(viaTls.socksPort, target.url)).toEqual({ status: 200, body: "hello through vless" });

    const traffic = await core.readTraffic();
    const alice = traffic.get("sub-alice");
    const bob = traffic.get("sub-bob");
    expect(alice?.up).toBeGreaterThan(0);
    expect(alice?.down).toBeGreaterThan("hello through vless".length);
    expect(bob?.up).toBeGreaterThan(0);
    expect(bob?.down).toBeGreaterThan("hello through vless".length);
    // Read with reset: nothing new since.
    const again = await core.readTraffic();
    expect([...again.values()].every((t) => t.up === 0 && t.down === 0)).toBe(true);

    const stranger = await client("33333333-3333-4333-8333-333333333333", nonePort, "none");
    await expect(fetchViaSocks(stranger.socksPort, target.url, { timeoutMs: 5000 })).rejects.toThrow();

    // A config the core's test mode rejects: the old core keeps serving.
    const broken = { ...config, version: "v2", users: [...config.users, { id: "44444444-4444-4444-8444-444444444444", email: "reject-me" }] };
    expect(await core.apply(broken)).toBe(false);
    expect(core.configError).toBe("the core rejected config v2: Failed to start: refused by the test");
    expect(core.runningVersion).toBe("v1");
    expect(core.pid).toBe(firstPid);
    expect(core.running).toBe(true);
    expect(await fetchViaSocks(viaNone.socksPort, target.url)).toEqual({ status: 200, body: "hello through vless" });
    expect(log.lines.some((l) => l.startsWith("error:") && l.includes("rejected config v2"))).toBe(true);

    // Only users changed: v2ray cannot add VLESS users live, so it restarts (and says so).
    expect(await core.apply({ ...config, version: "v3", users: [{ id: IDS.alice, email: "sub-alice" }] })).toBe(true);
    expect(core.configError).toBeNull();
    expect(core.pid).not.toBe(firstPid);
    expect(log.lines.some((l) => l.includes("users changed (config v3): restarting v2ray"))).toBe(true);
    await waitForPort(nonePort);
    await waitForPort(tlsPort);
    await expect(fetchViaSocks(viaTls.socksPort, target.url, { timeoutMs: 5000 })).rejects.toThrow();
    expect(await fetchViaSocks(viaNone.socksPort, target.url)).toEqual({ status: 200, body: "hello through vless" });
  }, 60_000);

  it("keeps subscribers off the server's loopback and the core's API; an allowed destination works", async () => {
    const other = await startHttpTarget("not for subscribers");
    const apiPort = await freePort();
    const port = await freePort();
    const edgeDir = tempDir("rb-agent-edge-");
    const edge = new CoreManager({ bins: { kind: "v2ray", ...bins }, stateDir: edgeDir, apiPort, log: memoryLog() });
    const forwards: Array<{ close(): Promise<void> }> = [];
    try {
      const config = agentConfig({
        version: "e1",
        inbounds: [inbound({ id: IDS.inNone, port, security: "none" })],
        users: [{ id: IDS.alice, email: "sub-alice" }],
        // The operator even lists the API port: it stays closed whatever the list says.
        allowedPrivateDestinations: [`127.0.0.1:${portOf(target.url)}`, `127.0.0.1:${apiPort}`],
      });
      expect(await edge.apply(config)).toBe(true);
      expect(edge.apiPort).toBe(apiPort);
      await waitForPort(port);
      await waitForPort(apiPort);
      const alice = await client(IDS.alice, port, "none");

      // The allowed destination, exactly: reachable.
      expect(await fetchViaSocks(alice.socksPort, target.url)).toEqual({ status: 200, body: "hello through vless" });
      // Another loopback port answers on the server itself, but not through the tunnel, by address or by name.
      expect((await fetch(other.url)).status).toBe(200);
      await expect(fetchViaSocks(alice.socksPort, other.url, { timeoutMs: 5000 })).rejects.toThrow();
      await expect(fetchViaSocks(alice.socksPort, other.url.replace("127.0.0.1", "localhost"), { timeoutMs: 5000 })).rejects.toThrow();
      await expect(fetchViaSocks(alice.socksPort, other.url.replace("127.0.0.1", "127.0.0.2"), { timeoutMs: 5000 })).rejects.toThrow();

      // The core's API through the tunnel: v2ctl's QueryStats reset:true (which zeroed every
      // counter before) does not get through, by address or by name, and counts survive.
      for (const host of ["127.0.0.1", "localhost", "0.0.0.0"]) {
        const forward = await forwardThroughSocks(alice.socksPort, host, apiPort);
        forwards.push(forward);
        const attack = await resetAllCounters(forward.port);
        expect(attack.code, `${host}: ${attack.out}`).not.toBe(0);
      }
      const traffic = await edge.readTraffic();
      expect(traffic.get("sub-alice")?.down).toBeGreaterThan("hello through vless".length);
      // The API itself is up: the agent's own call, not through the tunnel, works.
      expect((await resetAllCounters(apiPort)).code).toBe(0);
    } finally {
      for (const f of forwards) await f.close();
      await edge.stop();
      await other.close();
      fs.rmSync(edgeDir, { recursive: true, force: true });
    }
  }, 60_000);

  it("leaves out a TLS inbound whose certificate is missing, serves the rest and still removes users", async () => {
    const nonePort2 = await freePort();
    const tlsPort2 = await freePort();
    const tlsDir = tempDir("rb-agent-tls-");
    const mgr = new CoreManager({ bins: { kind: "v2ray", ...bins }, stateDir: tlsDir, apiPort: await freePort(), log: memoryLog() });
    try {
      const missing = path.join(tlsDir, "missing.pem");
      const config = agentConfig({
        version: "t1",
        inbounds: [inbound({ id: IDS.inNone, port: nonePort2, security: "none" }), inbound({ id: IDS.inTls, port: tlsPort2, security: "tls", sni: "localhost", tls: { certificateFile: missing, keyFile: cert.keyFile } })],
        users: [
          { id: IDS.alice, email: "sub-alice" },
          { id: IDS.bob, email: "sub-bob" },
        ],
        allowedPrivateDestinations: [`127.0.0.1:${portOf(target.url)}`],
      });
      expect(await mgr.apply(config)).toBe(true);
      expect(mgr.configError).toBeNull();
      expect(mgr.unserved).toEqual([{ inboundId: IDS.inTls, reason: `the TLS certificate file ${missing} does not exist on this server: put it there or fix the path on the inbound` }]);
      expect(mgr.servedInbounds.map((i) => i.port)).toEqual([nonePort2]);
      await waitForPort(nonePort2);
      const bob = await client(IDS.bob, nonePort2, "none");
      expect(await fetchViaSocks(bob.socksPort, target.url)).toEqual({ status: 200, body: "hello through vless" });
      // Removing a user (an expired one, say) is not blocked by the missing file.
      expect(await mgr.apply({ ...config, version: "t2", users: [{ id: IDS.alice, email: "sub-alice" }] })).toBe(true);
      expect(mgr.runningVersion).toBe("t2");
      await waitForPort(nonePort2);
      await expect(fetchViaSocks(bob.socksPort, target.url, { timeoutMs: 5000 })).rejects.toThrow();
    } finally {
      await mgr.stop();
      fs.rmSync(tlsDir, { recursive: true, force: true });
    }
  }, 60_000);

  it("says why when the core dies right after start (port taken)", async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, "0.0.0.0", r));
    const taken = (blocker.address() as net.AddressInfo).port;
    const otherDir = tempDir("rb-agent-core2-");
    const other = new CoreManager({ bins: { kind: "v2ray", ...bins }, stateDir: otherDir, apiPort: await freePort(), log: memoryLog(), supervisor: { minBackoffMs: 200 } });
    try {
      expect(await other.apply(agentConfig({ version: "p1", inbounds: [inbound({ id: IDS.inNone, port: taken, security: "none" })] }))).toBe(true);
      const error = await waitFor("the start-up failure", () => other.configError);
      expect(error).toMatch(/^the core exited right after start with config p1: .*address already in use/);
    } finally {
      await other.stop();
      blocker.close();
      fs.rmSync(otherDir, { recursive: true, force: true });
    }
  }, 30_000);

  it("moves its API port when something else listens there (two agents on one host)", async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
    const taken = (blocker.address() as net.AddressInfo).port;
    const otherDir = tempDir("rb-agent-core3-");
    const other = new CoreManager({ bins: { kind: "v2ray", ...bins }, stateDir: otherDir, apiPort: taken, log: memoryLog() });
    try {
      expect(await other.apply(agentConfig({ version: "a1", inbounds: [inbound({ id: IDS.inNone, port: await freePort(), security: "none" })] }))).toBe(true);
      expect(other.apiPort).not.toBe(taken);
      await waitForPort(other.apiPort!);
      expect(await waitFor("the API to answer", () => other.readTraffic().catch(() => null))).toBeInstanceOf(Map);
      expect(other.configError).toBeNull();
    } finally {
      await other.stop();
      blocker.close();
      fs.rmSync(otherDir, { recursive: true, force: true });
    }
  }, 30_000);

  it("serves a user on a plan only on the inbounds that list the plan (issue 27 point 2), and follows a plan change", async () => {
    const planDir = tempDir("rb-agent-core4-");
    const mgr = new CoreManager({ bins: { kind: "v2ray", ...bins }, stateDir: planDir, apiPort: await freePort(), log: memoryLog() });
    const aPort = await freePort();
    const bPort = await freePort();
    const inA = { ...inbound({ id: IDS.inNone, port: aPort, security: "none" }), plans: ["plan-a"] };
    const inB = { ...inbound({ id: IDS.inTls, port: bPort, security: "none" }), plans: ["plan-b"] };
    const allowed = [`127.0.0.1:${portOf(target.url)}`];
    try {
      // alice is on plan A; bob has no plan (a plan with every route): both inbounds take him.
      const users = [
        { id: IDS.alice, email: "sub-alice", plan: "plan-a" },
        { id: IDS.bob, email: "sub-bob" },
      ];
      expect(await mgr.apply(agentConfig({ version: "p1", inbounds: [inA, inB], users, allowedPrivateDestinations: allowed }))).toBe(true);
      await waitForPort(aPort);
      await waitForPort(bPort);
      const aliceA = await client(IDS.alice, aPort, "none");
      const aliceB = await client(IDS.alice, bPort, "none");
      const bobB = await client(IDS.bob, bPort, "none");
      expect(await fetchViaSocks(aliceA.socksPort, target.url)).toEqual({ status: 200, body: "hello through vless" });
      expect(await fetchViaSocks(bobB.socksPort, target.url)).toEqual({ status: 200, body: "hello through vless" });
      // Her own key on plan B's inbound: refused, as a stranger is.
      await expect(fetchViaSocks(aliceB.socksPort, target.url, { timeoutMs: 5000 })).rejects.toThrow();

      // Moved to plan B: now the other way round.
      expect(await mgr.apply(agentConfig({ version: "p2", inbounds: [inA, inB], users: [{ ...users[0]!, plan: "plan-b" }, users[1]!], allowedPrivateDestinations: allowed }))).toBe(true);
      await waitForPort(aPort);
      await waitForPort(bPort);
      expect(await waitFor("alice through plan B's inbound", () => fetchViaSocks(aliceB.socksPort, target.url, { timeoutMs: 5000 }).catch(() => null), 20_000)).toEqual({ status: 200, body: "hello through vless" });
      await expect(fetchViaSocks(aliceA.socksPort, target.url, { timeoutMs: 5000 })).rejects.toThrow();
    } finally {
      await mgr.stop();
      fs.rmSync(planDir, { recursive: true, force: true });
    }
  }, 90_000);
});
