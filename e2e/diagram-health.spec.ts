/**
 * Panic and health on the diagram (issue #13): a route whose every server is down is red
 * with its reason; inbound rows show their server's status, users and traffic; "Show route"
 * pans to the route and flashes it; the legend opens from the keyboard; zoomed out, servers
 * are compact summaries and no text on screen is under 9 px.
 *
 * Faults come from agent reports, as a real agent sends them: the demo's servers get fresh
 * agent tokens (tooling.rotateAgentTokens, ROUTEBOARD_DEVTOOLS=1), probes are turned off so
 * reports alone decide, every server reports healthy, then Germany's servers report their
 * listener down.
 */
import type { Page } from "@playwright/test";
import { test, expect, type TestCluster, expandWarnings } from "./fixtures";
import { trpcMutation, trpcQuery } from "../scripts/harness/trpc";

test.use({ viewport: { width: 1440, height: 900 } });

interface Topo {
  servers: Array<{ id: string; name: string }>;
  inbounds: Array<{ id: string; name: string; serverId: string; routeId: string | null }>;
  routes: Array<{ id: string; name: string }>;
}

const routeBox = (page: Page, name: string) => page.getByRole("region", { name: `Route ${name}`, exact: true });

async function report(page: Page, token: string, listenerAlive: boolean, load: { users: number; bps: number }) {
  const res = await page.request.post("/api/agent/report", {
    headers: { authorization: `Bearer ${token}` },
    data: { listenerAlive, serviceRunning: true, usersOnline: load.users, rxBps: load.bps, txBps: load.bps / 4, cpu: 5, memory: 20, neighbours: [] },
  });
  expect(res.status()).toBe(200);
  return ((await res.json()) as { status: string }).status;
}

/** Every server healthy by its own report, then Germany's servers down. Returns what the test needs. */
async function faultGermany(page: Page, cluster: TestCluster) {
  const { plan } = await trpcMutation<{ plan: { servers: Array<{ serverId: string; token: string }> } }>(page.request, "tooling.rotateAgentTokens", {
    clusterId: cluster.id,
  });
  const probe = await trpcQuery<{ config: Record<string, unknown> }>(page.request, "monitoring.getProbeConfig", { clusterId: cluster.id });
  await trpcMutation(page.request, "monitoring.setProbeConfig", { clusterId: cluster.id, config: { ...probe.config, enabled: false } });
  const topo = await trpcQuery<Topo>(page.request, "topology.get", { clusterId: cluster.id });
  const germany = topo.routes.find((r) => r.name === "🇩🇪 Germany")!;
  const germanServers = new Set(topo.inbounds.filter((i) => i.routeId === germany.id).map((i) => i.serverId));
  for (const s of plan.servers) expect(await report(page, s.token, true, { users: 8, bps: 40e6 })).toBe("healthy");
  for (const s of plan.servers) if (germanServers.has(s.serverId)) expect(await report(page, s.token, false, { users: 0, bps: 0 })).toBe("unavailable");
  // One subscriber fetches, so the balancer assigns them an inbound per route.
  const subs = await trpcQuery<Array<{ name: string; token: string }>>(page.request, "subscribers.list", { clusterId: cluster.id });
  const alice = subs.find((s) => s.name === "alice")!;
  const sub = (await (await page.request.get(`/sub/${alice.token}?format=json`)).json()) as { routes: Array<{ route: string; inbound: string }> };
  return { topo, germanServers, aliceUsa: sub.routes.find((r) => r.route === "🇺🇸 USA")!.inbound };
}

/** The smallest text on screen inside the diagram, in screen pixels (font size × zoom). */
async function smallestText(page: Page): Promise<{ zoom: number; min: number; sample: string; count: number }> {
  return page.evaluate(() => {
    const vp = document.querySelector<HTMLElement>(".react-flow__viewport")!;
    const zoom = new DOMMatrixReadOnly(getComputedStyle(vp).transform).a;
    const pane = document.querySelector('[data-testid="diagram"]')!.getBoundingClientRect();
    let min = Infinity;
    let sample = "";
    let count = 0;
    const walker = document.createTreeWalker(vp, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const text = n.textContent?.trim();
      if (!text) continue;
      const el = n.parentElement!;
      if (!el.checkVisibility({ opacityProperty: true, visibilityProperty: true })) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      const r = range.getBoundingClientRect();
      // Screen-reader-only text is clipped to a pixel; off-screen text is not "visible".
      if (r.width <= 1 || r.height <= 1) continue;
      if (r.right < pane.left || r.left > pane.right || r.bottom < pane.top || r.top > pane.bottom) continue;
      count++;
      const px = parseFloat(getComputedStyle(el).fontSize) * zoom;
      if (px < min) {
        min = px;
        sample = text;
      }
    }
    return { zoom, min, sample, count };
  });
}

