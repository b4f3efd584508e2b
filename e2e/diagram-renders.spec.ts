/**
 * Which diagram nodes re-render when the topology is refetched (issue #22): a refetch whose
 * new data changes nothing a node shows re-renders no node; one that changes one inbound
 * re-renders only its server's box and its route's box.
 *
 * Renders are counted through React's DevTools hook, installed before the page's scripts:
 * React reports every commit to it (production builds too), and a function component's
 * fiber carries the PerformedWork flag when it rendered in that commit, the same test React
 * DevTools' "highlight updates" makes. A node component is the fiber React Flow passes
 * `positionAbsoluteX`; the diagram's body is the fiber given the topology as `data`, and each
 * new topology object it receives starts a new generation that the renders are filed under.
 */
import { test, expect } from "./fixtures";
import { trpcMutation, trpcQuery } from "../scripts/harness/trpc";

test.use({ viewport: { width: 1440, height: 900 } });

interface Topo {
  servers: Array<{ id: string; name: string }>;
  inbounds: Array<{ id: string; name: string; serverId: string; routeId: string | null; isFallback: boolean }>;
  routes: Array<{ id: string; name: string; flag: string | null; algorithm: string }>;
}

interface RenderLog {
  /** Topology objects the diagram has received so far. */
  generation: number;
  /** Node components mounted now, by node id. */
  mounted: number;
  /** Every re-render of a node component (mounts excluded), with the generation it happened in. */
  renders: Array<{ generation: number; node: string }>;
}

/** Runs in the page before React loads. */
function installRenderCounter() {
  interface Fiber {
    tag: number;
    flags: number;
    alternate: Fiber | null;
    child: Fiber | null;
    sibling: Fiber | null;
    memoizedProps: Record<string, unknown> | null;
  }
  /** React's fiber tags of function components, plain and memo; its PerformedWork flag. */
  const FUNCTION_COMPONENT = 0;
  const SIMPLE_MEMO_COMPONENT = 15;
  const PERFORMED_WORK = 1;
  const log: RenderLog = { generation: 0, mounted: 0, renders: [] };
  let topology: unknown;
  /** Each node component's fiber in the last commit: one cloned since was visited by React. */
  const last = new Map<string, Fiber>();
  let renderers = 0;
  Object.assign(window, {
    __diagramRenders: log,
    __REACT_DEVTOOLS_GLOBAL_HOOK__: {
      supportsFiber: true,
      isDisabled: false,
      renderers: new Map(),
      inject: () => ++renderers,
      checkDCE: () => {},
      onScheduleFiberRoot: () => {},
      onCommitFiberUnmount: () => {},
      onPostCommitFiberRoot: () => {},
      onCommitFiberRoot(_renderer: number, root: { current: Fiber }) {
        const nodes: Array<[string, Fiber]> = [];
        const stack: Fiber[] = [root.current];
        while (stack.length > 0) {
          const f = stack.pop()!;
          const p = f.memoizedProps;
          if (p && typeof p === "object" && (f.tag === FUNCTION_COMPONENT || f.tag === SIMPLE_MEMO_COMPONENT)) {
            if ("pauseRefetch" in p && "data" in p && p.data !== topology) {
              topology = p.data;
              log.generation++;
            }
            if ("positionAbsoluteX" in p && typeof p.id === "string") nodes.push([p.id, f]);
          }
          if (f.sibling) stack.push(f.sibling);
          if (f.child) stack.push(f.child);
        }
        for (const [id, f] of nodes) {
          const before = last.get(id);
          // An update renders the alternate of the fiber committed last time; a mount has none.
          if (before && f !== before && f.alternate === before && (f.flags & PERFORMED_WORK) !== 0) log.renders.push({ generation: log.generation, node: id });
        }
        last.clear();
        for (const [id, f] of nodes) last.set(id, f);
        log.mounted = nodes.length;
      },
    },
  });
}

const renderLog = (page: import("@playwright/test").Page) => page.evaluate(() => (window as unknown as { __diagramRenders: RenderLog }).__diagramRenders);

test("a refetch re-renders only the nodes whose data changed", async ({ page, cluster }) => {
  // Nothing but this test's writes changes the cluster: no probe marks a server down midway.
  const probe = await trpcQuery<{ config: Record<string, unknown> }>(page.request, "monitoring.getProbeConfig", { clusterId: cluster.id });
  await trpcMutation(page.request, "monitoring.setProbeConfig", { clusterId: cluster.id, config: { ...probe.config, enabled: false } });
  const topo = await trpcQuery<Topo>(page.request, "topology.get", { clusterId: cluster.id });
  const fallbackRoutes = new Set(topo.inbounds.filter((i) => i.isFallback).map((i) => i.routeId));

  await page.addInitScript(installRenderCounter);
  await page.goto(`/clusters/${cluster.id}`);
  await expect(page.locator("li[data-inbound-id]").first()).toBeVisible();
  await expect(page.locator("[data-row-inbound]").first()).toBeVisible();
  // An inbound in a route with no fallback yet, whose chip and route row are both on screen.
  const chipsOnScreen = new Set(await page.locator("li[data-inbound-id]").evaluateAll((els) => els.map((el) => el.getAttribute("data-inbound-id"))));
  const rowsOnScreen = new Set(await page.locator("[data-row-inbound]").evaluateAll((els) => els.map((el) => el.getAttribute("data-row-inbound"))));
  const inbound = topo.inbounds.find((i) => i.routeId !== null && !fallbackRoutes.has(i.routeId) && chipsOnScreen.has(i.id) && rowsOnScreen.has(i.id))!;
  expect(inbound).toBeDefined();
  const route = topo.routes.find((r) => r.id === inbound.routeId)!;
  const start = await renderLog(page);
  // The boxes on screen (React Flow renders only those): most of the demo's 12 at this size.
  const nodeCount = start.mounted;
  expect(nodeCount).toBeGreaterThan(topo.servers.length);

  // 1. A write that changes nothing the diagram draws (a route saved as it was: only its
  // version moves), so the refetch brings a new topology object with the same content.
  await trpcMutation(page.request, "routes.update", { routeId: route.id, name: route.name, flag: route.flag, algorithm: route.algorithm });
  await page.waitForFunction((g) => (window as unknown as { __diagramRenders: RenderLog }).__diagramRenders.generation > g, start.generation);
  const unchanged = (await renderLog(page)).generation;

  // 2. One inbound becomes its route's fallback: its chip and its route's row say so.
  await trpcMutation(page.request, "inbounds.setFallback", { inboundId: inbound.id, isFallback: true });
  await expect(page.locator(`[data-row-inbound="${inbound.id}"]`).getByText("fallback", { exact: true })).toBeVisible();
  await expect(page.locator(`#chip-${inbound.id}-desc`)).toContainText(", fallback");
  const end = await renderLog(page);
  expect(end.generation).toBeGreaterThan(unchanged);

  const rendersIn = (from: number, to: number) => end.renders.filter((r) => r.generation > from && r.generation <= to).map((r) => r.node).sort();
  const onUnchanged = rendersIn(start.generation, unchanged);
  const onOneInbound = rendersIn(unchanged, end.generation);
  console.log(`node re-renders on a refetch (${nodeCount} nodes): unchanged ${onUnchanged.length}, one inbound changed ${onOneInbound.length} ${JSON.stringify(onOneInbound)}`);
  expect(onUnchanged).toEqual([]);
  expect(onOneInbound).toEqual([`route:${route.id}`, `server:${inbound.serverId}`].sort());
});
