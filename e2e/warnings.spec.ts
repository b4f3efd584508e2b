/**
 * Configuration warnings in the diagram's warnings panel: probes turned off, and a
 * fallback that is itself down, servers whose agent never reported; each disappears when its
 * cause is fixed.
 */
import { test, expect, expandWarnings } from "./fixtures";
import { trpcMutation, trpcQuery } from "../scripts/harness/trpc";

test.use({ viewport: { width: 1440, height: 900 } });

test("probes off and a down fallback are warned about, and the warnings go away when fixed", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}`);
  const panel = page.getByRole("region", { name: "Warnings" });
  await expect(panel).toContainText("not in any route");
  await expect(panel).not.toContainText("probes are turned off");

  const probe = await trpcQuery<{ config: Record<string, unknown> }>(page.request, "monitoring.getProbeConfig", { clusterId: cluster.id });
  await trpcMutation(page.request, "monitoring.setProbeConfig", { clusterId: cluster.id, config: { ...probe.config, enabled: false } });
  await expect(panel).toContainText("Active health probes are turned off for this cluster");
  await expandWarnings(page);
  await expect(panel.getByRole("link", { name: "Probe settings" })).toBeVisible();

  // The demo's servers have not been checked yet, so a fallback there is down.
  const topo = await trpcQuery<{ inbounds: Array<{ id: string; name: string }> }>(page.request, "topology.get", { clusterId: cluster.id });
  const berlin = topo.inbounds.find((i) => i.name === "🇩🇪 Berlin")!;
  await trpcMutation(page.request, "inbounds.setFallback", { inboundId: berlin.id, isFallback: true });
  await expect(panel).toContainText("The fallback of 🇩🇪 Germany (🇩🇪 Berlin) is on de-ber-1, which is itself down: Waiting for first check");

  await trpcMutation(page.request, "monitoring.setProbeConfig", { clusterId: cluster.id, config: { ...probe.config, enabled: true } });
  await trpcMutation(page.request, "inbounds.setFallback", { inboundId: berlin.id, isFallback: false });
  await expect(panel).not.toContainText("probes are turned off");
  await expect(panel).not.toContainText("The fallback of");
});

test("servers whose agent never reported are named, with a way to the Servers page, until each agent reports", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}`);
  const panel = page.getByRole("region", { name: "Warnings" });
  const topo = await trpcQuery<{ servers: Array<{ id: string; name: string }> }>(page.request, "topology.get", { clusterId: cluster.id });
  const n = topo.servers.length;
  await expect(panel).toContainText(`${n} servers have never heard from their agent`);

  const { plan } = await trpcMutation<{ plan: { servers: Array<{ serverId: string; token: string }> } }>(page.request, "tooling.rotateAgentTokens", { clusterId: cluster.id });
  const report = { listenerAlive: true, serviceRunning: true, usersOnline: 1, rxBps: 1e6, txBps: 1e5, cpu: 5, memory: 20, neighbours: [] };
  for (const s of plan.servers.slice(1)) {
    expect((await page.request.post("/api/agent/report", { headers: { authorization: `Bearer ${s.token}` }, data: report })).status()).toBe(200);
  }
  const last = topo.servers.find((s) => s.id === plan.servers[0]!.serverId)!;
  await expect(panel).toContainText(`${last.name} has never heard from its agent`);
  await expandWarnings(page);
  await panel.getByRole("link", { name: "Servers and agent tokens" }).click();
  await expect(page).toHaveURL(new RegExp(`/clusters/${cluster.id}/servers$`));

  expect((await page.request.post("/api/agent/report", { headers: { authorization: `Bearer ${plan.servers[0]!.token}` }, data: report })).status()).toBe(200);
  await page.goto(`/clusters/${cluster.id}`);
  await expect(page.getByRole("region", { name: "Warnings" })).not.toContainText("never heard from");
});
