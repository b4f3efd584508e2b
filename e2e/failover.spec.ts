/**
 * Failover in seconds (issue 24, part 1) with real parts, at DEFAULT settings (report every
 * 60 s, probes every 30 s with a threshold of 3: nothing is tuned here): the panel, two
 * servers on 127.0.0.1 each run by an agent downloaded from the panel with Debian's v2ray as
 * its core, one route over both. The server a subscriber's subscription names dies as a
 * machine does: its agent and its core are SIGKILLed at once. The test measures the time from
 * the kill to the first /sub that names the other server (recorded as an annotation, not
 * asserted: timing assertions flake), checks that a client built from it works, and that the
 * surviving server was never marked down.
 */
import { test, expect, request as playwrightRequest, type APIRequestContext } from "@playwright/test";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { freePort, startApp, type AppProcess } from "../scripts/harness/app";
import { login, trpcMutation, trpcQuery, type HealthServerRow } from "../scripts/harness/trpc";
import { fetchViaSocks, startV2rayClient } from "./vless-client";
import { until } from "./until";

const ADMIN = { username: "failover", password: "failover-e2e-password" };

test.describe.configure({ mode: "serial" });
test.setTimeout(300_000);

interface SubRoute {
  inboundId: string;
  server: string;
  link: string;
}

function startTarget(): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => res.end("through the survivor"));
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      resolve({ url: `http://127.0.0.1:${port}/`, port, close: () => new Promise((r) => server.close(() => r())) });
    });
  });
}

interface Agent {
  child: ChildProcess;
  stateDir: string;
  log: () => string;
}

function startAgent(bundle: string, panelUrl: string, token: string, stateDir: string): Agent {
  let out = "";
  const child = spawn(process.execPath, [bundle, "--panel", panelUrl, "--token", token, "--core", "v2ray", "--core-bin", "/usr/bin/v2ray", "--state-dir", stateDir], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, PATH: `/usr/bin:${process.env.PATH ?? ""}` },
  });
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  return { child, stateDir, log: () => out };
}

