/**
 * The cluster diagram (issue #3): drag-and-drop, keyboard and menu moves, route order,
 * empty routes, warnings, live updates between operators, viewers, and stale drops.
 * Each test has its own demo cluster (fixture `cluster`), so tests never see each other.
 */
import type { Page } from "@playwright/test";
import { test, expect, E2E_ADMIN, type TestCluster, drag, expandWarnings, routeOf } from "./fixtures";
import { login, trpcMutation, trpcQuery } from "../scripts/harness/trpc";

test.use({ viewport: { width: 1440, height: 900 } });

interface Topo {
  inbounds: Array<{ id: string; name: string; routeId: string | null; version: number }>;
  routes: Array<{ id: string; name: string; position: number }>;
}

const chip = (page: Page, name: string) => page.getByRole("button", { name, exact: true });
const routeBox = (page: Page, name: string) => page.getByRole("region", { name: `Route ${name}`, exact: true });
const unassignedZone = (page: Page) => page.getByRole("region", { name: "Unassigned inbounds" });
const pipe = (page: Page, routeName: string) => page.getByRole("img", { name: `Pipe from ${routeName} to the subscription`, exact: true });

async function openDiagram(page: Page, cluster: TestCluster) {
  await page.goto(`/clusters/${cluster.id}`);
  await expect(routeBox(page, "🇺🇸 USA")).toBeVisible();
  await expect(chip(page, "🇺🇸 Dallas")).toBeVisible();
}

async function topology(page: Page, cluster: TestCluster): Promise<Topo> {
  return trpcQuery<Topo>(page.request, "topology.get", { clusterId: cluster.id });
}

async function routeOrder(page: Page, cluster: TestCluster): Promise<string[]> {
  return (await topology(page, cluster)).routes.map((r) => r.name);
}

async function expectIn(page: Page, routeName: string | null, inbound: string) {
  const box = routeName === null ? unassignedZone(page) : routeBox(page, routeName);
  await expect(box.getByText(inbound, { exact: true })).toBeVisible();
}
async function expectNotIn(page: Page, routeName: string | null, inbound: string) {
  const box = routeName === null ? unassignedZone(page) : routeBox(page, routeName);
  await expect(box.getByText(inbound, { exact: true })).toHaveCount(0);
}

test("drag an inbound between routes, to Unassigned and back @pg", async ({ page, cluster }) => {
  await openDiagram(page, cluster);
  // Playwright's own drag, in steps…
  await chip(page, "🇺🇸 Dallas").dragTo(routeBox(page, "🇩🇪 Germany"), { steps: 10 });
  await expectIn(page, "🇩🇪 Germany", "🇺🇸 Dallas");
  await expectNotIn(page, "🇺🇸 USA", "🇺🇸 Dallas");
  await expect.poll(() => routeOf(page, cluster, "🇺🇸 Dallas")).toBe("🇩🇪 Germany");

  // …and a hand-made one, to Unassigned: it leaves every route.
  await drag(page, chip(page, "🇺🇸 Dallas"), unassignedZone(page));
  await expectIn(page, null, "🇺🇸 Dallas");
  await expectNotIn(page, "🇩🇪 Germany", "🇺🇸 Dallas");
  await expect.poll(() => routeOf(page, cluster, "🇺🇸 Dallas")).toBeNull();
  await expect(page.getByRole("region", { name: "Warnings" })).toContainText("3 inbounds are not in any route — clients can't see them");

  // And back from Unassigned into a route.
  await drag(page, chip(page, "🇺🇸 Dallas"), routeBox(page, "🇺🇸 USA"));
  await expectIn(page, "🇺🇸 USA", "🇺🇸 Dallas");
  await expectNotIn(page, null, "🇺🇸 Dallas");
  await expect.poll(() => routeOf(page, cluster, "🇺🇸 Dallas")).toBe("🇺🇸 USA");

  // Dropping outside any box changes nothing. Proof without waiting for a while: the same
  // chip's next move, made after it, lands as exactly one version step (a write from the bad
  // drop, before or after it, would add a step or get the move refused as stale).
  const before = await topology(page, cluster);
  const dist = page.getByRole("region", { name: "Subscription — what users' apps fetch" });
  await drag(page, chip(page, "🇺🇸 New York"), dist);
  await expectIn(page, "🇺🇸 USA", "🇺🇸 New York");
  await drag(page, chip(page, "🇺🇸 New York"), routeBox(page, "🇩🇪 Germany"));
  await expect.poll(() => routeOf(page, cluster, "🇺🇸 New York")).toBe("🇩🇪 Germany");
  await expect(page.getByRole("alert").filter({ hasText: "Could not move" })).toHaveCount(0);
  const after = await topology(page, cluster);
  const newYork = (t: Topo) => t.inbounds.find((i) => i.name === "🇺🇸 New York")!;
  expect(newYork(after).version).toBe(newYork(before).version + 1);
  expect(after.inbounds.filter((i) => i.name !== "🇺🇸 New York")).toEqual(before.inbounds.filter((i) => i.name !== "🇺🇸 New York"));
});

