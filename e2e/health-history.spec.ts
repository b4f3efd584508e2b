/**
 * The operator's dashboard (issue 13): the health page's 24-hour charts from the demo's
 * history, the overrides table inside its card, field-named probe messages, route flags on
 * the servers page, the explain page and ?format=json, a new inbound created straight into a
 * route with its flag picked from a list, and the servers page following another browser.
 */
import { asViewer, E2E_ADMIN, editServer, expect, openNewInboundForm, test } from "./fixtures";
import { login, trpcMutation, trpcQuery } from "../scripts/harness/trpc";
import { healthyReport, postAgentReport } from "./agent-report";

test.use({ viewport: { width: 1440, height: 900 } });

test("health page: every demo server gets traffic and users charts with a legend", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}/health`);
  const cards = page.getByTestId("server-history");
  await expect(cards).toHaveCount(6);
  for (const name of ["de-ber-1", "de-fra-1", "nl-ams-1", "nl-rtm-1", "us-dal-1", "us-nyc-1"]) {
    const card = page.getByRole("article", { name: `History of ${name}` });
    const charts = card.getByTestId("history-chart");
    await expect(charts).toHaveCount(2);
    for (const chart of await charts.all()) {
      const canvas = chart.locator("canvas");
      await expect(canvas).toBeVisible();
      const box = await canvas.boundingBox();
      expect(box!.width).toBeGreaterThan(100);
      expect(box!.height).toBeGreaterThan(50);
    }
    await expect(charts.nth(0).locator(".u-legend")).toContainText("↓ rx");
    await expect(charts.nth(0).locator(".u-legend")).toContainText("↑ tx");
    await expect(charts.nth(1).locator(".u-legend")).toContainText("users");
  }
  // The chart drew something: its canvas is not blank.
  const painted = await page
    .getByRole("article", { name: "History of us-nyc-1" })
    .getByTestId("history-chart")
    .first()
    .locator("canvas")
    .evaluate((c: HTMLCanvasElement) => {
      const d = c.getContext("2d")!.getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i]! > 0) n++;
      return n;
    });
  expect(painted).toBeGreaterThan(500);
  await page.screenshot({ path: "test-results/health-history.png", fullPage: true });
});

test("health page: a cluster without history says so instead of drawing empty charts", async ({ page }) => {
  const c = await trpcMutation<{ id: string }>(page.request, "clusters.create", { name: `empty ${Math.random().toString(36).slice(2, 8)}` });
  await trpcMutation(page.request, "servers.create", { clusterId: c.id, name: "solo", address: "127.0.0.1" });
  await page.goto(`/clusters/${c.id}/health`);
  await expect(page.getByTestId("history-empty")).toContainText("No history yet");
  await expect(page.getByTestId("history-chart")).toHaveCount(0);
});

test("a server whose users got less each than another's of its cluster shows its link seen full, on the health page and in a subscriber's explanation; a lower bound links editors to where the capacity is set, and a set capacity shows in both", async ({ page, browser }) => {
  const c = await trpcMutation<{ id: string }>(page.request, "clusters.create", { name: `full ${Math.random().toString(36).slice(2, 8)}` });
  // No probes (nothing listens on these ports): the agents' reports alone make the servers healthy.
  await trpcMutation(page.request, "monitoring.setProbeConfig", { clusterId: c.id, config: { enabled: false } });
  const server = async (name: string, port: number) => {
    const s = await trpcMutation<{ id: string; agentToken: string }>(page.request, "servers.create", { clusterId: c.id, name, address: "127.0.0.1" });
    const { inbound } = await trpcMutation<{ inbound: { id: string } }>(page.request, "inbounds.create", { serverId: s.id, name: `in-${name}`, port, security: "none", sni: null });
    return { ...s, inboundId: inbound.id };
  };
  const roomy = await server("roomy", 24_001);
  const full = await server("full", 24_002);
  await trpcMutation(page.request, "routes.create", { clusterId: c.id, name: "Both", algorithm: "least-traffic", inboundIds: [roomy.inboundId, full.inboundId] });
  const sub = await trpcMutation<{ id: string }>(page.request, "subscribers.create", { clusterId: c.id, name: "Reader" });
  // 100 users at 3 Mbit/s each, then 100 at 1.5 Mbit/s each: more than the 25 % margin apart
  // (both links above the 100 Mbit/s capacity floor, so their learned peaks count).
  for (const [s, bps] of [[roomy, 300e6], [full, 150e6]] as const) {
    const res = await postAgentReport(page.request, s.agentToken, healthyReport({ usersOnline: 100, rxBps: bps, txBps: bps / 10 }));
    expect(res.status()).toBe(200);
  }
  await page.goto(`/clusters/${c.id}/health`);
  await expect(page.getByRole("row", { name: "Server full" })).toContainText("peak 150 Mbit/s · link last seen full at 150 Mbit/s");
  // "Seen full" is an inference (users asking for less look the same): editors can set the link there too.
  await expect(page.getByRole("row", { name: "Server full" }).getByRole("link", { name: "set the link capacity" })).toBeVisible();
  await expect(page.getByRole("row", { name: "Server roomy" })).toContainText("peak 300 Mbit/s · a lower bound: link never seen full");
  await page.goto(`/clusters/${c.id}/subscribers/${sub.id}`);
  await page.getByRole("tab", { name: "Explanation" }).click();
  const route = page.getByRole("listitem", { name: "Route Both" });
  await expect(route.getByText(/\[learned peak, link seen full\]/)).toBeVisible();
  await expect(route.getByText(/\[learned peak, a lower bound\]/)).toBeVisible();

  // The lower bound points editors to where the capacity is set (a viewer, who cannot set it,
  // reads the same line without the link); once set, the health page and the explanation say
  // the balancer uses it.
  await asViewer(page, browser, async (viewer) => {
    await viewer.goto(`/clusters/${c.id}/health`);
    const row = viewer.getByRole("row", { name: "Server roomy" });
    await expect(row).toContainText("a lower bound: link never seen full");
    await expect(row.getByRole("link", { name: "set the link capacity" })).toHaveCount(0);
    await expect(viewer.getByRole("row", { name: "Server full" }).getByRole("link", { name: "set the link capacity" })).toHaveCount(0);
    // Reading where a server stands on the fast path is for every operator: these agents never sent a heartbeat.
    await expect(row.getByTestId("heartbeat")).toHaveText("no heartbeats from this agent: only reports and probes can take it out of rotation");
  });
  await page.goto(`/clusters/${c.id}/health`);
  await page.getByRole("row", { name: "Server roomy" }).getByRole("link", { name: "set the link capacity" }).click();
  await expect(page).toHaveURL(new RegExp(`/clusters/${c.id}/servers$`));
  await editServer(page, "roomy", async (form) => {
    await expect(form.getByText(/split evenly across such servers/)).toBeVisible();
    await form.getByLabel("Link capacity (Mbit/s, optional)").fill("500");
  });
  await page.goto(`/clusters/${c.id}/health`);
  const roomyRow = page.getByRole("row", { name: "Server roomy" });
  await expect(roomyRow).toContainText("peak 300 Mbit/s · link capacity set: 500 Mbit/s");
  await expect(roomyRow.getByRole("link", { name: "set the link capacity" })).toHaveCount(0);
  await page.goto(`/clusters/${c.id}/subscribers/${sub.id}`);
  await page.getByRole("tab", { name: "Explanation" }).click();
  await expect(route.getByText(/C 500 \[override\]/)).toBeVisible();
});

test("a subscriber on a link never seen full stays there while its users are not measured held back, and the explanation says so; once that link is set, the user moves", async ({ page }) => {
  const c = await trpcMutation<{ id: string }>(page.request, "clusters.create", { name: `blind ${Math.random().toString(36).slice(2, 8)}` });
  await trpcMutation(page.request, "monitoring.setProbeConfig", { clusterId: c.id, config: { enabled: false } });
  const server = async (name: string, port: number, capacityMbps: number | null) => {
    const s = await trpcMutation<{ id: string; agentToken: string }>(page.request, "servers.create", { clusterId: c.id, name, address: "127.0.0.1", role: "node", coefficient: 1, capacityMbps });
    const { inbound } = await trpcMutation<{ inbound: { id: string } }>(page.request, "inbounds.create", { serverId: s.id, name: `in-${name}`, port, security: "none", sni: null });
    return { ...s, inboundId: inbound.id };
  };
  // steady: 100 users at 3 Mbit/s each, a learned peak that is only what they asked for.
  // big: a 1 Gbit/s link set by the operator, 10 users also at 3 Mbit/s each.
  const steady = await server("steady", 24_011, null);
  const big = await server("big", 24_012, 1000);
  await trpcMutation(page.request, "routes.create", { clusterId: c.id, name: "Both", algorithm: "least-traffic", inboundIds: [steady.inboundId, big.inboundId] });
  const sub = await trpcMutation<{ id: string; token: string }>(page.request, "subscribers.create", { clusterId: c.id, name: "Stayer" });
  const inboundNow = async () => ((await (await page.request.get(`/sub/${sub.token}?format=json`)).json()) as { routes: Array<{ inbound: string }> }).routes[0]?.inbound;
  // Only steady has reported: the first fetch puts the subscriber there.
  expect((await postAgentReport(page.request, steady.agentToken, healthyReport({ usersOnline: 100, rxBps: 300e6, txBps: 30e6 }))).status()).toBe(200);
  await expect.poll(inboundNow, { timeout: 30_000 }).toBe("in-steady");
  expect((await postAgentReport(page.request, big.agentToken, healthyReport({ usersOnline: 10, rxBps: 30e6, txBps: 3e6 }))).status()).toBe(200);

  // By fair share alone big's 1000 / 11 would move the user; steady's "no spare" is a lower bound.
  await page.goto(`/clusters/${c.id}/subscribers/${sub.id}`);
  await page.getByRole("tab", { name: "Explanation" }).click();
  const route = page.getByRole("listitem", { name: "Route Both" });
  await expect(route.getByText(/^Kept in-steady: in-steady has not shown its capacity \(never seen full, no link capacity set\), so its score is only what its users asked for, and its users are not measured held back: 3\.00 Mbit\/s each, within 25% of the best \(3\.00 Mbit\/s on in-(steady|big)\)/)).toBeVisible({ timeout: 30_000 });
  await expect(route.getByTestId("chosen-inbound")).toContainText("in-steady");
  expect(await inboundNow()).toBe("in-steady");

  // The operator sets steady's link to what it carries: its users are held back there, and rule 1b moves them.
  await page.goto(`/clusters/${c.id}/servers`);
  await editServer(page, "steady", (form) => form.getByLabel("Link capacity (Mbit/s, optional)").fill("300"));
  await page.goto(`/clusters/${c.id}/subscribers/${sub.id}`);
  await page.getByRole("tab", { name: "Explanation" }).click();
  await expect(route.getByText(/^Moved from in-steady to in-big: in-steady has no spare capacity and in-big offers a \d+% larger fair share/)).toBeVisible({ timeout: 30_000 });
  await expect.poll(inboundNow, { timeout: 30_000 }).toBe("in-big");
  await page.screenshot({ path: "test-results/explain-not-shown.png", fullPage: true });
});

test("health page: the overrides table fits its card at 1440 px and bad probe values get field-named messages", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}/health`);
  const card = page.getByTestId("overrides-card");
  await expect(card.getByRole("button", { name: "Save" })).toHaveCount(6);
  const cardBox = (await card.boundingBox())!;
  for (const save of await card.getByRole("button", { name: "Save" }).all()) {
    const b = (await save.boundingBox())!;
    expect(b.x).toBeGreaterThanOrEqual(cardBox.x);
    expect(b.x + b.width).toBeLessThanOrEqual(cardBox.x + cardBox.width);
  }
  // Nothing scrolls sideways, and names stay on one line.
  expect(await card.evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0);
  const nameCell = card.getByRole("row", { name: "Override for de-ber-1" }).getByRole("cell").first();
  await expect(nameCell).toHaveText("de-ber-1");
  const lineHeight = await nameCell.evaluate((el) => parseFloat(getComputedStyle(el).lineHeight));
  expect((await nameCell.boundingBox())!.height).toBeLessThan(lineHeight * 2 + 8);

  await card.getByLabel("Port for de-ber-1").fill("0");
  await expect(card.getByRole("alert")).toHaveText("Port must be a whole number between 1 and 65535");
  await expect(card.getByRole("row", { name: "Override for de-ber-1" }).getByRole("button", { name: "Save" })).toBeDisabled();

  const probe = page.getByRole("form", { name: "Probe configuration" });
  await probe.getByLabel("Interval (s)").fill("0");
  await expect(probe.getByText("Interval must be a whole number of seconds between 1 and 3600")).toBeVisible();
  await probe.getByLabel("Timeout (s)").fill("abc");
  await expect(probe.getByText("Timeout must be a whole number of seconds between 1 and 3600")).toBeVisible();
  await expect(page.getByText(/Too small|expected number/)).toHaveCount(0);
  await page.screenshot({ path: "test-results/health-overrides.png", fullPage: true });
});

