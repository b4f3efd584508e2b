/** The owner's Team page: add a viewer, who can look but not change; remove them again. */
import { test, expect } from "./fixtures";
import { login, trpcQuery, TrpcCallError } from "./api";

test("the owner adds a viewer and removes them; the removed viewer is logged out at once", async ({ page, browser }, testInfo) => {
  const username = `viewer-${Math.random().toString(36).slice(2, 8)}`;
  await page.goto("/clusters");
  await page.getByRole("link", { name: "Team" }).click();
  await expect(page.getByRole("heading", { name: "Team" })).toBeVisible();

  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill("short");
  await page.getByRole("button", { name: "Add operator" }).click();
  await expect(page.getByText("Password must be at least 8 characters")).toBeVisible();
  await page.getByLabel("Password").fill("viewer-password");
  await page.getByRole("button", { name: "Add operator" }).click();
  const row = page.getByRole("row", { name: new RegExp(username) });
  await expect(row).toContainText("Viewer: sees everything, changes nothing");

  const viewer = await browser.newContext({ baseURL: testInfo.project.use.baseURL });
  try {
    await login(viewer.request, username, "viewer-password");
    expect((await trpcQuery<unknown[]>(viewer.request, "clusters.list")).length).toBeGreaterThan(0);

    await row.getByRole("button", { name: `Remove ${username}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Remove" }).click();
    await expect(page.getByRole("row", { name: new RegExp(username) })).toHaveCount(0);
    const after = await trpcQuery(viewer.request, "clusters.list").catch((e: unknown) => e);
    expect((after as TrpcCallError).status).toBe(401);
  } finally {
    await viewer.close();
  }
});