test("move an inbound from the keyboard", async ({ page, cluster }) => {
  await openDiagram(page, cluster);
  const c = chip(page, "🇺🇸 Dallas alt");
  await c.focus();
  await expect(c).toBeFocused();
  await page.keyboard.press("Space");
  const status = page.getByTestId("diagram-announcer");
  await expect(status).toContainText("Picked up 🇺🇸 Dallas alt");
  await expect(unassignedZone(page)).toHaveAttribute("data-drop-target", "true");
  // Targets cycle: Unassigned → 🇺🇸 USA → 🇩🇪 Germany.
  await page.keyboard.press("ArrowDown");
  await expect(routeBox(page, "🇺🇸 USA")).toHaveAttribute("data-drop-target", "true");
  await page.keyboard.press("ArrowDown");
  await expect(routeBox(page, "🇩🇪 Germany")).toHaveAttribute("data-drop-target", "true");
  await page.keyboard.press("Enter");
  await expectIn(page, "🇩🇪 Germany", "🇺🇸 Dallas alt");
  await expect.poll(() => routeOf(page, cluster, "🇺🇸 Dallas alt")).toBe("🇩🇪 Germany");
  await expect(c).toBeFocused();

  // Escape puts it down where it was.
  await page.keyboard.press("Enter");
  await expect(status).toContainText("Picked up 🇺🇸 Dallas alt");
  await page.keyboard.press("ArrowUp");
  await page.keyboard.press("Escape");
  await expect(status).toContainText("Cancelled");
  await expectIn(page, "🇩🇪 Germany", "🇺🇸 Dallas alt");
  const inGermany = (await topology(page, cluster)).inbounds.find((i) => i.name === "🇺🇸 Dallas alt")!;
  expect(await routeOf(page, cluster, "🇺🇸 Dallas alt")).toBe("🇩🇪 Germany");

  // Back to Unassigned: ArrowUp twice from Germany (Germany → USA → Unassigned). It lands as
  // exactly one version step, so the cancelled move wrote nothing, not even late.
  await page.keyboard.press("Space");
  await page.keyboard.press("ArrowUp");
  await page.keyboard.press("ArrowUp");
  await page.keyboard.press("Space");
  await expectIn(page, null, "🇺🇸 Dallas alt");
  await expect.poll(() => routeOf(page, cluster, "🇺🇸 Dallas alt")).toBeNull();
  expect((await topology(page, cluster)).inbounds.find((i) => i.name === "🇺🇸 Dallas alt")!.version).toBe(inGermany.version + 1);
});

