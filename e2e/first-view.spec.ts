/**
 * What an operator meets first (issue 25, points 2, 3 and 5), on an app of its own started as
 * `npm start` starts it (the demo seeded, its simulated agents running in the app): the demo is
 * alive and labelled, fits a 1440×900 window with every route and chip at a draggable zoom,
 * warnings fold into one line, inbounds drag from inside route boxes, flags are SVG, and
 * "Delete demo" removes the demo only.
 */
import { test as base, expect, type Browser } from "@playwright/test";
import { startApp, type AppProcess } from "../scripts/harness/app";
import { login, trpcMutation, trpcQuery, TrpcCallError } from "../scripts/harness/trpc";
import { drag, E2E_ADMIN } from "./fixtures";

const test = base;
// Not @pg: one PGlite app of its own, as a fresh `npm start`; the second test deletes its demo.
test.describe.configure({ mode: "serial" });
let app: AppProcess;
test.beforeAll(async () => {
  test.setTimeout(300_000);
  app = await startApp({ ADMIN_USERNAME: E2E_ADMIN.username, ADMIN_PASSWORD: E2E_ADMIN.password, ROUTEBOARD_DEMO: "1", ROUTEBOARD_DEVTOOLS: "0" }, { readyTimeoutMs: 120_000 });
});
test.afterAll(async () => {
  await app?.stop();
});

async function operatorPage(browser: Browser) {
  const context = await browser.newContext({ baseURL: app.url, viewport: { width: 1440, height: 900 } });
  await login(context.request, E2E_ADMIN.username, E2E_ADMIN.password);
  return { context, page: await context.newPage() };
}

async function demoCluster(browser: Browser) {
  const { context } = await operatorPage(browser);
  const clusters = await trpcQuery<Array<{ id: string; name: string; demo: boolean }>>(context.request, "clusters.list");
  await context.close();
  return clusters.find((c) => c.demo)!;
}

