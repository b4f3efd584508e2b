/**
 * Limits enforced by the agent (issue 25 point 8), with real parts: the panel, the agent it
 * serves, Debian's v2ray as the server core and as the subscriber's client. A subscriber with
 * a 1 MB limit downloads from a loopback target at a known pace; the agent cuts her soon
 * after she passes the limit (well before the next report interval, 30 s here), and her
 * page in the browser then says "Traffic limit reached".
 */
import { test as base, expect, request as playwrightRequest, type APIRequestContext } from "@playwright/test";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { freePort, startApp, type AppProcess } from "../scripts/harness/app";
import { login, trpcMutation, trpcQuery } from "../scripts/harness/trpc";
import { stopProcess } from "../scripts/harness/process";
import { downloadUntilCut, fetchViaSocks, startV2rayClient } from "./vless-client";
import { until } from "./until";

const ADMIN = { username: "limits", password: "limits-e2e-password" };
/** Long on purpose: the cut must not wait for a report. */
const REPORT_INTERVAL_S = 30;
const CHUNK = 32 * 1024;
const TICK_MS = 25;
/** What the paced download carries in 5 s, the aim's bound past the limit. */
const BYTES_IN_5_S = (CHUNK * 5000) / TICK_MS;

const test = base.extend({});
test.setTimeout(300_000);

/** A small answer, and an endless download at CHUNK bytes per TICK_MS. */
function startTargets(): Promise<{ port: number; small: string; stream: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.url === "/small") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("hello");
      return;
    }
    res.writeHead(200, { "content-type": "application/octet-stream" });
    const chunk = Buffer.alloc(CHUNK, 7);
    const t = setInterval(() => res.write(chunk), TICK_MS);
    res.on("close", () => clearInterval(t));
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      resolve({
        port,
        small: `http://127.0.0.1:${port}/small`,
        stream: `http://127.0.0.1:${port}/stream`,
        close: () =>
          new Promise((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      });
    });
  });
}


test("a 1 MB subscriber is cut by the agent within 5 s of passing her limit, and her page says the limit is reached", async ({ browser }) => {
  expect(existsSync("/usr/bin/v2ray"), "Debian's v2ray is needed: apt-get install v2ray").toBe(true);
  const work = mkdtempSync(path.join(os.tmpdir(), "rb-limits-"));
  const cleanups: Array<() => Promise<unknown> | unknown> = [];
  let app: AppProcess | null = null;
  let api: APIRequestContext | null = null;
  let agent: ChildProcess | null = null;
  let agentLog = "";
  try {
    const port = await freePort();
    app = await startApp({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password, ROUTEBOARD_DEMO: "0", PUBLIC_URL: `http://127.0.0.1:${port}` }, { port, dataDir: path.join(work, "panel-data") });
    api = await playwrightRequest.newContext({ baseURL: app.url });
    await login(api, ADMIN.username, ADMIN.password);
    const targets = await startTargets();
    cleanups.push(() => targets.close());

    const cluster = await trpcMutation<{ id: string }>(api, "clusters.create", { name: "Limits" });
    await trpcMutation(api, "monitoring.setReportInterval", { clusterId: cluster.id, seconds: REPORT_INTERVAL_S });
    const server = await trpcMutation<{ id: string; agentToken: string }>(api, "servers.create", { clusterId: cluster.id, name: "plain-1", address: "127.0.0.1" });
    const inbound = await trpcMutation<{ inbound: { id: string } }>(api, "inbounds.create", { serverId: server.id, name: "Plain", port: await freePort(), security: "none", sni: null });
    await trpcMutation(api, "routes.create", { clusterId: cluster.id, name: "Loopback", algorithm: "round-robin", inboundIds: [inbound.inbound.id] });
    await trpcMutation(api, "clusters.setAllowedPrivateDestinations", { clusterId: cluster.id, destinations: [`127.0.0.1:${targets.port}`] });
    const carol = await trpcMutation<{ id: string; token: string }>(api, "subscribers.create", { clusterId: cluster.id, name: "carol", expiresAt: null, trafficLimitGb: 0.001 });
    const limit = Math.round(0.001 * 1024 ** 3);

    // The agent, from the bundle the panel serves.
    const bundle = path.join(work, "routeboard-agent.mjs");
    writeFileSync(bundle, await (await api.get("/agent/routeboard-agent.mjs")).body());
    agent = spawn(process.execPath, [bundle, "--panel", app.url, "--token", server.agentToken, "--core", "v2ray", "--state-dir", path.join(work, "state")], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, PATH: `/usr/bin:${process.env.PATH ?? ""}` },
    });
    agent.stdout!.on("data", (d: Buffer) => (agentLog += d.toString()));
    agent.stderr!.on("data", (d: Buffer) => (agentLog += d.toString()));

    const sub = async () => ((await (await api!.get(`/sub/${carol.token}?format=json`)).json()) as { routes: Array<{ link: string; inbound: string }> }).routes;
    const link = (await sub())[0]!.link;
    const client = await startV2rayClient({ link });
    cleanups.push(() => client.stop());
    // A first small fetch: the answer to the report carrying it tells the agent what she has left.
    await until("carol served", 60_000, async () => (await fetchViaSocks(client.socksPort, targets.small, { timeoutMs: 3000 })).status === 200).catch((err: Error) => {
      throw new Error(`${err.message}\n--- agent:\n${agentLog}`);
    });
    // Stored means answered: the ack of the report that carried it had her remaining bytes.
    // Every 500 ms: the list allows a session 4 queries a second after its first 60, and a
    // poll refused by that limit would hide what the wait is really for.
    await until(
      "carol's first bytes at the panel",
      60_000,
      async () => (await trpcQuery<Array<{ id: string; trafficUsedBytes: number }>>(api!, "subscribers.list", { clusterId: cluster.id })).find((s) => s.id === carol.id)!.trafficUsedBytes > 0,
      500,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n--- agent:\n${agentLog}\n--- panel:\n${app!.stdout()}\n${app!.stderr()}`);
    });

    const bytes = await downloadUntilCut(client.socksPort, targets.stream);
    expect(bytes, agentLog).toBeGreaterThan(limit / 2);
    expect(bytes - limit, agentLog).toBeLessThan(BYTES_IN_5_S);
    expect(agentLog).toContain(`${carol.id} passed its traffic limit`);
    expect(await fetchViaSocks(client.socksPort, targets.small, { timeoutMs: 3000 }).then(() => "served", () => "refused")).toBe("refused");

    // The cut is reported at once: her page and apps say so, long before the 30 s interval.
    const page = await (await browser.newContext({ baseURL: app.url })).newPage();
    await expect(async () => {
      await page.goto(`/sub/${carol.token}`);
      await expect(page.getByTestId("blocked")).toHaveText("⛔ Traffic limit reached — contact your provider to renew", { timeout: 1000 });
    }).toPass({ timeout: 60_000 });
    await expect(page.getByRole("progressbar", { name: "Traffic used" })).toHaveAttribute("aria-valuenow", "100");
    await page.screenshot({ path: "test-results/limit-reached-page.png" });
    expect((await sub()).map((r) => r.inbound)).toEqual(["⛔ Traffic limit reached — contact your provider to renew"]);
    await page.context().close();
  } finally {
    if (agent) await stopProcess(agent);
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => {});
    await api?.dispose();
    await app?.stop();
    rmSync(work, { recursive: true, force: true });
  }
});