/** The PID of the core an agent supervises (<state-dir>/core.pid), if it runs. */
function corePid(stateDir: string): number | null {
  try {
    const pid = Number(readFileSync(path.join(stateDir, "core.pid"), "utf8").trim());
    if (!Number.isInteger(pid) || pid <= 0) return null;
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}


async function route(api: APIRequestContext, token: string): Promise<SubRoute> {
  const res = await api.get(`/sub/${token}?format=json`);
  expect(res.status()).toBe(200);
  const body = (await res.json()) as { routes: SubRoute[] };
  expect(body.routes).toHaveLength(1);
  return body.routes[0]!;
}

async function statuses(api: APIRequestContext, clusterId: string): Promise<Map<string, string>> {
  const h = await trpcQuery<{ servers: Array<Pick<HealthServerRow, "id" | "status">> }>(api, "monitoring.health", { clusterId });
  return new Map(h.servers.map((s) => [s.id, s.status]));
}

test("a server that dies (agent and core SIGKILLed at once) is routed around within seconds at default settings", async ({ browser }) => {
  expect(existsSync("/usr/bin/v2ray"), "Debian's v2ray is needed: apt-get install v2ray").toBe(true);
  const work = mkdtempSync(path.join(os.tmpdir(), "rb-failover-"));
  let app: AppProcess | null = null;
  let api: APIRequestContext | null = null;
  const agents: Agent[] = [];
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    const port = await freePort();
    app = await startApp({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password, ROUTEBOARD_DEMO: "0", PUBLIC_URL: `http://127.0.0.1:${port}` }, { port, dataDir: path.join(work, "panel-data") });
    api = await playwrightRequest.newContext({ baseURL: app.url });
    await login(api, ADMIN.username, ADMIN.password);
    const target = await startTarget();
    cleanups.push(() => target.close());

    // Default report interval and probe config: nothing is set.
    const cluster = await trpcMutation<{ id: string }>(api, "clusters.create", { name: "Failover" });
    const servers = [] as Array<{ id: string; agentToken: string; inboundId: string }>;
    for (const name of ["one", "two"]) {
      const s = await trpcMutation<{ id: string; agentToken: string }>(api, "servers.create", { clusterId: cluster.id, name, address: "127.0.0.1" });
      const inb = await trpcMutation<{ inbound: { id: string } }>(api, "inbounds.create", { serverId: s.id, name: `in-${name}`, port: await freePort(), security: "none", sni: null });
      servers.push({ ...s, inboundId: inb.inbound.id });
    }
    await trpcMutation(api, "routes.create", { clusterId: cluster.id, name: "Both", algorithm: "round-robin", inboundIds: servers.map((s) => s.inboundId) });
    await trpcMutation(api, "clusters.setAllowedPrivateDestinations", { clusterId: cluster.id, destinations: [`127.0.0.1:${target.port}`] });
    const alice = await trpcMutation<{ token: string }>(api, "subscribers.create", { clusterId: cluster.id, name: "alice" });

    const bundleRes = await api.get("/agent/routeboard-agent.mjs");
    expect(bundleRes.status()).toBe(200);
    const bundle = path.join(work, "routeboard-agent.mjs");
    writeFileSync(bundle, await bundleRes.body());
    for (const [i, s] of servers.entries()) agents.push(startAgent(bundle, app.url, s.agentToken, path.join(work, `state-${i}`)));
    // The agent reports as soon as its core runs; the bound is for a busy machine.
    await until("both servers healthy, their cores running", 120_000, async () => {
      const st = await statuses(api!, cluster.id);
      return servers.every((s) => st.get(s.id) === "healthy") && agents.every((a) => corePid(a.stateDir) !== null);
    }).catch(async (err: Error) => {
      const h = await trpcQuery<unknown>(api!, "monitoring.health", { clusterId: cluster.id });
      throw new Error(`${err.message}\n${JSON.stringify(h).slice(0, 3000)}\n${agents.map((a, i) => `--- agent ${i}:\n${a.log()}`).join("\n")}`);
    });

    const before = await route(api, alice.token);
    const deadIndex = servers.findIndex((s) => s.inboundId === before.inboundId);
    expect(deadIndex).toBeGreaterThanOrEqual(0);
    const dead = agents[deadIndex]!;
    const survivor = servers[1 - deadIndex]!;
    // The survivor is never marked down: its status is watched from now to the end.
    const survivorStatuses = new Set<string>();
    let watching = true;
    const watch = (async () => {
      while (watching) {
        survivorStatuses.add((await statuses(api!, cluster.id)).get(survivor.id) ?? "missing");
        await new Promise((r) => setTimeout(r, 250));
      }
    })();

    // --- the machine dies: agent and core at once
    const pid = corePid(dead.stateDir)!;
    const diedAt = Date.now();
    dead.child.kill("SIGKILL");
    process.kill(pid, "SIGKILL");
    const moved = await until("a /sub naming the other server", 150_000, async () => {
      const r = await route(api!, alice.token);
      return r.inboundId !== before.inboundId ? r : null;
    });
    const failoverMs = Date.now() - diedAt;
    test.info().annotations.push({ type: "death to /sub naming another server", description: `${failoverMs} ms (default settings)` });
    console.log(`failover: death to /sub naming another server took ${failoverMs} ms at default settings`);
    expect(Number.isFinite(failoverMs)).toBe(true);
    expect(moved.inboundId).toBe(survivor.inboundId);
    // Out of rotation by the fast path (heartbeat lost, fast probes failed), not by the slow one.
    const h = await trpcQuery<{ servers: Array<Pick<HealthServerRow, "id" | "status" | "reason">> }>(api, "monitoring.health", { clusterId: cluster.id });
    const deadRow = h.servers.find((s) => s.id === servers[deadIndex]!.id)!;
    expect(deadRow.status).toBe("no-data");
    expect(deadRow.reason).toMatch(/^No heartbeat for \d+ s .*3 fast probes in a row failed/);
    // The health page says which path took it out, and that the survivor's heartbeats arrive.
    const context = await browser.newContext({ baseURL: app.url, storageState: await api.storageState() });
    cleanups.push(() => context.close());
    const page = await context.newPage();
    await page.goto(`/clusters/${cluster.id}/health`);
    const heartbeatOf = (name: string) => page.locator(`tr[aria-label="Server ${name}"]`).getByTestId("heartbeat");
    const deadName = deadIndex === 0 ? "one" : "two";
    await expect(heartbeatOf(deadName)).toHaveAttribute("data-phase", "lost");
    await expect(heartbeatOf(deadName)).toHaveText(/^no heartbeat for \d+ s and the fast probes failed: out of rotation until one arrives$/);
    await expect(heartbeatOf(deadName === "one" ? "two" : "one")).toHaveText("heartbeats arriving (every 2 s)");

    // The link works: a client built from it reaches the target through the survivor.
    const client = await startV2rayClient({ link: moved.link });
    cleanups.push(() => client.stop());
    const res = await fetchViaSocks(client.socksPort, target.url);
    expect(res.status).toBe(200);
    expect(res.body).toBe("through the survivor");

    watching = false;
    await watch;
    expect([...survivorStatuses]).toEqual(["healthy"]);
  } finally {
    for (const c of cleanups.reverse()) await c().catch(() => {});
    for (const a of agents) {
      if (a.child.exitCode === null && a.child.signalCode === null) a.child.kill("SIGKILL");
      const pid = corePid(a.stateDir);
      if (pid) process.kill(pid, "SIGKILL");
    }
    await api?.dispose();
    await app?.stop();
    rmSync(work, { recursive: true, force: true });
  }
});
