/**
 * Counts the diagram's node re-renders in a real browser, for e2e/diagram-renders.spec.ts and
 * `npm run bench:ui`: React's DevTools hook, installed before the page's scripts, hears of
 * every commit (production builds too), and a function component's fiber carries the
 * PerformedWork flag when it rendered in that commit, the same test React DevTools'
 * "highlight updates" makes. A node component is the fiber React Flow passes
 * `positionAbsoluteX`; the diagram's body is the fiber given the topology as `data`, and each
 * new topology object it receives starts a new generation that the renders are filed under.
 */
import type { Page } from "@playwright/test";

export interface RenderLog {
  /** Topology objects the diagram has received so far. */
  generation: number;
  /** Node components mounted after the last commit (React Flow mounts those on screen). */
  mounted: number;
  /** Every re-render of a node component (mounts excluded), with the generation it happened in. */
  renders: Array<{ generation: number; node: string }>;
}

/** Pass to page.addInitScript: it runs in the page before React loads. */
export function installRenderCounter() {
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
  /** Each node component's fiber in the last commit: an update renders its alternate. */
  const last = new Map<string, Fiber>();
  let renderers = 0;
  Object.assign(window, {
    __diagramRenders: log,
    __REACT_DEVTOOLS_GLOBAL_HOOK__: {
      supportsFiber: true,
      isDisabled: false,
      renderers: new Map(),
      // Methods, not arrow functions: tsx (bench:ui) wraps a named arrow in a helper that
      // does not exist in the page.
      inject() {
        return ++renderers;
      },
      checkDCE() {},
      onScheduleFiberRoot() {},
      onCommitFiberUnmount() {},
      onPostCommitFiberRoot() {},
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
          // An untouched fiber is the one committed last time; a mount has no alternate.
          if (before && f !== before && f.alternate === before && (f.flags & PERFORMED_WORK) !== 0) log.renders.push({ generation: log.generation, node: id });
        }
        last.clear();
        for (const [id, f] of nodes) last.set(id, f);
        log.mounted = nodes.length;
      },
    },
  });
}

export function renderLog(page: Page): Promise<RenderLog> {
  return page.evaluate(() => (window as unknown as { __diagramRenders: RenderLog }).__diagramRenders);
}

/** Resolves once the diagram has received a topology object newer than `generation`. */
export async function waitForTopology(page: Page, generation: number): Promise<number> {
  await page.waitForFunction((g) => (window as unknown as { __diagramRenders: RenderLog }).__diagramRenders.generation > g, generation);
  return (await renderLog(page)).generation;
}

/** The nodes that re-rendered in generations after `from` up to `to`, sorted. */
export function rendersBetween(log: RenderLog, from: number, to: number): string[] {
  return log.renders
    .filter((r) => r.generation > from && r.generation <= to)
    .map((r) => r.node)
    .sort();
}

interface RefetchTopology {
  inbounds: ReadonlyArray<{ id: string; serverId: string; routeId: string | null; isFallback: boolean }>;
  routes: ReadonlyArray<{ id: string; name: string; flag: string | null; algorithm: string }>;
}

/**
 * Two refetches of an open diagram (the page loaded with installRenderCounter), and the
 * nodes each re-rendered: first a write that changes nothing the diagram draws (a route
 * saved as it was: only its version moves, so the refetch brings a new topology object with
 * the same content), then one inbound on screen becoming its route's fallback (its chip and
 * its route's row say so). Each waits for its own outcome, never for time to pass.
 */
export async function measureRefetchRenders(page: Page, topo: RefetchTopology, mutate: (path: string, input: unknown) => Promise<unknown>) {
  const fallbackRoutes = new Set(topo.inbounds.filter((i) => i.isFallback).map((i) => i.routeId));
  // React Flow renders only the boxes on screen: the inbound's chip and row must be there.
  const chipsOnScreen = new Set(await page.locator("li[data-inbound-id]").evaluateAll((els) => els.map((el) => el.getAttribute("data-inbound-id"))));
  const rowsOnScreen = new Set(await page.locator("[data-row-inbound]").evaluateAll((els) => els.map((el) => el.getAttribute("data-row-inbound"))));
  const inbound = topo.inbounds.find((i) => i.routeId !== null && !fallbackRoutes.has(i.routeId) && chipsOnScreen.has(i.id) && rowsOnScreen.has(i.id));
  if (!inbound) throw new Error("no inbound of a route without a fallback has its chip and its row on screen");
  const route = topo.routes.find((r) => r.id === inbound.routeId)!;
  const start = await renderLog(page);

  await mutate("routes.update", { routeId: route.id, name: route.name, flag: route.flag, algorithm: route.algorithm });
  const unchanged = await waitForTopology(page, start.generation);

  await mutate("inbounds.setFallback", { inboundId: inbound.id, isFallback: true });
  await page.locator(`[data-row-inbound="${inbound.id}"]`).getByText("fallback", { exact: true }).waitFor();
  await page.locator(`#chip-${inbound.id}-desc`).filter({ hasText: ", fallback" }).waitFor({ state: "attached" });
  const end = await renderLog(page);
  return {
    /** The node components on screen. */
    nodes: start.mounted,
    unchanged: rendersBetween(end, start.generation, unchanged),
    oneInbound: rendersBetween(end, unchanged, end.generation),
    /** The nodes that should re-render on the second refetch, sorted as the renders are. */
    affected: [`route:${route.id}`, `server:${inbound.serverId}`].sort(),
  };
}