test("the demo is alive and fits 1440×900: green servers, heartbeats with loads, subscribers online with usage, moving users, every route and chip in view, folded warnings, SVG flags, drags from route boxes", async ({ browser }) => {
  const demo = await demoCluster(browser);
  expect(demo.name).toBe("Demo cluster");
  const { context, page } = await operatorPage(browser);
  await page.goto(`/clusters/${demo.id}`);
  await expect(page.getByTestId("demo-badge")).toBeVisible();

  // Alive: its simulated agents report and pass the probes; the simulated apps got lines.
  const servers = page.locator("[data-server-id]");
  await expect(servers).toHaveCount(6);
  await expect(page.locator('[data-server-id][data-status="healthy"]')).toHaveCount(6, { timeout: 60_000 });
  await expect.poll(async () => (await page.getByTestId("inbound-users").allTextContents()).some((t) => Number(t.replace(/\D/g, "")) > 0), { timeout: 60_000 }).toBe(true);

  // Its agents heartbeat as a real agent does: every server's load from heartbeats on the health
  // page, so the fast failover path judges the demo's servers too.
  const health = await context.newPage();
  await health.goto(`/clusters/${demo.id}/health`);
  await expect(health.getByTestId("balancing-load")).toHaveCount(6, { timeout: 60_000 });
  for (const load of await health.getByTestId("balancing-load").all()) await expect(load).toHaveText(/^load \d+ s ago: \d+ users? · [\d.]+ (bit|kbit|Mbit|Gbit)\/s$/i);
  await expect(health.getByTestId("heartbeat")).toHaveText(Array(6).fill("heartbeats arriving (every 2 s)"));
  // Its reports carry each assigned subscriber's traffic: the subscribers page shows them online, with usage.
  await health.goto(`/clusters/${demo.id}/subscribers`);
  await expect
    .poll(
      async () => {
        await health.reload();
        await health.getByTestId("subscriber-row").first().waitFor();
        const online = await health.getByTestId("subscriber-online").filter({ hasText: "Online now" }).count();
        const used = (await health.getByTestId("subscriber-usage").allTextContents()).filter((t) => !t.startsWith("0 KB")).length;
        return online > 0 && used > 0;
      },
      { timeout: 90_000 },
    )
    .toBe(true);
  await expect(health.getByTestId("subscriber-last-seen").filter({ hasText: "just now" }).first()).toBeVisible();
  await health.close();

  // Warnings: the demo's one (its two unassigned inbounds) on its line; with a second they fold
  // into one summary line, naming the worst, that expands.
  const warnings = page.getByRole("region", { name: "Warnings" });
  await expect(warnings).toContainText("2 inbounds are not in any route");
  const probe = await trpcQuery<{ config: Record<string, unknown> }>(context.request, "monitoring.getProbeConfig", { clusterId: demo.id });
  await trpcMutation(context.request, "monitoring.setProbeConfig", { clusterId: demo.id, config: { ...probe.config, enabled: false } });
  const summary = page.getByTestId("warnings-summary");
  await expect(summary).toHaveText(/^⚠\s*2 warnings\s*— .+Show all$/);
  await expect(page.locator("#warnings-list")).toBeHidden();
  await summary.click();
  await expect(page.locator("#warnings-list")).toBeVisible();
  await expect(warnings.getByRole("button", { name: "Show 🇺🇸 Dallas alt" })).toBeVisible();
  await summary.click();
  await expect(page.locator("#warnings-list")).toBeHidden();
  await trpcMutation(context.request, "monitoring.setProbeConfig", { clusterId: demo.id, config: probe.config });
  await expect(summary).toHaveCount(0);

  // The first view: every route box and every chip on screen, at full detail; no map over the subscription box.
  const routes = page.locator("[data-route-id]");
  await expect(routes).toHaveCount(4);
  for (const box of await routes.all()) {
    await expect(box).toBeInViewport({ ratio: 0.99 });
    await expect(box).toHaveAttribute("data-zoom-level", "full");
  }
  for (const chip of await page.locator("[data-inbound-id]").all()) await expect(chip).toBeInViewport({ ratio: 0.99 });
  await expect(page.getByTestId("distribution")).toBeInViewport({ ratio: 0.99 });
  await expect(page.locator(".react-flow__minimap")).toHaveCount(0);
  // Fit view keeps that (no shrinking to chip-less summaries), and the map can be shown.
  await page.getByRole("button", { name: "Fit view" }).click();
  await expect(routes.first()).toHaveAttribute("data-zoom-level", "full");
  await page.getByRole("button", { name: "Show overview map" }).click();
  await expect(page.locator(".react-flow__minimap")).toBeVisible();
  await page.getByRole("button", { name: "Hide overview map" }).click();

  // Flags are drawn, not left to a colour-emoji font; names still read as stored.
  const germany = page.locator("[data-route-id]", { has: page.getByRole("heading", { name: "🇩🇪 Germany" }) });
  await expect(germany.locator('svg[data-flag="DE"]').first()).toBeVisible();
  await expect(page.locator('[data-inbound-id] svg[data-flag="US"]').first()).toBeVisible();

  // An inbound dragged from inside its route box (not its server box) moves.
  const netherlands = page.locator("[data-route-id]", { has: page.getByRole("heading", { name: "🇳🇱 Netherlands" }) });
  const topology = await trpcQuery<{ inbounds: Array<{ id: string; name: string }> }>(context.request, "topology.get", { clusterId: demo.id });
  const frankfurt = topology.inbounds.find((i) => i.name === "🇩🇪 Frankfurt")!;
  await drag(page, germany.locator(`[data-row-inbound="${frankfurt.id}"]`), netherlands);
  await expect(netherlands.locator(`[data-row-inbound="${frankfurt.id}"]`)).toBeVisible();
  await expect(germany.locator("[data-row-inbound]")).toHaveCount(3);
  await context.close();
});

test("Delete demo asks first, removes the demo only, and is refused for any other cluster and without a session", async ({ browser }) => {
  const demo = await demoCluster(browser);
  const { context, page } = await operatorPage(browser);
  const mine = await trpcMutation<{ id: string }>(context.request, "clusters.create", { name: "Production" });
  const refused = await trpcMutation(context.request, "clusters.deleteDemo", { clusterId: mine.id }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(TrpcCallError);
  expect((refused as TrpcCallError).message).toContain("Production is not the demo cluster");
  const anonymous = await fetch(`${app.url}/api/trpc/clusters.deleteDemo`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ json: { clusterId: demo.id } }) });
  expect(anonymous.status).toBe(401);

  await page.goto(`/clusters/${demo.id}`);
  await page.getByRole("button", { name: "Delete demo" }).click();
  const dialog = page.getByRole("dialog", { name: "Delete the demo cluster Demo cluster?" });
  await dialog.getByRole("button", { name: "Cancel" }).click();
  await expect(dialog).toBeHidden();
  await page.getByRole("button", { name: "Delete demo" }).click();
  await dialog.getByRole("button", { name: "Delete demo" }).click();
  await expect(page).toHaveURL(/\/clusters$/);
  await expect(page.getByRole("link", { name: /Production/ })).toBeVisible();
  await expect(page.getByRole("link", { name: /Demo cluster/ })).toHaveCount(0);
  const left = await trpcQuery<Array<{ name: string; demo: boolean }>>(context.request, "clusters.list");
  expect(left.map((c) => c.name)).toEqual(["Production"]);
  await context.close();
});