test("a route whose servers are all down is red with its reason; rows show status, users and traffic", async ({ page, cluster }) => {
  const { topo, germanServers, aliceUsa } = await faultGermany(page, cluster);
  await page.goto(`/clusters/${cluster.id}`);

  const germany = routeBox(page, "🇩🇪 Germany");
  await expect(germany).toHaveAttribute("data-panic", "true");
  const why = germanServers.size === 1 ? "its only server is down" : "every server down";
  await expect(germany.getByTestId("route-panic")).toHaveText(`Panic: no available inbound — ${why}`);
  expect(await germany.evaluate((el) => getComputedStyle(el).borderTopColor)).toBe("rgb(220, 38, 38)");
  // The header is tinted red (Tailwind's red-100); a healthy route's header is not tinted.
  await expect(germany.locator("header")).toHaveClass(/bg-red-100/);
  // Its pipe is red too; the healthy route's keeps its colour.
  const pipeStroke = (name: string) =>
    page.getByRole("img", { name: `Pipe from ${name} to the subscription`, exact: true }).locator("path.react-flow__edge-path").evaluate((el) => getComputedStyle(el).stroke);
  expect(await pipeStroke("🇩🇪 Germany")).toBe("rgb(220, 38, 38)");
  expect(await pipeStroke("🇺🇸 USA")).not.toBe("rgb(220, 38, 38)");

  const usa = routeBox(page, "🇺🇸 USA");
  await expect(usa).not.toHaveAttribute("data-panic", /.*/);
  expect(await usa.evaluate((el) => getComputedStyle(el).borderTopColor)).not.toBe("rgb(220, 38, 38)");
  await expect(usa.locator("header")).not.toHaveClass(/bg-red-100/);

  // Each row: the server's status dot (label as tooltip), users assigned, traffic now.
  const usaRows = usa.locator("[data-row-inbound]");
  const usaInbounds = topo.inbounds.filter((i) => i.routeId === topo.routes.find((r) => r.name === "🇺🇸 USA")!.id);
  await expect(usaRows).toHaveCount(usaInbounds.length);
  for (const ib of usaInbounds) {
    const row = usa.locator(`[data-row-inbound="${ib.id}"]`);
    const server = topo.servers.find((s) => s.id === ib.serverId)!;
    await expect(row.getByTestId("inbound-status")).toHaveAttribute("title", new RegExp(`^${server.name}: Healthy`));
    await expect(row.getByTestId("inbound-status")).toHaveClass(/bg-green-600/);
    await expect(row.getByTestId("inbound-traffic")).toHaveText(/^≈?\d+(\.\d)? (bit|kbit|Mbit)\/s$/);
    await expect(row.getByTestId("inbound-users")).toHaveText(/^Users: \d+$/);
  }
  // Alice's inbound carries her, and its server's traffic (or its share of it).
  const aliceRow = usa.locator(`[data-row-inbound="${topo.inbounds.find((i) => i.name === aliceUsa)!.id}"]`);
  await expect(aliceRow.getByTestId("inbound-users")).toHaveText(/^Users: [1-9]\d*$/);
  await expect(aliceRow.getByTestId("inbound-traffic")).not.toHaveText("0 bit/s");

  for (const row of await germany.locator("[data-row-inbound]").all()) {
    await expect(row.getByTestId("inbound-status")).toHaveAttribute("title", /: Server unavailable/);
    await expect(row.getByTestId("inbound-traffic")).toHaveText(/^≈?0 bit\/s$/);
  }

  // At the first view every text is readable.
  const full = await smallestText(page);
  expect(full.zoom).toBeGreaterThanOrEqual(0.75);
  expect(full.count).toBeGreaterThan(20);
  expect(full.min, `smallest text "${full.sample}"`).toBeGreaterThanOrEqual(9);
});

