/** Servers, inbounds, subscribers, audit log and cluster rename, through the dashboard. */
import { editServer, openNewInboundForm, test, expect } from "./fixtures";
import { trpcQuery } from "../scripts/harness/trpc";

interface ServerRow {
  id: string;
  name: string;
  inbounds: Array<{ id: string; name: string; port: number; routeId: string | null; isFallback: boolean }>;
}
const serverList = (page: import("@playwright/test").Page, clusterId: string) => trpcQuery<ServerRow[]>(page.request, "servers.list", { clusterId });

test("@pg adding a server shows its agent token once", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}/servers`);
  await expect(page.getByRole("link", { name: "Servers & inbounds" })).toHaveAttribute("aria-current", "page");
  await page.getByRole("button", { name: "Add server" }).click();
  const form = page.getByRole("dialog", { name: "Add server" });
  await form.getByLabel("Name").fill("fi-hel-1");
  await form.getByLabel("Public address").fill("bad host");
  await form.getByLabel("Coefficient").fill("100.1");
  await form.getByRole("button", { name: "Add server" }).click();
  await expect(form.getByText("Address must be a hostname or an IP address")).toBeVisible();
  await expect(form.getByText("Coefficient must be between 0.1 and 100")).toBeVisible();

  await form.getByLabel("Public address").fill("localhost");
  await form.getByLabel("Role").selectOption("both");
  await form.getByLabel("Coefficient").fill("2");
  await form.getByLabel("Link capacity (Mbit/s, optional)").fill("1000");
  await form.getByRole("button", { name: "Add server" }).click();

  const tokenDialog = page.getByRole("dialog", { name: "Agent token for fi-hel-1" });
  await expect(tokenDialog).toContainText("This token is shown only once.");
  const token = (await tokenDialog.getByTestId("agent-token").textContent())!.trim();
  expect(token).toMatch(/^rba_[A-Za-z0-9_-]{32}$/);
  const origin = new URL(page.url()).origin;
  // The suite runs without PUBLIC_URL: the page's origin stands in, and the dialog says so.
  await expect(tokenDialog.getByTestId("agent-public-url-warning")).toContainText("PUBLIC_URL is not set");
  const command = tokenDialog.getByTestId("agent-command");
  await expect(command).toHaveText(
    `curl -fsSL ${origin}/agent/routeboard-agent.mjs -o /usr/local/lib/routeboard-agent.mjs && ROUTEBOARD_URL=${origin} ROUTEBOARD_AGENT_TOKEN=${token} node /usr/local/lib/routeboard-agent.mjs --core xray`,
  );
  const unit = tokenDialog.getByTestId("agent-systemd-unit");
  await expect(unit).toBeVisible();
  await expect(unit).toContainText(`Environment=ROUTEBOARD_AGENT_TOKEN=${token}`);
  await expect(unit).toContainText(`Environment=ROUTEBOARD_URL=${origin}`);
  await expect(unit).toContainText("Restart=always");
  await expect(unit).toContainText("StateDirectory=routeboard-agent");
  // What the command downloads is really there: the bundle `npm run build` made.
  const bundle = await page.request.get(`${origin}/agent/routeboard-agent.mjs`);
  expect(bundle.status()).toBe(200);
  expect(bundle.headers()["content-type"]).toBe("text/javascript; charset=utf-8");
  expect((await bundle.text()).startsWith("#!/usr/bin/env node\n")).toBe(true);
  // The dialog names the status the server then shows (its agent has not reported yet).
  await expect(tokenDialog).toContainText("until its first report the server shows “Waiting for first check”");
  await page.screenshot({ path: "test-results/servers-token.png" });
  await tokenDialog.getByRole("button", { name: "I’ve saved it" }).click();

  const section = page.getByRole("region", { name: "Server fi-hel-1" });
  await expect(section).toContainText("Waiting for first check");
  await expect(section).toContainText("localhost");
  await expect(section).toContainText("1,000 Mbit/s");

  await page.reload();
  await expect(page.getByRole("region", { name: "Server fi-hel-1" })).toBeVisible();
  expect(await page.content()).not.toContain(token);

  // Rotating shows a new token, once.
  await page.getByRole("button", { name: "Rotate agent token of fi-hel-1" }).click();
  await page.getByRole("dialog", { name: "Rotate the agent token of fi-hel-1?" }).getByRole("button", { name: "Rotate token" }).click();
  const rotated = page.getByRole("dialog", { name: "Agent token for fi-hel-1" });
  const token2 = (await rotated.getByTestId("agent-token").textContent())!.trim();
  expect(token2).toMatch(/^rba_/);
  expect(token2).not.toBe(token);
});

test("inbounds: a port in use is refused next to the port field; create, edit, fallback", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}/servers`);
  const fra = page.getByRole("region", { name: "Server de-fra-1" });
  const form = await openNewInboundForm(page, "de-fra-1");
  await form.getByLabel("Name").fill("🇩🇪 Frankfurt 2");
  await form.getByLabel("Port").fill("443");
  await form.getByLabel("Masquerade SNI").fill("www.samsung.com");
  await form.getByRole("button", { name: "Create inbound" }).click();
  const portField = form.getByLabel("Port");
  await expect(portField).toHaveAttribute("aria-invalid", "true");
  const describedBy = await portField.getAttribute("aria-describedby");
  await expect(page.locator(`[id="${describedBy}"]`)).toHaveText("Port 443 is already used on de-fra-1 (by 🇩🇪 Frankfurt)");
  await page.screenshot({ path: "test-results/inbound-port-in-use.png" });
  expect((await serverList(page, cluster.id)).find((s) => s.name === "de-fra-1")!.inbounds).toHaveLength(3);

  await form.getByLabel("Port").fill("0");
  await form.getByRole("button", { name: "Create inbound" }).click();
  await expect(form.getByText("Port must be between 1 and 65535")).toBeVisible();
  await form.getByLabel("Port").fill("10443");
  await form.getByRole("button", { name: "Create inbound" }).click();
  await expect(form).toBeHidden();
  await expect(fra.getByRole("row", { name: /🇩🇪 Frankfurt 2/ })).toContainText("Unassigned");

  await fra.getByRole("button", { name: "Edit inbound 🇩🇪 Frankfurt 2" }).click();
  const edit = page.getByRole("dialog", { name: "Edit inbound 🇩🇪 Frankfurt 2" });
  await edit.getByLabel("Security").selectOption("tls");
  await edit.getByLabel("Certificate file").fill("/etc/ssl/fra2.pem");
  await edit.getByLabel("Key file").fill("/etc/ssl/private/fra2.key");
  await edit.getByLabel("Port").fill("10444");
  await edit.getByRole("button", { name: "Save inbound" }).click();
  await expect(edit).toBeHidden();
  await expect(fra.getByRole("row", { name: /🇩🇪 Frankfurt 2/ })).toContainText("10444");

  // One fallback per route.
  await fra.getByRole("button", { name: "Mark 🇩🇪 Frankfurt as fallback" }).click();
  await expect(page.getByRole("status").filter({ hasText: "its route's fallback" })).toContainText("🇩🇪 Frankfurt is now its route's fallback.");
  await page.getByRole("region", { name: "Server de-ber-1" }).getByRole("button", { name: "Mark 🇩🇪 Berlin as fallback" }).click();
  await expect(page.getByRole("alert").filter({ hasText: "already has a fallback" })).toHaveText(
    /^Route 🇩🇪 Germany already has a fallback \(🇩🇪 Frankfurt\): a route can have only one\. Unmark it first\./,
  );
  const servers = await serverList(page, cluster.id);
  expect(servers.flatMap((s) => s.inbounds).filter((i) => i.isFallback).map((i) => i.name)).toEqual(["🇩🇪 Frankfurt"]);

  await fra.getByRole("button", { name: "Delete inbound 🇩🇪 Frankfurt 2" }).click();
  await page.getByRole("dialog", { name: "Delete inbound 🇩🇪 Frankfurt 2?" }).getByRole("button", { name: "Delete inbound" }).click();
  await expect(fra.getByRole("row", { name: /🇩🇪 Frankfurt 2/ })).toHaveCount(0);
  await page.screenshot({ path: "test-results/servers-page.png", fullPage: true });
});

