/**
 * API tokens end to end: the owner creates one on the API tokens page and copies it; a
 * script (a request context without cookies) creates a subscriber with it; the audit page
 * names the token; once revoked in the page, the same request gets 401.
 */
import { test, expect } from "./fixtures";

test("a token created and copied in the page creates a subscriber, is named in the audit log, and stops at 401 once revoked", async ({ page, cluster, request, context }) => {
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  const name = `shop-bot-${Math.random().toString(36).slice(2, 8)}`;
  await page.goto("/clusters");
  await page.getByRole("link", { name: "API tokens" }).click();
  await expect(page.getByRole("heading", { name: "API tokens" })).toBeVisible();

  // Bad input is named next to its field, and nothing is created.
  await page.getByRole("button", { name: "Create token" }).click();
  await expect(page.getByText("Name is required")).toBeVisible();
  await page.getByLabel("Name").fill(name);
  await page.getByRole("checkbox", { name: /^read/ }).uncheck();
  await page.getByRole("button", { name: "Create token" }).click();
  await expect(page.getByText("Choose at least one scope")).toBeVisible();

  await page.getByRole("checkbox", { name: /^read/ }).check();
  await page.getByRole("checkbox", { name: /^subscribers:write/ }).check();
  await expect(page.getByLabel("Expires")).toHaveValue("90");
  await page.getByRole("button", { name: "Create token" }).click();

  const dialog = page.getByRole("dialog", { name: `API token ${name}` });
  await expect(dialog).toContainText("shown only this once");
  const shown = (await dialog.getByTestId("new-api-token").textContent())!;
  expect(shown).toMatch(/^rbt_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
  await dialog.getByRole("button", { name: "Copy token" }).click();
  await expect(dialog.getByRole("button", { name: "Copied" })).toBeVisible();
  const token = await page.evaluate(() => navigator.clipboard.readText());
  expect(token).toBe(shown);
  await dialog.getByRole("button", { name: "Done" }).click();
  await expect(dialog).toHaveCount(0);

  const row = page.getByRole("row", { name: new RegExp(name) });
  await expect(row).toContainText("read");
  await expect(row).toContainText("subscribers:write");
  await expect(row).toContainText("Never used");
  // The secret is nowhere on the page once the dialog is closed.
  await expect(page.getByText(token)).toHaveCount(0);

  const createSubscriber = (subscriber: string) =>
    request.post("/api/trpc/subscribers.create", {
      headers: { authorization: `Bearer ${token}` },
      data: { json: { clusterId: cluster.id, name: subscriber } },
    });
  const created = await createSubscriber("bought-in-shop");
  expect(created.status()).toBe(200);
  expect(((await created.json()) as { result: { data: { json: { name: string } } } }).result.data.json.name).toBe("bought-in-shop");
  // Topology is not in its scopes.
  const refused = await request.post("/api/trpc/clusters.rename", { headers: { authorization: `Bearer ${token}` }, data: { json: { clusterId: cluster.id, name: "renamed" } } });
  expect(refused.status()).toBe(403);
  expect(JSON.stringify(await refused.json())).toContain("needs the topology:write scope");

  await page.goto(`/clusters/${cluster.id}/audit`);
  const entry = page.getByTestId("audit-entry").filter({ hasText: "Added subscriber bought-in-shop" });
  await expect(entry).toContainText(`token:${name}`);

  await page.goto("/tokens");
  await expect(row).not.toContainText("Never used");
  await row.getByRole("button", { name: `Revoke ${name}` }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Revoke" }).click();
  await expect(row).toContainText("Revoked");
  const after = await createSubscriber("after-revoke");
  expect(after.status()).toBe(401);
  expect(JSON.stringify(await after.json())).toContain("This API token was revoked");
});

test("viewers see no API tokens page", async ({ page, browser }, testInfo) => {
  const username = `viewer-${Math.random().toString(36).slice(2, 8)}`;
  await page.request.post("/api/trpc/operators.create", { data: { json: { username, password: "granite-willow-beacon-58", role: "viewer" } } });
  const viewer = await browser.newContext({ baseURL: testInfo.project.use.baseURL });
  try {
    const p = await viewer.newPage();
    await p.request.post("/api/trpc/auth.login", { data: { json: { username, password: "granite-willow-beacon-58" } } });
    await p.goto("/tokens");
    await expect(p.getByText("Only the owner and admins manage API tokens.")).toBeVisible();
    await expect(p.getByRole("link", { name: "API tokens" })).toHaveCount(0);
  } finally {
    await viewer.close();
  }
});
