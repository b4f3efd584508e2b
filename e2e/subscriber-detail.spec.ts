/**
 * The subscribers table and a subscriber's own page (issue 25, point 6), and device limits
 * (issue 27, point 3), in the browser: compact rows with every action on screen at 1440 px; the
 * page's tabs (usage history from real agent reports, links and QR, edit, the explanation);
 * devices listed after /sub fetches with x-hwid, the one entry a device over the limit gets,
 * removal, and the cluster's rule for apps that send no device id.
 */
import { asViewer, test, expect } from "./fixtures";
import { healthyReport, postAgentReport } from "./agent-report";
import { TrpcCallError, trpcMutation, trpcQuery } from "../scripts/harness/trpc";
import type { APIRequestContext } from "@playwright/test";

const MB = 1024 ** 2;

interface Sub {
  id: string;
  name: string;
  token: string;
}

async function subscriber(request: APIRequestContext, clusterId: string, name: string): Promise<Sub> {
  return (await trpcQuery<Sub[]>(request, "subscribers.list", { clusterId })).find((s) => s.name === name)!;
}

/** The inbound names a fetch of the subscription lists (?format=json), sent with these headers. */
async function inbounds(request: APIRequestContext, token: string, headers: Record<string, string> = {}): Promise<string[]> {
  const res = await request.get(`/sub/${token}?format=json`, { headers });
  expect(res.status()).toBe(200);
  return ((await res.json()) as { routes: Array<{ inbound: string }> }).routes.map((r) => r.inbound);
}

test("at 1440 px the subscribers table fits: rows at most 48 px tall, every Delete button on screen", async ({ page, cluster }) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  // A row with everything a row can show: a limit, a reset schedule, a long name, route choices.
  await trpcMutation(page.request, "subscribers.create", {
    clusterId: cluster.id,
    name: "Wide Wilhelmina Longname-Example",
    trafficLimitGb: 50,
    trafficResetStrategy: "monthly",
    trafficResetDay: 31,
    deviceLimit: 3,
  });
  for (const name of ["alice", "bob", "Wide Wilhelmina Longname-Example"]) await inbounds(page.request, (await subscriber(page.request, cluster.id, name)).token);
  await page.goto(`/clusters/${cluster.id}/subscribers`);
  const rows = page.getByTestId("subscriber-row");
  await expect(rows.filter({ hasText: "Wide Wilhelmina" }).getByTestId("subscriber-routes").getByRole("listitem").first()).toBeVisible();
  await expect(rows.filter({ hasText: "alice" }).getByTestId("subscriber-routes").getByRole("listitem").first()).toBeVisible();
  const count = await rows.count();
  expect(count).toBeGreaterThanOrEqual(4);
  for (let i = 0; i < count; i++) {
    const row = rows.nth(i);
    const box = (await row.boundingBox())!;
    expect(box.height, `row ${i} height`).toBeLessThanOrEqual(48);
    const del = row.getByRole("button", { name: /^Delete subscriber / });
    const b = (await del.boundingBox())!;
    expect(b.x).toBeGreaterThanOrEqual(0);
    expect(b.x + b.width, `row ${i} Delete right edge`).toBeLessThanOrEqual(1440);
  }
  // Nothing scrolls sideways: not the page, not the table's frame.
  expect(await page.evaluate(() => document.scrollingElement!.scrollWidth)).toBeLessThanOrEqual(1440);
  const frame = page.locator("div:has(> table)").filter({ has: rows.first() });
  expect(await frame.evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0);
  // Four subscribers were about 520 px before; 900 px now shows far more than four rows.
  await page.screenshot({ path: "test-results/subscribers-compact-1440.png" });

  // The schedule that no longer takes a line is the ↻'s tooltip, and read out to screen readers.
  await expect(rows.filter({ hasText: "Wide Wilhelmina" }).getByTestId("subscriber-reset")).toHaveText(/^Resets monthly on day 31 · next /);
});

