/**
 * Which diagram nodes re-render when the topology is refetched (issue #22): a refetch whose
 * new data changes nothing a node shows re-renders no node; one that changes one inbound
 * re-renders only its server's box and its route's box. Before the nodes had data of their
 * own, every box on screen re-rendered on every refetch. Counted through React's DevTools
 * hook (scripts/harness/render-counter.ts).
 */
import { test, expect } from "./fixtures";
import { trpcMutation, trpcQuery } from "../scripts/harness/trpc";
import { installRenderCounter, measureRefetchRenders } from "../scripts/harness/render-counter";

test.use({ viewport: { width: 1440, height: 900 } });

interface Topo {
  servers: Array<{ id: string; statusReason: string | null }>;
  inbounds: Array<{ id: string; serverId: string; routeId: string | null; isFallback: boolean }>;
  routes: Array<{ id: string; name: string; flag: string | null; algorithm: string }>;
}

test("a refetch re-renders only the nodes whose data changed", async ({ page, cluster }) => {
  // Nothing but this test's writes changes the cluster: no probe marks a server down midway.
  const probe = await trpcQuery<{ config: Record<string, unknown> }>(page.request, "monitoring.getProbeConfig", { clusterId: cluster.id });
  await trpcMutation(page.request, "monitoring.setProbeConfig", { clusterId: cluster.id, config: { ...probe.config, enabled: false } });
  // A new cluster's servers get their status reason from the status machine's first pass,
  // which on a busy machine can land after the page has drawn: a change not made here.
  await expect.poll(async () => (await trpcQuery<Topo>(page.request, "topology.get", { clusterId: cluster.id })).servers.every((s) => s.statusReason !== null)).toBe(true);
  const topo = await trpcQuery<Topo>(page.request, "topology.get", { clusterId: cluster.id });

  await page.addInitScript(installRenderCounter);
  await page.goto(`/clusters/${cluster.id}`);
  // The first draw with the DevTools hook installed is slower (React reports every commit to
  // it): on a busy machine it passed the suite's 10 s.
  await expect(page.locator("li[data-inbound-id]").first()).toBeVisible({ timeout: 60_000 });
  await expect(page.locator("[data-row-inbound]").first()).toBeVisible();

  const m = await measureRefetchRenders(page, topo, (path, input) => trpcMutation(page.request, path, input));
  console.log(`node re-renders on a refetch (${m.nodes} nodes on screen): unchanged ${m.unchanged.length}, one inbound changed ${m.oneInbound.length}`);
  // Most of the demo's 12 boxes are on screen at this size.
  expect(m.nodes).toBeGreaterThan(topo.servers.length);
  expect(m.unchanged).toEqual([]);
  expect(m.oneInbound).toEqual(m.affected);
});
