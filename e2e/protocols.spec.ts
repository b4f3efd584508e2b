/**
 * Issue 26 in the browser: an operator adds a VMess inbound over WebSocket in the inbound form,
 * the diagram's chip says "VMess·ws", and the subscription's own vmess:// link carries traffic
 * through a real agent running Debian's v2ray (in this process; the panel is the e2e app), the
 * subscriber's usage growing by what was fetched. The other protocols' traffic is proven in
 * scripts/protocols-traffic.test.ts.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect, openNewInboundForm, test } from "./fixtures";
import { startV2rayAgent } from "./v2ray-agent";
import { trpcMutation, trpcQuery } from "../scripts/harness/trpc";
import { fetchViaSocks, freePort, waitForPort } from "./vless-client";
import { parseShareLink, startV2rayLinksClient, type Client } from "./share-link-client";
import { startHttpTarget } from "../agent/test-support";

test.setTimeout(300_000);

test("an operator adds a VMess over WebSocket inbound in the form; its link carries traffic through a real agent", async ({ page, baseURL }) => {
  expect(fs.existsSync("/usr/bin/v2ray"), "Debian's v2ray is needed: apt-get install v2ray").toBe(true);
  const api = page.request;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "rb-protocols-"));
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    const target = await startHttpTarget("through VMess over ws ".repeat(2000));
    cleanups.push(() => target.close());
    const cluster = await trpcMutation<{ id: string }>(api, "clusters.create", { name: `VMess ${Math.random().toString(36).slice(2, 8)}` });
    await trpcMutation(api, "monitoring.setReportInterval", { clusterId: cluster.id, seconds: 2 });
    await trpcMutation(api, "clusters.setAllowedPrivateDestinations", { clusterId: cluster.id, destinations: [new URL(target.url).host] });
    const server = await trpcMutation<{ id: string; agentToken: string }>(api, "servers.create", { clusterId: cluster.id, name: "ws-1", address: "127.0.0.1" });
    const alice = await trpcMutation<{ id: string; token: string }>(api, "subscribers.create", { clusterId: cluster.id, name: "alice" });

    // --- the form
    const port = await freePort();
    await page.goto(`/clusters/${cluster.id}/servers`);
    const form = await openNewInboundForm(page, "ws-1");
    await form.getByLabel("Name").fill("VMess WebSocket");
    await form.getByLabel("Port").fill(String(port));
    await form.getByLabel("Protocol").selectOption("vmess");
    await form.getByLabel("Network").selectOption("ws");
    // The path starts as one named after the transport.
    await expect(form.getByLabel("Path")).toHaveValue("/ws");
    // Security left at Reality, which VMess cannot use, is refused on its own field.
    await form.getByLabel("Security").selectOption("reality");
    await form.getByLabel("Masquerade SNI").fill("www.example.com");
    await form.getByRole("button", { name: "Create inbound" }).click();
    await expect(form.getByText("Reality carries VLESS or Trojan only: choose TLS or none for VMess")).toBeVisible();
    await form.getByLabel("Security").selectOption("none");
    await form.getByLabel("Path").fill("/vmess");
    await form.getByRole("button", { name: "Create inbound" }).click();
    await expect(form).toBeHidden();

    // --- the diagram
    await page.goto(`/clusters/${cluster.id}`);
    const chip = page.locator("li[data-inbound-id]", { has: page.getByRole("button", { name: "VMess WebSocket", exact: true }) });
    await expect(chip.getByTestId("inbound-kind")).toHaveText("VMess·ws");
    await page.getByRole("button", { name: "Legend" }).click();
    await expect(page.getByRole("region", { name: "Legend" })).toContainText("protocol·transport·security");

    // --- a real agent serving it with Debian's v2ray
    const { log, stop: stopAgent } = await startV2rayAgent(baseURL!, server.agentToken, path.join(work, "agent"));
    cleanups.push(stopAgent);

    // --- the subscription's own link, followed by a v2ray client
    let link = "";
    await expect
      .poll(
        async () => {
          const res = await api.get(`/sub/${alice.token}?format=json`);
          const routes = ((await res.json()) as { routes: Array<{ link: string }> }).routes;
          link = routes.find((r) => r.link.startsWith("vmess://"))?.link ?? "";
          return link !== "";
        },
        { timeout: 60_000 },
      )
      .toBe(true);
    const parsed = parseShareLink(link);
    expect(parsed).toMatchObject({ protocol: "vmess", credential: expect.any(String), port, network: "ws", path: "/vmess", security: "none" });
    const client: Client = await startV2rayLinksClient([parsed], "/dev/null");
    cleanups.push(() => client.stop());
    const used = async () => (await trpcQuery<Array<{ id: string; trafficUsedBytes: number }>>(api, "subscribers.list", { clusterId: cluster.id })).find((s) => s.id === alice.id)!.trafficUsedBytes;
    const before = await used();
    // The link is in /sub as soon as the inbound exists; the agent's v2ray listens once it has
    // fetched its config and started (a fetch before that is a hang-up, not a refusal).
    await waitForPort(port);
    const r = await fetchViaSocks(client.socksPorts[0]!, target.url);
    expect(r.status, `${client.output()}\n${log.lines.join("\n")}`).toBe(200);
    await expect.poll(used, { timeout: 60_000 }).toBeGreaterThanOrEqual(before + r.body.length);
  } finally {
    for (const c of cleanups.reverse()) await c().catch(() => {});
    fs.rmSync(work, { recursive: true, force: true });
  }
});
