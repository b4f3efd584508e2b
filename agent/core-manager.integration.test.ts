/**
 * The core manager with the real v2ray 4.34: a none and a TLS inbound, a real VLESS client
 * (e2e/vless-client.ts) fetching a local target through each, per-user counters read and reset
 * through StatsService, an unknown UUID refused, and a rejected config keeping the old core.
 */
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchViaSocks, freePort, startV2rayClient, waitForPort, type V2rayClient } from "../e2e/vless-client";
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
  core = new CoreManager({ bins: { kind: "v2ray", ...bins }, stateDir: dir, apiPort: await freePort(), log });
});

afterAll(async () => {
  for (const c of clients) await c.stop();
  await core?.stop();
  await target?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

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

    // A certificate that does not exist: v2ray's test mode rejects it, the old core keeps serving.
    const broken = { ...config, version: "v2", inbounds: [config.inbounds[0]!, { ...config.inbounds[1]!, tls: { certificateFile: path.join(dir, "missing.pem"), keyFile: cert.keyFile } }] };
    expect(await core.apply(broken)).toBe(false);
    expect(core.configError).toMatch(/v2: .*missing\.pem/);
    expect(core.runningVersion).toBe("v1");
    expect(core.pid).toBe(firstPid);
    expect(core.running).toBe(true);
    expect(await fetchViaSocks(viaNone.socksPort, target.url)).toEqual({ status: 200, body: "hello through vless" });
    expect(log.lines.some((l) => l.startsWith("error:") && l.includes("missing.pem"))).toBe(true);

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

  it("says why when the core dies right after start (port taken)", async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, "0.0.0.0", r));
    const taken = (blocker.address() as net.AddressInfo).port;
    const otherDir = tempDir("rb-agent-core2-");
    const other = new CoreManager({ bins: { kind: "v2ray", ...bins }, stateDir: otherDir, apiPort: await freePort(), log: memoryLog(), supervisor: { minBackoffMs: 200 } });
    try {
      expect(await other.apply(agentConfig({ version: "p1", inbounds: [inbound({ id: IDS.inNone, port: taken, security: "none" })] }))).toBe(true);
      const error = await waitFor("the start-up failure", () => other.configError, 10_000);
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
      expect(await waitFor("the API to answer", () => other.readTraffic().catch(() => null), 10_000)).toBeInstanceOf(Map);
      expect(other.configError).toBeNull();
    } finally {
      await other.stop();
      blocker.close();
      fs.rmSync(otherDir, { recursive: true, force: true });
    }
  }, 30_000);
});
