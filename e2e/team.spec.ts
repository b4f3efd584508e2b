/** The owner's Team page: add a viewer, who can look but not change; remove them again. */
import { test, expect } from "./fixtures";
import { login, trpcMutation, trpcQuery, TrpcCallError } from "../scripts/harness/trpc";

test("the owner adds a viewer and removes them; the removed viewer is logged out at once", async ({ page, browser }, testInfo) => {
  const username = `viewer-${Math.random().toString(36).slice(2, 8)}`;
  await page.goto("/clusters");
  await page.getByRole("link", { name: "Team" }).click();
  await expect(page.getByRole("heading", { name: "Team" })).toBeVisible();

  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password", { exact: true }).fill("short");
  await page.getByRole("button", { name: "Add operator" }).click();
  await expect(page.getByText("Password must be at least 8 characters")).toBeVisible();
  await page.getByLabel("Password", { exact: true }).fill("viewer-password");
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

test("the owner changes a role and resets a password; weak passwords are refused inline", async ({ page, browser }, testInfo) => {
  const username = `member-${Math.random().toString(36).slice(2, 8)}`;
  await page.goto("/team");
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password", { exact: true }).fill("password123");
  await page.getByRole("button", { name: "Add operator" }).click();
  await expect(page.getByText(/^Password is too easy to guess|common passwords/)).toBeVisible();
  await page.getByLabel("Password", { exact: true }).fill("viewer-password");
  await page.getByRole("button", { name: "Add operator" }).click();
  const row = page.getByRole("row", { name: new RegExp(username) });
  await expect(row).toContainText("Viewer: sees everything, changes nothing");

  const member = await browser.newContext({ baseURL: testInfo.project.use.baseURL });
  try {
    await login(member.request, username, "viewer-password");
    await row.getByLabel(`Role of ${username}`).selectOption("admin");
    await expect(row).toContainText("Admin: changes clusters");
    expect(await trpcQuery(member.request, "auth.me")).toMatchObject({ role: "admin" });

    await row.getByRole("button", { name: `Reset password of ${username}` }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByLabel("New password").fill("password");
    await dialog.getByRole("button", { name: "Reset password" }).click();
    await expect(dialog.getByText("This password is on the list of common passwords: choose another")).toBeVisible();
    await dialog.getByLabel("New password").fill("granite-willow-beacon-58");
    await dialog.getByRole("button", { name: "Reset password" }).click();
    await expect(dialog).toHaveCount(0);
    // The reset logged them out everywhere; the new password works.
    expect(((await trpcQuery(member.request, "auth.me").catch((e: unknown) => e)) as TrpcCallError).status).toBe(401);
    await login(member.request, username, "granite-willow-beacon-58");
  } finally {
    await member.close();
  }

  // The only owner cannot demote themselves.
  const me = page.getByRole("row", { name: /\(you\)/ });
  await me.getByLabel(/^Role of /).selectOption("viewer");
  await expect(page.getByRole("alert").filter({ hasText: "You are the only owner: make someone else owner first" })).toBeVisible();
});

test("an operator changes their own password; their other sessions end, this one stays", async ({ page, browser }, testInfo) => {
  const username = `self-${Math.random().toString(36).slice(2, 8)}`;
  await trpcMutation(page.request, "operators.create", { username, password: "viewer-password", role: "viewer" });
  const laptop = await browser.newContext({ baseURL: testInfo.project.use.baseURL });
  const phone = await browser.newContext({ baseURL: testInfo.project.use.baseURL });
  try {
    await login(laptop.request, username, "viewer-password");
    await login(phone.request, username, "viewer-password");
    const p = await laptop.newPage();
    await p.goto("/clusters");
    await p.getByRole("button", { name: "Change password" }).click();
    const dialog = p.getByRole("dialog");
    await dialog.getByLabel("Current password").fill("not-my-password");
    await dialog.getByLabel("New password", { exact: true }).fill("copper-meadow-quiet-77");
    await dialog.getByLabel("Repeat new password").fill("copper-meadow-quiet-77");
    await dialog.getByRole("button", { name: "Change password" }).click();
    await expect(dialog.getByText("Current password is wrong")).toBeVisible();
    await dialog.getByLabel("Current password").fill("viewer-password");
    await dialog.getByRole("button", { name: "Change password" }).click();
    await expect(p.getByRole("status").filter({ hasText: "other sessions" })).toContainText("Password changed. Your other sessions were logged out.");
    expect(await trpcQuery(laptop.request, "auth.me")).toMatchObject({ username });
    expect(((await trpcQuery(phone.request, "auth.me").catch((e: unknown) => e)) as TrpcCallError).status).toBe(401);
  } finally {
    await laptop.close();
    await phone.close();
  }
});
