/**
 * Subscriptions that fit the app (issue 14, part 3): a browser opening a subscription link
 * sees the subscriber's page, and the operator's link dialog offers the same per-app links
 * and QR codes, with a warning while PUBLIC_URL is unset (this e2e app runs without it).
 */
import { test, expect } from "./fixtures";
import { trpcMutation, trpcQuery } from "../scripts/harness/trpc";

const APPS = ["Clash Verge / Clash Meta / ClashX", "Stash", "sing-box (SFA, SFI, SFM)", "Hiddify", "v2rayNG", "Streisand", "Happ", "Shadowrocket"];

test("a browser opening /sub/<token> gets the subscriber's page: usage, app links and QR codes", async ({ page, cluster }) => {
  const subs = await trpcQuery<Array<{ name: string; token: string }>>(page.request, "subscribers.list", { clusterId: cluster.id });
  const alice = subs.find((s) => s.name === "alice")!;
  const blocked: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") blocked.push(m.text());
  });
  const res = await page.goto(`/sub/${alice.token}`);
  expect(res!.status()).toBe(200);
  expect(res!.headers()["content-type"]).toBe("text/html; charset=utf-8");
  expect(res!.headers()["vary"]).toBe("User-Agent, Accept-Language");
  expect(res!.headers()["content-security-policy"]).toContain("default-src 'none'");

  // No brand set: a neutral title, and neither the cluster's nor the subscriber's internal name.
  await expect(page.getByRole("heading", { level: 1, name: "VPN" })).toBeVisible();
  await expect(page.getByText(cluster.name)).toHaveCount(0);
  await expect(page.getByText("Subscription of alice")).toHaveCount(0);
  await expect(page.getByTestId("usage")).toContainText(/upload .*, download /);
  await expect(page.getByTestId("limit")).toBeVisible();
  await expect(page.getByTestId("expiry")).toBeVisible();
  const url = new URL(`/sub/${alice.token}`, page.url()).href;
  await expect(page.getByTestId("subscription-url")).toHaveText(url);
  await expect(page.getByRole("img", { name: "QR code of the subscription URL" })).toBeVisible();
  for (const app of APPS) {
    await expect(page.getByRole("img", { name: `QR code for ${app}` })).toBeVisible();
  }
  await expect(page.getByRole("link", { name: "Add to Hiddify" })).toHaveAttribute("href", new RegExp(`^hiddify://import/${url.replace(/[.?]/g, "\\$&")}#`));
  await expect(page.getByRole("link", { name: "Add to Clash Verge / Clash Meta / ClashX" })).toHaveAttribute("href", `clash://install-config?url=${encodeURIComponent(`${url}?format=clash`)}&name=VPN`);
  await expect(page.getByRole("link", { name: "Add to sing-box" })).toHaveAttribute("href", /^sing-box:\/\/import-remote-profile\?url=/);
  await expect(page.getByRole("link", { name: "Add to v2rayNG" })).toHaveAttribute("href", /^v2rayng:\/\/install-sub\?url=/);
  // One share link per non-empty route, each with its QR code behind a disclosure.
  await expect(page.getByTestId("share-link")).toHaveCount(3);
  await page.locator("details summary").first().click();
  await expect(page.getByTestId("share-link").first()).toHaveText(/^vless:\/\//);
  await page.screenshot({ path: "test-results/subscriber-page.png", fullPage: true });
  expect(blocked).toEqual([]);

  // The same URL asked by an app gets that app's format.
  const clash = await page.request.get(`/sub/${alice.token}`, { headers: { "user-agent": "clash-verge/v2.0.3" } });
  expect(await clash.text()).toContain("proxy-groups:");
  const plain = await page.request.get(`/sub/${alice.token}`, { headers: { "user-agent": "v2rayNG/1.9.36" } });
  expect(Buffer.from(await plain.text(), "base64").toString("utf8")).toMatch(/^vless:\/\//);
});

test("the operator's link dialog offers every app's link and QR code, and warns while PUBLIC_URL is unset", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}/subscribers`);
  await page.getByRole("button", { name: "Show link of alice" }).click();
  const dialog = page.getByRole("dialog", { name: "Subscription link of alice" });
  await expect(dialog.getByTestId("public-url-warning")).toContainText("PUBLIC_URL is not set");
  const link = (await dialog.getByTestId("subscription-link").textContent())!.trim();
  expect(link).toMatch(new RegExp(`^${new URL(page.url()).origin}/sub/[A-Za-z0-9_-]+$`));
  await expect(dialog.getByRole("img", { name: "QR code: Subscription URL (alice)" })).toBeVisible();
  for (const app of APPS) await expect(dialog.getByRole("link", { name: `Add to ${app}` })).toBeVisible();
  await expect(dialog.getByRole("link", { name: "Add to Hiddify" })).toHaveAttribute("href", `hiddify://import/${link}#VPN`);
  await expect(dialog.getByRole("link", { name: "Add to v2rayNG" })).toHaveAttribute("href", `v2rayng://install-sub?url=${encodeURIComponent(link)}&name=VPN`);
  await dialog.getByRole("button", { name: "QR code for Hiddify" }).click();
  await expect(dialog.getByRole("img", { name: "QR code: Hiddify (alice)" })).toBeVisible();
  await page.screenshot({ path: "test-results/link-dialog-apps.png" });

  // The page the subscriber opens has the very same deep links (one module builds both).
  const hrefs = await dialog.getByRole("link", { name: /^Add to / }).evaluateAll((as) => as.map((a) => a.getAttribute("href")));
  await page.goto(link);
  const pageHrefs = await page.getByRole("link", { name: /^Add to / }).evaluateAll((as) => as.map((a) => a.getAttribute("href")));
  expect(pageHrefs).toEqual(hrefs);
});

test("an expired subscriber's page and apps say so with one entry; a disabled one is 404", async ({ page, cluster }) => {
  // An expiry in the past is refused: Eve's runs out two seconds after she is created.
  const expiresAt = new Date(Date.now() + 2000);
  const expired = await trpcMutation<{ id: string; token: string }>(page.request, "subscribers.create", { clusterId: cluster.id, name: "Expired Eve", expiresAt: expiresAt.toISOString(), trafficLimitGb: null });
  const day = `${expiresAt.getUTCDate()} ${["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][expiresAt.getUTCMonth()]} ${expiresAt.getUTCFullYear()}`;
  const message = `⛔ Subscription expired on ${day} — contact your provider to renew`;
  const inbounds = async () => {
    const r = await page.request.get(`/sub/${expired.token}?format=json`);
    return r.status() === 200 ? ((await r.json()) as { routes: Array<{ inbound: string }> }).routes.map((x) => x.inbound) : [];
  };
  await expect.poll(inbounds, { timeout: 60_000 }).toEqual([message]);
  const json = (await (await page.request.get(`/sub/${expired.token}?format=json`)).json()) as { routes: Array<{ inbound: string; link: string }> };
  expect(json.routes[0]!.link).toMatch(/^vless:\/\/00000000-0000-0000-0000-000000000000@127\.0\.0\.1:1\?/);
  await page.goto(`/sub/${expired.token}`);
  await expect(page.getByRole("alert")).toHaveText(message);
  await expect(page.getByTestId("expiry")).toHaveText(day);

  await trpcMutation(page.request, "subscribers.setEnabled", { subscriberId: expired.id, enabled: false });
  await expect.poll(async () => (await page.request.get(`/sub/${expired.token}`)).status()).toBe(404);
  expect(await (await page.request.get(`/sub/${expired.token}`)).text()).toBe(await (await page.request.get("/sub/no-such-token-at-all")).text());
});