test("deleting a server with inbounds needs the operator's confirmation", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}/servers`);
  await page.getByRole("button", { name: "Delete server nl-ams-1" }).click();
  const dialog = page.getByRole("dialog", { name: "Delete server nl-ams-1?" });
  await expect(dialog).toContainText("nl-ams-1 still has 2 inbounds: 🇳🇱 Amsterdam, 🇳🇱 Amsterdam TLS");
  await dialog.getByRole("button", { name: "Delete server and inbounds" }).click();
  await expect(dialog.getByRole("alert")).toHaveText(
    "nl-ams-1 still has 2 inbounds (🇳🇱 Amsterdam, 🇳🇱 Amsterdam TLS): delete them first, or confirm deleting them with the server",
  );
  expect((await serverList(page, cluster.id)).map((s) => s.name)).toContain("nl-ams-1");
  await dialog.getByLabel("Also delete its 2 inbounds").check();
  await dialog.getByRole("button", { name: "Delete server and inbounds" }).click();
  await expect(dialog).toBeHidden();
  await expect(page.getByRole("region", { name: "Server nl-ams-1" })).toHaveCount(0);
  expect((await serverList(page, cluster.id)).map((s) => s.name)).not.toContain("nl-ams-1");

  // Disable / enable.
  await page.getByRole("button", { name: "Disable server us-dal-1" }).click();
  await expect(page.getByRole("region", { name: "Server us-dal-1" })).toContainText("Disabled by operator");
  await page.getByRole("button", { name: "Enable server us-dal-1" }).click();
  await expect(page.getByRole("region", { name: "Server us-dal-1" })).not.toContainText("Disabled by operator");
});

test("creates a subscriber whose link answers with a subscription", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}/subscribers`);
  await expect(page.getByTestId("subscriber-row")).toHaveCount(5);
  await page.getByRole("button", { name: "New subscriber" }).click();
  const form = page.getByRole("dialog", { name: "New subscriber" });
  await form.getByLabel("Traffic limit in GB (optional)").fill("-3");
  await form.getByRole("button", { name: "Create subscriber" }).click();
  await expect(form.getByText("Name is required")).toBeVisible();
  await expect(form.getByText("Traffic limit must be more than 0 and at most 1,000,000 GB")).toBeVisible();
  await form.getByLabel("Name").fill("Zoë 🇺🇦");
  await form.getByLabel("Expires on (optional)").fill("2035-06-30");
  await form.getByLabel("Traffic limit in GB (optional)").fill("50");
  await form.getByRole("button", { name: "Create subscriber" }).click();

  const linkDialog = page.getByRole("dialog", { name: "Subscription link of Zoë 🇺🇦" });
  await expect(linkDialog.getByRole("img", { name: /QR code/ })).toBeVisible();
  const link = (await linkDialog.getByTestId("subscription-link").textContent())!.trim();
  expect(link).toMatch(new RegExp(`^${new URL(page.url()).origin}/sub/[A-Za-z0-9_-]{24}$`));
  await page.screenshot({ path: "test-results/subscriber-link.png" });
  await linkDialog.getByRole("button", { name: "Done" }).click();

  // As an app fetches it (a browser's User-Agent gets the subscriber's page instead).
  const res = await page.request.get(link, { headers: { "user-agent": "v2rayNG/1.9.36" } });
  expect(res.status()).toBe(200);
  const body = Buffer.from(await res.text(), "base64").toString("utf8");
  expect(body).toMatch(/^vless:\/\//m);

  const row = page.getByRole("row", { name: /Zoë 🇺🇦/ });
  await expect(row).toContainText("Active");
  await expect(row).toContainText("2035-06-30");
  await expect(row).toContainText("/ 50.0 GB");

  await page.getByRole("searchbox", { name: "Search subscribers" }).fill("zoë");
  await expect(page.getByTestId("subscriber-row")).toHaveCount(1);

  await page.getByRole("button", { name: "Disable subscriber Zoë 🇺🇦" }).click();
  await expect(row).toContainText("Disabled");
  await expect.poll(async () => (await page.request.get(link)).status()).toBe(404);

  await page.getByRole("button", { name: "Enable subscriber Zoë 🇺🇦" }).click();
  await page.getByRole("button", { name: "Rotate link of Zoë 🇺🇦" }).click();
  await page.getByRole("dialog", { name: "Rotate the link of Zoë 🇺🇦?" }).getByRole("button", { name: "Rotate link" }).click();
  const newLink = (await page.getByRole("dialog", { name: "Subscription link of Zoë 🇺🇦" }).getByTestId("subscription-link").textContent())!.trim();
  expect(newLink).not.toBe(link);
  await page.getByRole("button", { name: "Done" }).click();
  await expect.poll(async () => (await page.request.get(link)).status()).toBe(404);
  await expect.poll(async () => (await page.request.get(newLink)).status()).toBe(200);

  await page.getByRole("button", { name: "Delete subscriber Zoë 🇺🇦" }).click();
  await page.getByRole("dialog", { name: "Delete subscriber Zoë 🇺🇦?" }).getByRole("button", { name: "Delete subscriber" }).click();
  await expect(page.getByTestId("subscriber-row")).toHaveCount(0);
});