test("Show route pans to the route and flashes it; the legend opens from the keyboard", async ({ page, cluster }) => {
  // The suite's browser asks for reduced motion (no flash then); this test is about the flash.
  await page.emulateMedia({ reducedMotion: "no-preference" });
  await faultGermany(page, cluster);
  await page.goto(`/clusters/${cluster.id}`);
  const germany = routeBox(page, "🇩🇪 Germany");
  await expect(germany).toBeVisible();

  // Pan far away: the box leaves the screen (and, off screen, is not even rendered).
  const pane = page.getByTestId("diagram");
  const b = (await pane.boundingBox())!;
  await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2);
  for (let i = 0; i < 6; i++) await page.mouse.wheel(0, 600);
  await expect(germany).not.toBeInViewport();

  await expandWarnings(page);
  await page
    .getByRole("region", { name: "Warnings" })
    .getByRole("button", { name: "Show route 🇩🇪 Germany", exact: true })
    .first()
    .click();
  await expect(germany).toBeInViewport({ ratio: 0.9 });
  await expect(germany).toHaveAttribute("data-flash", "true");
  expect(await germany.evaluate((el) => getComputedStyle(el).animationName)).toMatch(/route-flash/);
  // The flash is brief.
  await expect(germany).not.toHaveAttribute("data-flash", /.*/);

  const legendButton = page.getByRole("button", { name: "Legend", exact: true });
  await expect(legendButton).toHaveAttribute("aria-expanded", "false");
  await legendButton.focus();
  await page.keyboard.press("Enter");
  const legend = page.getByRole("region", { name: "Legend", exact: true });
  await expect(legend).toBeVisible();
  await expect(legendButton).toHaveAttribute("aria-expanded", "true");
  for (const text of ["Route in panic", "Empty route", "Unassigned", "An inbound whose server is not available", "Health probe failing", "Zoomed out"]) {
    await expect(legend).toContainText(text);
  }
  // Escape closes it, from the button or from inside, and focus goes back to the button.
  await page.keyboard.press("Escape");
  await expect(legend).toHaveCount(0);
  await expect(legendButton).toBeFocused();
  await page.keyboard.press("Space");
  await expect(legend).toBeVisible();
  await legend.getByRole("heading", { name: "Boxes" }).click();
  await page.keyboard.press("Escape");
  await expect(legend).toHaveCount(0);
  await expect(legendButton).toBeFocused();
});

test("zoomed out, servers are compact summaries and no text on screen is under 9 px", async ({ page, cluster }) => {
  await faultGermany(page, cluster);
  // A smaller window, so "Fit view" must zoom below full detail to show everything.
  await page.setViewportSize({ width: 1024, height: 700 });
  await page.goto(`/clusters/${cluster.id}`);
  await expect(page.locator("[data-inbound-id]").first()).toBeVisible();
  await page.getByRole("button", { name: "Fit view" }).click();

  const servers = page.locator("[data-server-id]");
  await expect(servers.first()).toHaveAttribute("data-zoom-level", "compact");
  await expect(page.getByTestId("server-compact").first()).toBeVisible();
  // Compact: name, status dot, inbound count; no chips.
  await expect(page.locator("[data-inbound-id]")).toHaveCount(0);
  await expect(page.getByRole("group", { name: /^de-ber-1: Server unavailable, \d inbounds?$/ })).toBeVisible();
  const germany = routeBox(page, "🇩🇪 Germany");
  await expect(germany).toHaveAttribute("data-panic", "true");
  await expect(germany.getByTestId("route-compact")).toContainText("Panic");

  const small = await smallestText(page);
  expect(small.zoom).toBeLessThan(0.75);
  expect(small.count).toBeGreaterThan(5);
  expect(small.min, `smallest text "${small.sample}"`).toBeGreaterThanOrEqual(9);

  // Zooming back in brings the full boxes and their chips back.
  for (let i = 0; i < 4; i++) await page.getByRole("button", { name: "Zoom In" }).click();
  await expect(servers.first()).toHaveAttribute("data-zoom-level", "full");
  await expect(page.locator("[data-inbound-id]").first()).toBeVisible();
});
