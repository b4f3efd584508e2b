/**
 * The diagram's layout: servers are ordered against the operator's route order, so each
 * server sits beside the routes it feeds, and the order follows moves and route reorders.
 * Each test has its own demo cluster: alphabetically its servers are de-*, nl-*, us-*,
 * while the routes are USA, Germany, Netherlands, Japan (empty).
 */
import type { Locator, Page } from "@playwright/test";
import { test, expect, type TestCluster, drag, routeOf } from "./fixtures";
import { trpcQuery } from "../scripts/harness/trpc";
import { groupTopology } from "../core/topology";
import { boxHandles } from "../components/diagram/flow";
import type { BoxKind } from "../components/diagram/layout";

interface Topo {
  inbounds: Array<{ name: string; routeId: string | null }>;
  routes: Array<{ id: string; name: string }>;
}

test.use({ viewport: { width: 1440, height: 900 } });

const chip = (page: Page, name: string) => page.getByRole("button", { name, exact: true });
const routeBox = (page: Page, name: string) => page.getByRole("region", { name: `Route ${name}`, exact: true });

async function openDiagram(page: Page, cluster: TestCluster) {
  await page.goto(`/clusters/${cluster.id}`);
  await expect(routeBox(page, "🇺🇸 USA")).toBeVisible();
  await expect(chip(page, "🇺🇸 Dallas")).toBeVisible();
}

/** Each server box's top on screen, by server name. */
async function serverTops(page: Page): Promise<Map<string, number>> {
  const boxes = await page.locator("[data-server-id]").evaluateAll((els) =>
    els.map((el) => ({ name: el.querySelector("span")?.textContent ?? "", y: el.getBoundingClientRect().top })),
  );
  return new Map(boxes.map((b) => [b.name, b.y]));
}

/** Whether every server of each group sits above every server of the groups after it. */
async function groupsTopToBottom(page: Page, groups: string[][]): Promise<boolean> {
  const tops = await serverTops(page);
  const at = (name: string) => tops.get(name) ?? NaN;
  for (let g = 0; g + 1 < groups.length; g++) {
    for (const upper of groups[g]!) for (const lower of groups.slice(g + 1).flat()) if (!(at(upper) < at(lower))) return false;
  }
  return true;
}

const US = ["us-dal-1", "us-nyc-1"];
const DE = ["de-ber-1", "de-fra-1"];
const NL = ["nl-ams-1", "nl-rtm-1"];

async function top(locator: Locator): Promise<number> {
  const box = await locator.boundingBox();
  if (!box) throw new Error("not on screen");
  return box.y;
}

test("servers sit in the order of the routes they feed, not alphabetically", async ({ page, cluster }) => {
  await openDiagram(page, cluster);
  // USA is above Germany, above Netherlands: so are the servers feeding them.
  expect(await top(routeBox(page, "🇺🇸 USA"))).toBeLessThan(await top(routeBox(page, "🇩🇪 Germany")));
  expect(await top(routeBox(page, "🇩🇪 Germany"))).toBeLessThan(await top(routeBox(page, "🇳🇱 Netherlands")));
  expect(await groupsTopToBottom(page, [US, DE, NL])).toBe(true);

});

test("reordering the routes reorders the servers beside them", async ({ page, cluster }) => {
  await openDiagram(page, cluster);
  await page.getByRole("button", { name: "Move 🇳🇱 Netherlands up" }).click();
  await expect.poll(async () => top(routeBox(page, "🇳🇱 Netherlands"))).toBeLessThan(await top(routeBox(page, "🇩🇪 Germany")));
  await expect.poll(() => groupsTopToBottom(page, [US, NL, DE])).toBe(true);
});