test("route flags show on the servers page, the explain page and in ?format=json", async ({ page, cluster }) => {
  const route = await trpcMutation<{ id: string }>(page.request, "routes.create", { clusterId: cluster.id, name: "Testland", flag: "FR" });
  const topo = await trpcQuery<{ inbounds: Array<{ id: string; name: string; routeId: string | null; version: number }> }>(page.request, "topology.get", { clusterId: cluster.id });
  const alt = topo.inbounds.find((i) => i.name === "🇺🇸 Dallas alt")!;
  await trpcMutation(page.request, "topology.moveInbound", { inboundId: alt.id, toRouteId: route.id, expectedVersion: alt.version });

  await page.goto(`/clusters/${cluster.id}/servers`);
  const row = page.getByRole("region", { name: "Server us-dal-1" }).getByRole("row", { name: /Dallas alt/ });
  await expect(row).toContainText("🇫🇷Testland");
  await expect(row.getByTestId("route-flag")).toHaveText("🇫🇷");

  const subs = await trpcQuery<Array<{ id: string; name: string; token: string }>>(page.request, "subscribers.list", { clusterId: cluster.id });
  const alice = subs.find((s) => s.name === "alice")!;
  const json = (await (await page.request.get(`/sub/${alice.token}?format=json`)).json()) as { routes: Array<{ route: string; flag: string | null; flagCode: string | null }> };
  expect(json.routes.find((r) => r.route === "Testland")).toMatchObject({ flag: "🇫🇷", flagCode: "FR" });
  expect(json.routes.find((r) => r.route === "🇺🇸 USA")).toMatchObject({ flag: "🇺🇸", flagCode: "US" });

  await page.goto(`/clusters/${cluster.id}/subscribers/${alice.id}?tab=explain`);
  await expect(page.getByRole("listitem", { name: "Route Testland" }).getByTestId("route-flag")).toHaveText("🇫🇷");
});