test("move an inbound with its Move to… menu", async ({ page, cluster }) => {
  await openDiagram(page, cluster);
  const menuButton = page.getByRole("button", { name: "Move 🇩🇪 Frankfurt test to…" });
  await menuButton.click();
  const menu = page.getByRole("menu");
  await expect(menu.getByRole("menuitem")).toHaveText(["Unassigned", "🇺🇸 USA", "🇩🇪 Germany", "🇳🇱 Netherlands", "🇯🇵 Japan"].map((t) => new RegExp(`^${t}`)));
  await menu.getByRole("menuitem", { name: "🇳🇱 Netherlands" }).click();
  await expect(menu).toHaveCount(0);
  await expectIn(page, "🇳🇱 Netherlands", "🇩🇪 Frankfurt test");
  await expect.poll(() => routeOf(page, cluster, "🇩🇪 Frankfurt test")).toBe("🇳🇱 Netherlands");

  // The menu works from the keyboard too: open, arrow to Unassigned, Enter.
  await menuButton.focus();
  await page.keyboard.press("Enter");
  await expect(page.getByRole("menuitem", { name: "🇳🇱 Netherlands" })).toBeFocused();
  await page.keyboard.press("Home");
  await expect(page.getByRole("menuitem", { name: "Unassigned" })).toBeFocused();
  await page.keyboard.press("Enter");
  await expectIn(page, null, "🇩🇪 Frankfurt test");
  await expect.poll(() => routeOf(page, cluster, "🇩🇪 Frankfurt test")).toBeNull();
});

test("reorder routes by the arrows and by the drag handle; the order persists", async ({ page, cluster }) => {
  await openDiagram(page, cluster);
  expect(await routeOrder(page, cluster)).toEqual(["🇺🇸 USA", "🇩🇪 Germany", "🇳🇱 Netherlands", "🇯🇵 Japan"]);
  await expect(page.getByRole("button", { name: "Move 🇺🇸 USA up" })).toBeDisabled();
  await page.getByRole("button", { name: "Move 🇯🇵 Japan up" }).click();
  await expect.poll(() => routeOrder(page, cluster)).toEqual(["🇺🇸 USA", "🇩🇪 Germany", "🇯🇵 Japan", "🇳🇱 Netherlands"]);
  await page.getByRole("button", { name: "Move 🇺🇸 USA down" }).click();
  await expect.poll(() => routeOrder(page, cluster)).toEqual(["🇩🇪 Germany", "🇺🇸 USA", "🇯🇵 Japan", "🇳🇱 Netherlands"]);

  // Drag 🇳🇱 Netherlands by its handle onto 🇩🇪 Germany: it takes the first place.
  await drag(page, page.getByRole("button", { name: "Drag to reorder 🇳🇱 Netherlands" }), routeBox(page, "🇩🇪 Germany"));
  await expect.poll(() => routeOrder(page, cluster)).toEqual(["🇳🇱 Netherlands", "🇩🇪 Germany", "🇺🇸 USA", "🇯🇵 Japan"]);

  // The boxes are drawn in that order, after a reload too.
  await page.reload();
  await expect(routeBox(page, "🇯🇵 Japan")).toBeVisible();
  const ys: number[] = [];
  for (const name of ["🇳🇱 Netherlands", "🇩🇪 Germany", "🇺🇸 USA", "🇯🇵 Japan"]) ys.push((await routeBox(page, name).boundingBox())!.y);
  expect([...ys].sort((a, b) => a - b)).toEqual(ys);
});

test("an empty route is dashed with no pipe, and gets its pipe when an inbound is dropped in", async ({ page, cluster }) => {
  // Tall enough that 🇯🇵 Japan, the last route, is on screen below the warnings at the first view's zoom.
  await page.setViewportSize({ width: 1440, height: 1100 });
  await openDiagram(page, cluster);
  const japan = routeBox(page, "🇯🇵 Japan");
  await expect(japan).toHaveAttribute("data-empty", "true");
  await expect(japan).toHaveCSS("border-top-style", "dashed");
  await expect(japan.getByText("Hidden from users (empty)")).toBeVisible();
  await expect(pipe(page, "🇯🇵 Japan")).toHaveCount(0);
  await expect(pipe(page, "🇺🇸 USA")).toHaveCount(1);
  await expect(page.getByTestId("distribution")).toContainText("3 lines");

  await drag(page, chip(page, "🇩🇪 Frankfurt test"), japan);
  await expectIn(page, "🇯🇵 Japan", "🇩🇪 Frankfurt test");
  await expect(japan).toHaveAttribute("data-empty", "false");
  await expect(japan).not.toHaveCSS("border-top-style", "dashed");
  await expect(japan.getByText("Hidden from users (empty)")).toHaveCount(0);
  await expect(pipe(page, "🇯🇵 Japan")).toHaveCount(1);
  await expect(page.getByTestId("distribution")).toContainText("4 lines");
});