test("a server whose inbounds are dragged to another route moves beside that route's servers", async ({ page, cluster }) => {
  await openDiagram(page, cluster);
  // us-nyc-1 feeds USA with both its inbounds; drag both to Netherlands.
  await drag(page, chip(page, "🇺🇸 New York"), routeBox(page, "🇳🇱 Netherlands"));
  await expect(routeBox(page, "🇳🇱 Netherlands").getByText("🇺🇸 New York", { exact: true })).toBeVisible();
  await drag(page, chip(page, "🇺🇸 New York TLS"), routeBox(page, "🇳🇱 Netherlands"));
  await expect(routeBox(page, "🇳🇱 Netherlands").getByText("🇺🇸 New York TLS", { exact: true })).toBeVisible();
  await expect.poll(() => routeOf(page, cluster, "🇺🇸 New York TLS")).toBe("🇳🇱 Netherlands");
  // It leaves the USA servers' row for the Netherlands ones: below us-dal-1, no higher
  // than any Germany server (the columns fill row by row, so it may sit beside the last of
  // them) and no lower than the Netherlands servers.
  await expect
    .poll(async () => {
      const tops = await serverTops(page);
      const nyc = tops.get("us-nyc-1")!;
      return tops.get("us-dal-1")! < nyc && DE.every((s) => tops.get(s)! <= nyc) && NL.every((s) => nyc <= tops.get(s)!);
    })
    .toBe(true);

  // The keyboard still moves chips after the relayout, and the chip keeps the focus:
  // Dallas from USA into Germany, so us-dal-1 joins the Germany servers.
  const c = chip(page, "🇺🇸 Dallas");
  await c.focus();
  await page.keyboard.press("Space");
  await page.keyboard.press("ArrowDown");
  await expect(routeBox(page, "🇩🇪 Germany")).toHaveAttribute("data-drop-target", "true");
  await page.keyboard.press("Enter");
  await expect(routeBox(page, "🇩🇪 Germany").getByText("🇺🇸 Dallas", { exact: true })).toBeVisible();
  await expect.poll(() => routeOf(page, cluster, "🇺🇸 Dallas")).toBe("🇩🇪 Germany");
  await expect(c).toBeFocused();
  // us-dal-1 now feeds Germany only: it stays at the top of the Germany servers (ties keep
  // the previous order), above the Netherlands ones.
  await expect.poll(() => groupsTopToBottom(page, [["us-dal-1", ...DE], NL])).toBe(true);
});

test("the handles given to React Flow before a box is drawn are where the drawn box's handles are", async ({ page, cluster }) => {
  // React Flow draws the edges of boxes off screen (never rendered, never measured) from
  // the handles the layout gives; they must match the drawn ones or such edges would jump
  // once their box scrolls into view.
  await openDiagram(page, cluster);
  const t = await trpcQuery<Parameters<typeof groupTopology>[0] & Topo>(page.request, "topology.get", { clusterId: cluster.id });
  const groups = groupTopology(t);
  await expect(page.locator(".react-flow__edge")).not.toHaveCount(0);
  const drawn = await page.locator(".react-flow__node").evaluateAll((els) => {
    const viewport = document.querySelector(".react-flow__viewport")!;
    const zoom = new DOMMatrixReadOnly(getComputedStyle(viewport).transform).m22;
    return els.map((el) => {
      const n = el.getBoundingClientRect();
      return {
        id: el.getAttribute("data-id")!,
        kind: [...el.classList].find((c) => c.startsWith("react-flow__node-"))!.slice("react-flow__node-".length),
        width: n.width / zoom,
        height: n.height / zoom,
        handles: [...el.querySelectorAll(".react-flow__handle")].map((h) => {
          const b = h.getBoundingClientRect();
          return { id: h.getAttribute("data-handleid"), x: (b.left - n.left) / zoom, y: (b.top - n.top) / zoom, width: b.width / zoom, height: b.height / zoom };
        }),
      };
    });
  });
  // Every kind of box, a route without a pipe (Japan is empty) among them.
  expect(new Set(drawn.map((d) => d.kind))).toEqual(new Set(["server", "route", "unassigned", "distribution"]));
  for (const d of drawn) {
    const refId = d.id.includes(":") ? d.id.slice(d.id.indexOf(":") + 1) : null;
    const given = boxHandles({ id: d.id, kind: d.kind as BoxKind, refId, x: 0, y: 0, width: d.width, height: d.height }, groups);
    expect(given.map((h) => h.id).sort(), d.id).toEqual(d.handles.map((h) => h.id).sort());
    for (const h of d.handles) {
      const g = given.find((x) => x.id === h.id)!;
      for (const k of ["x", "y", "width", "height"] as const) expect(Math.abs(g[k]! - h[k]), `${d.id} ${h.id} ${k}`).toBeLessThan(0.5);
    }
  }
});