test("a subscriber's page: usage history from agent reports with a range, links and QR, edit, and the explanation as tabs", async ({ page, cluster }) => {
  const servers: Record<string, { id: string; agentToken: string }> = {};
  for (const name of ["hist-a", "hist-b"]) {
    servers[name] = await trpcMutation(page.request, "servers.create", { clusterId: cluster.id, name, address: "127.0.0.1", role: "node", coefficient: 1, capacityMbps: null });
  }
  const hana = await trpcMutation<{ id: string; token: string }>(page.request, "subscribers.create", { clusterId: cluster.id, name: "Hist Hana", trafficLimitGb: 10 });
  const report = (instance: string, up: number, down: number) => healthyReport({ instance, seq: 1, users: [{ email: hana.id, up, down }] });
  // Through the agents' own endpoint: 3 MB on A, 1 MB on B.
  expect((await postAgentReport(page.request, servers["hist-a"]!.agentToken, report("e2e-hist-a", 1 * MB, 2 * MB))).status()).toBe(200);
  expect((await postAgentReport(page.request, servers["hist-b"]!.agentToken, report("e2e-hist-b", 0, 1 * MB))).status()).toBe(200);

  // From the list, the name opens the page on its Usage tab.
  await page.goto(`/clusters/${cluster.id}/subscribers`);
  await page.getByTestId("subscriber-row").filter({ hasText: "Hist Hana" }).getByRole("link", { name: "Hist Hana" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Hist Hana" })).toBeVisible();
  const tabs = page.getByRole("tablist", { name: "Subscriber pages" });
  await expect(tabs.getByRole("tab")).toHaveText(["Usage", "Links & QR", "Devices", "Edit", "Explanation"]);
  await expect(tabs.getByRole("tab", { name: "Usage" })).toHaveAttribute("aria-selected", "true");

  const history = page.getByRole("region", { name: "Usage history" });
  await expect(history.getByRole("row", { name: "History on hist-a" }).getByTestId("history-server-total")).toHaveText("3.0 MB", { timeout: 60_000 });
  await expect(history.getByRole("row", { name: "History on hist-b" }).getByTestId("history-server-total")).toHaveText("1.0 MB");
  const today = new Date().toISOString().slice(0, 10);
  await expect(history.getByRole("row", { name: `Usage on ${today}` }).getByTestId("history-day-total")).toHaveText("4.0 MB");
  await expect(history.getByRole("listitem", { name: new RegExp(`^${today}: 4\\.0 MB \\(hist-a 3\\.0 MB, hist-b 1\\.0 MB\\)$`) })).toBeVisible();
  await expect(history.getByRole("list", { name: "Usage per day" }).getByRole("listitem")).toHaveCount(30);
  // The range selector: 7 days, then 90.
  await history.getByRole("radio", { name: "7 days" }).click();
  await expect(history.getByRole("radio", { name: "7 days" })).toHaveAttribute("aria-checked", "true");
  await expect(history.getByRole("list", { name: "Usage per day" }).getByRole("listitem")).toHaveCount(7);
  await expect(history.getByTestId("usage-history-total")).toHaveText("4.0 MB in the last 7 days.");
  await history.getByRole("radio", { name: "90 days" }).click();
  await expect(history.getByRole("list", { name: "Usage per day" }).getByRole("listitem")).toHaveCount(90);
  await page.screenshot({ path: "test-results/subscriber-page-usage.png", fullPage: true });

  // Links & QR: the link and its QR code, as an image; the address names the tab.
  await tabs.getByRole("tab", { name: "Links & QR" }).click();
  await expect(page).toHaveURL(/\?tab=links$/);
  const link = new URL(`/sub/${hana.token}`, page.url()).href;
  await expect(page.getByTestId("subscription-link")).toHaveText(link);
  const qr = page.getByRole("img", { name: "QR code: Subscription URL (Hist Hana)" });
  await expect(qr).toBeVisible();
  expect(await qr.getAttribute("src")).toMatch(/^data:image\/png;base64,/);
  await page.getByRole("button", { name: "QR code for Happ" }).click();
  await expect(page.getByRole("img", { name: "QR code: Happ (Hist Hana)" })).toBeVisible();

  // Edit: a bad device limit names the field; a good one saves, and the header says so.
  await tabs.getByRole("tab", { name: "Edit" }).click();
  const form = page.getByRole("form", { name: "Edit subscriber Hist Hana" });
  await form.getByLabel("Device limit (optional)").fill("0");
  await form.getByRole("button", { name: "Save subscriber" }).click();
  await expect(form.getByText("Device limit must be between 1 and 32")).toBeVisible();
  await form.getByLabel("Name").fill("Hist Hanna");
  await form.getByLabel("Device limit (optional)").fill("2");
  await form.getByRole("button", { name: "Save subscriber" }).click();
  // The form is named after the subscriber, renamed now: its tab panel holds it.
  await expect(page.getByRole("tabpanel").getByRole("status")).toHaveText("Saved");
  await expect(page.getByRole("heading", { level: 1, name: "Hist Hanna" })).toBeVisible();
  await expect(page.getByTestId("subscriber-device-limit")).toHaveText("at most 2");
  expect((await trpcQuery<{ name: string; deviceLimit: number | null }>(page.request, "subscribers.get", { subscriberId: hana.id })).deviceLimit).toBe(2);

  // The explanation is one tab among them; a reload keeps the tab.
  await tabs.getByRole("tab", { name: "Explanation" }).click();
  await expect(page.getByRole("heading", { name: "What Hist Hanna's app gets right now" })).toBeVisible();
  await page.reload();
  await expect(page.getByRole("tab", { name: "Explanation" })).toHaveAttribute("aria-selected", "true");
  await expect(page.getByTestId("chosen-inbound").first()).toBeVisible();
  // Arrow keys move along the tabs.
  await page.getByRole("tab", { name: "Explanation" }).focus();
  await page.keyboard.press("ArrowLeft");
  await expect(page.getByRole("tab", { name: "Edit" })).toHaveAttribute("aria-selected", "true");
});

test("@pg device limits: devices listed after fetches with x-hwid, a device over the limit gets one entry, removing one frees its place", async ({ page, cluster }) => {
  const dora = await trpcMutation<{ id: string; token: string }>(page.request, "subscribers.create", { clusterId: cluster.id, name: "Dev Dora", deviceLimit: 1 });
  const phone = { "x-hwid": "e2e-phone-0001", "x-device-os": "Android", "x-ver-os": "14", "x-device-model": "Pixel 8", "user-agent": "Happ/3.5.0/Android" };
  const tablet = { "x-hwid": "e2e-tablet-0002", "x-device-os": "iPadOS", "x-ver-os": "17.4", "x-device-model": "iPad14,1", "user-agent": "v2rayTun/4.1" };
  expect(await inbounds(page.request, dora.token, phone)).toHaveLength(3);
  // The second device is over the limit of 1: one entry saying so, like an expired subscriber.
  expect(await inbounds(page.request, dora.token, tablet)).toEqual(["⛔ Device limit reached (1) — remove a device or contact your provider"]);
  expect(await inbounds(page.request, dora.token, phone)).toHaveLength(3);

  await page.goto(`/clusters/${cluster.id}/subscribers/${dora.id}?tab=devices`);
  await expect(page.getByRole("tab", { name: "Devices" })).toHaveAttribute("aria-selected", "true");
  const devices = page.getByRole("table", { name: "Devices of Dev Dora" });
  await expect(devices.getByTestId("device-row")).toHaveCount(1);
  const row = devices.getByRole("row", { name: "Device Pixel 8 · Android 14" });
  await expect(row.getByTestId("device-hwid")).toHaveText("e2e-phone-0001");
  await expect(row.getByTestId("device-first-seen")).toHaveText(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
  await expect(row.getByTestId("device-last-seen")).toHaveText("just now");
  await page.screenshot({ path: "test-results/subscriber-devices.png", fullPage: true });

  // Removed (after a confirmation): the tablet takes the free place.
  await row.getByRole("button", { name: "Remove device Pixel 8 · Android 14" }).click();
  const confirm = page.getByRole("dialog", { name: "Remove device Pixel 8 · Android 14?" });
  await confirm.getByRole("button", { name: "Remove device" }).click();
  await expect(confirm).toBeHidden();
  await expect(devices).toBeHidden();
  await expect(page.getByText("No device has fetched the subscription with a device id yet.")).toBeVisible();
  expect(await inbounds(page.request, dora.token, tablet)).toHaveLength(3);
  await expect(page.getByRole("table", { name: "Devices of Dev Dora" }).getByRole("row", { name: "Device iPad14,1 · iPadOS 17.4" })).toBeVisible();
  expect(await inbounds(page.request, dora.token, phone)).toEqual(["⛔ Device limit reached (1) — remove a device or contact your provider"]);
  const audit = await trpcQuery<{ items: Array<{ action: string; summary: string }> }>(page.request, "audit.list", { clusterId: cluster.id });
  expect(audit.items.map((a) => a.summary)).toContain("Removed device Pixel 8 · Android 14 of Dev Dora");

  // Apps that send no device id: served by default; refused once the cluster says so, and only
  // for subscribers with a limit.
  expect(await inbounds(page.request, dora.token)).toHaveLength(3);
  await page.getByLabel("Apps that send no device id (whole cluster)").selectOption("refuse");
  await expect(page.getByRole("status").filter({ hasText: "Saved" })).toBeVisible();
  await expect.poll(() => inbounds(page.request, dora.token)).toEqual(["⛔ This app sends no device id — use an app that does, or contact your provider"]);
  const alice = await subscriber(page.request, cluster.id, "alice");
  expect(await inbounds(page.request, alice.token)).toHaveLength(3);
  await page.getByLabel("Apps that send no device id (whole cluster)").selectOption("allow");
  await expect.poll(() => inbounds(page.request, dora.token)).toHaveLength(3);
});

test("a viewer sees a subscriber's devices and usage but can remove nothing, change no rule and edit nothing", async ({ page, browser, cluster }) => {
  const dora = await trpcMutation<{ id: string; token: string }>(page.request, "subscribers.create", { clusterId: cluster.id, name: "View Vida", deviceLimit: 2 });
  expect(await inbounds(page.request, dora.token, { "x-hwid": "e2e-viewer-seen", "x-device-model": "Galaxy S24", "x-device-os": "Android", "x-ver-os": "15" })).toHaveLength(3);
  await asViewer(page, browser, async (viewer) => {
    await viewer.goto(`/clusters/${cluster.id}/subscribers/${dora.id}?tab=devices`);
    const row = viewer.getByRole("row", { name: "Device Galaxy S24 · Android 15" });
    await expect(row.getByTestId("device-hwid")).toHaveText("e2e-viewer-seen");
    await expect(viewer.getByRole("button", { name: /^Remove device / })).toHaveCount(0);
    await expect(viewer.getByLabel("Apps that send no device id (whole cluster)")).toBeDisabled();
    await viewer.getByRole("tab", { name: "Edit" }).click();
    await expect(viewer.getByText("Viewers cannot change subscribers: ask an admin.")).toBeVisible();
    await viewer.getByRole("tab", { name: "Links & QR" }).click();
    await expect(viewer.getByText("Only admins and the owner see subscription links.")).toBeVisible();
    // The API refuses what the page does not offer.
    const devices = await trpcQuery<{ devices: Array<{ id: string }> }>(viewer.request, "subscribers.devices", { subscriberId: dora.id });
    const refused = await trpcMutation(viewer.request, "subscribers.removeDevice", { subscriberId: dora.id, deviceId: devices.devices[0]!.id }).catch((e: TrpcCallError) => e);
    expect(refused).toBeInstanceOf(TrpcCallError);
    expect((refused as TrpcCallError).status).toBe(403);
    expect((await trpcQuery<{ devices: unknown[] }>(page.request, "subscribers.devices", { subscriberId: dora.id })).devices).toHaveLength(1);
  });
});