test("the unassigned warning names each inbound, jumps to it, and goes once all are assigned", async ({ page, cluster }) => {
  await openDiagram(page, cluster);
  const warnings = page.getByRole("region", { name: "Warnings" });
  await expect(warnings).toContainText("2 inbounds are not in any route — clients can't see them");
  await expandWarnings(page);
  await warnings.getByRole("button", { name: "Show 🇺🇸 Dallas alt" }).click();
  await expect(chip(page, "🇺🇸 Dallas alt")).toBeFocused();

  await page.getByRole("button", { name: "Move 🇺🇸 Dallas alt to…" }).click();
  await page.getByRole("menuitem", { name: "🇺🇸 USA" }).click();
  await expect(warnings).toContainText("1 inbound is not in any route — clients can't see it");
  await expect(warnings.getByRole("button", { name: "Show 🇺🇸 Dallas alt" })).toHaveCount(0);

  await drag(page, chip(page, "🇩🇪 Frankfurt test"), routeBox(page, "🇩🇪 Germany"));
  await expect(warnings).not.toContainText("not in any route");

  // It comes back as soon as an inbound leaves every route again.
  await drag(page, chip(page, "🇩🇪 Frankfurt test"), unassignedZone(page));
  await expect(warnings).toContainText("1 inbound is not in any route — clients can't see it");
});

test("a move in one browser is seen in another without reload @pg", async ({ page, cluster, browser }, testInfo) => {
  const other = await browser.newContext({ baseURL: testInfo.project.use.baseURL, viewport: { width: 1440, height: 900 } });
  try {
    await login(other.request, E2E_ADMIN.username, E2E_ADMIN.password);
    const page2 = await other.newPage();
    // The server listens for changes before it answers the live stream's first event.
    const live2 = page2.waitForResponse((r) => r.url().includes("/api/trpc/topology.onChange"));
    const live1 = page.waitForResponse((r) => r.url().includes("/api/trpc/topology.onChange"));
    await openDiagram(page2, cluster);
    await openDiagram(page, cluster);
    await Promise.all([live1, live2]);

    await drag(page, chip(page, "🇺🇸 Dallas"), routeBox(page, "🇳🇱 Netherlands"));
    await expectIn(page, "🇳🇱 Netherlands", "🇺🇸 Dallas");
    await expect(routeBox(page2, "🇳🇱 Netherlands").getByText("🇺🇸 Dallas", { exact: true })).toBeVisible({ timeout: 60_000 });
    await expect(routeBox(page2, "🇺🇸 USA").getByText("🇺🇸 Dallas", { exact: true })).toHaveCount(0);

    // A change made by a script (another operator) shows up in both, and its warning too.
    const t = await topology(page, cluster);
    const ib = t.inbounds.find((i) => i.name === "🇺🇸 Dallas alt")!;
    const usa = t.routes.find((r) => r.name === "🇺🇸 USA")!;
    await trpcMutation(page.request, "topology.moveInbound", { inboundId: ib.id, toRouteId: usa.id, expectedVersion: ib.version });
    for (const p of [page, page2]) {
      await expect(routeBox(p, "🇺🇸 USA").getByText("🇺🇸 Dallas alt", { exact: true })).toBeVisible({ timeout: 60_000 });
      await expect(p.getByRole("region", { name: "Warnings" })).toContainText("1 inbound is not in any route");
    }
  } finally {
    await other.close();
  }
});