test("a new inbound goes straight into a route, its flag picked from the list", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}/servers`);
  const fra = page.getByRole("region", { name: "Server de-fra-1" });
  const form = await openNewInboundForm(page, "de-fra-1");
  await form.getByLabel("Name", { exact: true }).fill("Frankfurt new");
  await form.getByRole("button", { name: "Choose a flag…" }).click();
  await form.getByLabel("Search countries").fill("Germany");
  await form.getByRole("radio", { name: "Germany" }).check();
  await expect(form.getByLabel("Name", { exact: true })).toHaveValue("🇩🇪 Frankfurt new");
  await form.getByLabel("Port").fill("10443");
  await form.getByLabel("Masquerade SNI").fill("www.samsung.com");
  await form.getByLabel("Route").selectOption({ label: "🇩🇪 Germany" });
  await form.getByRole("button", { name: "Create inbound" }).click();
  await expect(form).toBeHidden();
  await expect(page.getByRole("status").filter({ hasText: "Inbound created in route" })).toContainText("🇩🇪 Germany");
  await expect(fra.getByRole("row", { name: /🇩🇪 Frankfurt new/ })).toContainText("🇩🇪 Germany");
  const topo = await trpcQuery<{ routes: Array<{ id: string; name: string }>; inbounds: Array<{ name: string; routeId: string | null }> }>(page.request, "topology.get", { clusterId: cluster.id });
  const germany = topo.routes.find((r) => r.name === "🇩🇪 Germany")!;
  expect(topo.inbounds.find((i) => i.name === "🇩🇪 Frankfurt new")!.routeId).toBe(germany.id);
});

test("the servers page shows another browser's change without a reload", async ({ page, cluster, browser }) => {
  await page.goto(`/clusters/${cluster.id}/servers`);
  const ams = page.getByRole("region", { name: "Server nl-ams-1" });
  await expect(ams.getByRole("row", { name: /Amsterdam TLS/ })).toBeVisible();
  // Mark the page: a reload would lose this.
  await page.evaluate(() => ((window as unknown as { marker: number }).marker = 42));

  const other = await browser.newContext({ baseURL: new URL(page.url()).origin });
  try {
    await login(other.request, E2E_ADMIN.username, E2E_ADMIN.password);
    const servers = await trpcQuery<Array<{ id: string; name: string }>>(other.request, "servers.list", { clusterId: cluster.id });
    const amsId = servers.find((s) => s.name === "nl-ams-1")!.id;
    await trpcMutation(other.request, "inbounds.create", { serverId: amsId, name: "🇳🇱 Amsterdam live", port: 12443, security: "reality", sni: "www.cloudflare.com" });
  } finally {
    await other.close();
  }
  await expect(ams.getByRole("row", { name: /Amsterdam live/ })).toBeVisible();
  expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(42);
});

test("health page: the history range selector refetches and the charts' time axis spans the chosen range", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}/health`);
  const range = page.getByRole("group", { name: "History range" });
  await expect(range.getByRole("button", { name: "Last 24 hours" })).toHaveAttribute("aria-pressed", "true");
  const chart = page.getByRole("article", { name: "History of us-nyc-1" }).getByTestId("history-chart").first();
  const span = async () => {
    const [min, max] = await Promise.all([chart.getAttribute("data-x-min"), chart.getAttribute("data-x-max")]);
    return min === null || max === null ? null : (Number(max) - Number(min)) / 3600;
  };
  await expect.poll(span).toBeCloseTo(24, 0);
  // [button, range sent, hours, one slot in hours: 5 min up to a day, 35 min for a week]
  for (const [label, key, hours, slot] of [
    ["Last 7 days", "7d", 168, 35 / 60],
    ["Last hour", "1h", 1, 5 / 60],
    ["Last 6 hours", "6h", 6, 5 / 60],
  ] as const) {
    const asked = page.waitForRequest((r) => r.url().includes("monitoring.history") && decodeURIComponent(r.url()).includes(`"range":"${key}"`));
    await range.getByRole("button", { name: label }).click();
    await asked;
    await expect(range.getByRole("button", { name: label })).toHaveAttribute("aria-pressed", "true");
    await expect(page.getByRole("heading", { name: label, exact: true })).toBeVisible();
    // The x axis is drawn over the whole range, less at most one slot (slots are aligned).
    await expect.poll(async () => {
      const s = await span();
      return s !== null && s > hours - slot - 1e-9 && s <= hours + 1e-9;
    }).toBe(true);
    await expect(chart).toHaveAttribute("aria-label", `Traffic of us-nyc-1 over the ${label.toLowerCase()}`);
  }
});