test("the audit log shows who changed what, with before and after", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}/servers`);
  await editServer(page, "us-nyc-1", (form) => form.getByLabel("Coefficient").fill("3"));

  await page.getByRole("link", { name: "Audit log" }).click();
  await expect(page.getByRole("heading", { name: "Audit log" })).toBeVisible();
  const first = page.getByTestId("audit-entry").first();
  await expect(first).toContainText("Edited server us-nyc-1");
  await expect(first).toContainText("admin");
  await first.getByRole("button", { name: "Details" }).click();
  await expect(first).toContainText('"coefficient": 1');
  await expect(first).toContainText('"coefficient": 3');
  await expect(page.getByTestId("audit-entry").last()).toContainText("Created demo cluster");
  await page.screenshot({ path: "test-results/audit.png" });
});

test("renames a cluster from the cluster list", async ({ page, cluster }) => {
  await page.goto("/clusters");
  await page.getByRole("button", { name: `Rename cluster ${cluster.name}` }).click();
  const dialog = page.getByRole("dialog", { name: `Rename cluster ${cluster.name}` });
  const newName = `${cluster.name} renamed`.slice(0, 64);
  await dialog.getByLabel("Name").fill("");
  await dialog.getByRole("button", { name: "Rename" }).click();
  await expect(dialog.getByText("Name is required")).toBeVisible();
  await dialog.getByLabel("Name").fill(newName);
  await dialog.getByRole("button", { name: "Rename" }).click();
  await expect(dialog).toBeHidden();
  await expect(page.getByRole("link", { name: new RegExp(newName) })).toBeVisible();
});