test("a viewer sees the diagram but cannot drag, reorder or use the menu", async ({ page, cluster, browser }, testInfo) => {
  const username = `viewer${Math.random().toString(36).slice(2, 8)}`;
  const password = "viewer-password-123";
  await trpcMutation(page.request, "operators.create", { username, password, role: "viewer" });
  const ctx = await browser.newContext({ baseURL: testInfo.project.use.baseURL, viewport: { width: 1440, height: 900 } });
  try {
    await login(ctx.request, username, password);
    const vp = await ctx.newPage();
    // Counts the moves this page asks for, at the moment it asks (the tRPC link calls fetch).
    await vp.addInitScript(() => {
      const w = window as typeof window & { movesSent: number };
      const send = window.fetch.bind(window);
      w.movesSent = 0;
      window.fetch = (input, init) => {
        const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
        if (url.includes("topology.moveInbound")) w.movesSent++;
        return send(input, init);
      };
    });
    await openDiagram(vp, cluster);
    await expect(vp.getByText("Read-only")).toBeVisible();
    // Chips are still focusable buttons named like their inbounds…
    await expect(chip(vp, "🇺🇸 Dallas")).toBeEnabled();
    // …but there is no menu, no handle and no arrows.
    await expect(vp.getByRole("button", { name: /^Move .* to…$/ })).toHaveCount(0);
    await expect(vp.getByRole("button", { name: /^Drag to reorder/ })).toHaveCount(0);
    await expect(vp.getByRole("button", { name: "Move 🇯🇵 Japan up" })).toHaveCount(0);

    await drag(vp, chip(vp, "🇺🇸 Dallas"), routeBox(vp, "🇩🇪 Germany"));
    await chip(vp, "🇺🇸 New York").focus();
    await vp.keyboard.press("Space");
    await vp.keyboard.press("ArrowDown");
    await vp.keyboard.press("Enter");
    // A move is sent from a zero timeout after the drop and redrawn a task later: two tasks
    // on, any move these gestures started has been sent and drawn.
    await vp.evaluate(() => new Promise((r) => setTimeout(() => setTimeout(r))));
    expect(await vp.evaluate(() => (window as typeof window & { movesSent: number }).movesSent)).toBe(0);
    await expectIn(vp, "🇺🇸 USA", "🇺🇸 Dallas");
    await expectNotIn(vp, "🇩🇪 Germany", "🇺🇸 Dallas");
    expect(await routeOf(page, cluster, "🇺🇸 Dallas")).toBe("🇺🇸 USA");
    expect(await routeOf(page, cluster, "🇺🇸 New York")).toBe("🇺🇸 USA");
  } finally {
    await ctx.close();
  }
});

test("a drop made on stale data is refused with a message, and the diagram shows the truth @pg", async ({ page, cluster }) => {
  // This page hears nothing live, so it keeps the old picture while the inbound moves.
  await page.route("**/api/trpc/topology.onChange**", (route) => route.abort());
  const deaf = page.waitForEvent("requestfailed", (r) => r.url().includes("/api/trpc/topology.onChange"));
  await openDiagram(page, cluster);
  await deaf;
  const t = await topology(page, cluster);
  const dallas = t.inbounds.find((i) => i.name === "🇺🇸 Dallas")!;
  const nl = t.routes.find((r) => r.name === "🇳🇱 Netherlands")!;
  await trpcMutation(page.request, "topology.moveInbound", { inboundId: dallas.id, toRouteId: nl.id, expectedVersion: dallas.version });
  await expectIn(page, "🇺🇸 USA", "🇺🇸 Dallas"); // stale, as intended

  await drag(page, chip(page, "🇺🇸 Dallas"), routeBox(page, "🇩🇪 Germany"));
  await expect(page.getByRole("alert").filter({ hasText: "Could not move 🇺🇸 Dallas" })).toContainText("Someone else changed this inbound");
  await expectIn(page, "🇳🇱 Netherlands", "🇺🇸 Dallas");
  await expectNotIn(page, "🇩🇪 Germany", "🇺🇸 Dallas");
  await expectNotIn(page, "🇺🇸 USA", "🇺🇸 Dallas");
  expect(await routeOf(page, cluster, "🇺🇸 Dallas")).toBe("🇳🇱 Netherlands");
});
