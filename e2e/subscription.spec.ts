/**
 * The subscription endpoint seen from outside (issue #5): a drag in the dashboard shows in
 * the very next fetch; formats, headers and 404s; the explain page of a subscriber.
 */
import type { Page } from "@playwright/test";
import { test, expect, type TestCluster } from "./fixtures";
import { trpcMutation, trpcQuery } from "../scripts/harness/trpc";

test.use({ viewport: { width: 1440, height: 900 } });

interface SubJson {
  routes: Array<{ routeId: string; route: string; inboundId: string; inbound: string; server: string; link: string }>;
}

async function firstSubscriber(page: Page, cluster: TestCluster) {
  const subs = await trpcQuery<Array<{ id: string; name: string; token: string }>>(page.request, "subscribers.list", { clusterId: cluster.id });
  return subs.find((s) => s.name === "alice")!;
}

async function fetchJson(page: Page, token: string): Promise<SubJson> {
  const res = await page.request.get(`/sub/${token}?format=json`);
  expect(res.status()).toBe(200);
  return (await res.json()) as SubJson;
}

test("a drag in the dashboard shows in the very next subscription fetch @pg", async ({ page, cluster }) => {
  const alice = await firstSubscriber(page, cluster);
  const before = await fetchJson(page, alice.token);
  expect(before.routes.map((r) => r.route)).toEqual(["🇺🇸 USA", "🇩🇪 Germany", "🇳🇱 Netherlands"]);
  const usa = before.routes[0]!;

  await page.goto(`/clusters/${cluster.id}`);
  const chip = page.getByRole("button", { name: usa.inbound, exact: true });
  const germany = page.getByRole("region", { name: "Route 🇩🇪 Germany", exact: true });
  await expect(chip).toBeVisible();
  const saved = page.waitForResponse((r) => r.url().includes("topology.moveInbound") && r.ok());
  await chip.dragTo(germany, { steps: 10 });
  await saved;

  const after = await fetchJson(page, alice.token);
  expect(after.routes.find((r) => r.route === "🇺🇸 USA")!.inboundId).not.toBe(usa.inboundId);
  expect(after.routes.map((r) => r.route)).toEqual(["🇺🇸 USA", "🇩🇪 Germany", "🇳🇱 Netherlands"]);
});

test("formats, headers, and 404 without a hint", async ({ page, cluster }) => {
  const alice = await firstSubscriber(page, cluster);
  // As an app asks (page.request sends the browser's User-Agent, which gets the HTML page).
  const plain = await page.request.get(`/sub/${alice.token}`, { headers: { "user-agent": "v2rayNG/1.9.36" } });
  expect(plain.status()).toBe(200);
  const headers = plain.headers();
  expect(headers["subscription-userinfo"]).toMatch(/^upload=0; download=\d+; total=\d+; expire=\d+$/);
  expect(headers["profile-update-interval"]).toBe("12");
  expect(headers["profile-title"]).toBeTruthy();
  const links = Buffer.from(await plain.text(), "base64").toString("utf8").split("\n");
  expect(links).toHaveLength(3);
  for (const l of links) expect(l).toMatch(/^vless:\/\/[0-9a-f-]{36}@[^:]+:\d+\?.+#.+$/);

  const clash = await page.request.get(`/sub/${alice.token}?format=clash`);
  expect(clash.headers()["content-type"]).toContain("yaml");
  expect(await clash.text()).toContain("proxy-groups:");
  const singbox = await page.request.get(`/sub/${alice.token}?format=singbox`);
  expect((await singbox.json()).outbounds.filter((o: { type: string }) => o.type === "vless")).toHaveLength(3);
  expect((await page.request.get(`/sub/${alice.token}?format=xml`)).status()).toBe(400);

  const unknown = await page.request.get("/sub/this-token-does-not-exist");
  expect(unknown.status()).toBe(404);
  await trpcMutation(page.request, "subscribers.setEnabled", { subscriberId: alice.id, enabled: false });
  const disabled = await page.request.get(`/sub/${alice.token}`);
  expect(disabled.status()).toBe(404);
  expect(await disabled.text()).toBe(await unknown.text());
});

test("a subscriber's page explains each route's choice with every candidate's score", async ({ page, cluster }) => {
  const alice = await firstSubscriber(page, cluster);
  const sub = await fetchJson(page, alice.token);
  await page.goto(`/clusters/${cluster.id}/subscribers`);
  await page.getByRole("link", { name: "alice", exact: true }).click();
  await page.getByRole("tab", { name: "Explanation" }).click();
  await expect(page.getByRole("heading", { name: "What alice's app gets right now" })).toBeVisible();
  for (const r of sub.routes) {
    const block = page.getByRole("listitem", { name: `Route ${r.route}` });
    await expect(block.getByTestId("chosen-inbound")).toContainText(r.inbound);
    await expect(block.getByRole("row")).not.toHaveCount(0);
  }
  // The demo fleet has no agent yet: every server waits for its first check, so each route
  // is in panic and the page says so.
  await expect(page.getByText("Panic: nothing available").first()).toBeVisible();
  await expect(page.getByText(/^panic \(server-down\): .* free per user/).first()).toBeVisible();
});
