/**
 * Configuration warnings in the diagram's warnings panel: probes turned off, and a
 * fallback that is itself down; each disappears when its cause is fixed.
 */
import { test, expect } from "./fixtures";
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
