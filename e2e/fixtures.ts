/**
 * Shared fixtures: `page` is logged in as the e2e admin, and `cluster` is a fresh demo
 * cluster of this test's own (6 servers, 4 routes with "🇯🇵 Japan" empty, 2 unassigned
 * inbounds), so tests running side by side never see each other's changes.
 */
import { test as base, expect, type Browser, type Locator, type Page } from "@playwright/test";
import { E2E_ADMIN } from "../playwright.config";
import { login, trpcMutation, trpcQuery } from "../scripts/harness/trpc";

export interface TestCluster {
  id: string;
  name: string;
}

export const test = base.extend<{ cluster: TestCluster }>({
  page: async ({ page }, use) => {
    await login(page.request, E2E_ADMIN.username, E2E_ADMIN.password);
    await use(page);
  },
  cluster: async ({ page }, use, testInfo) => {
    const name = `e2e ${testInfo.title.slice(0, 30)} ${Math.random().toString(36).slice(2, 8)}`;
    const c = await trpcMutation<TestCluster>(page.request, "clusters.createDemo", { name });
    await use(c);
  },
});

export { expect, E2E_ADMIN };

/**
 * Runs `see` in a browser of its own, signed in as a new viewer operator that the admin's
 * `page` creates; `viewer.request` calls the API as that viewer.
 */
export async function asViewer(page: Page, browser: Browser, see: (viewer: Page) => Promise<void>, viewport?: { width: number; height: number }): Promise<void> {
  const username = `viewer-${Math.random().toString(36).slice(2, 8)}`;
  const password = "viewer-password";
  await trpcMutation(page.request, "operators.create", { username, password, role: "viewer" });
  const ctx = await browser.newContext({ baseURL: test.info().project.use.baseURL, ...(viewport ? { viewport } : {}) });
  try {
    await login(ctx.request, username, password);
    await see(await ctx.newPage());
  } finally {
    await ctx.close();
  }
}

/** Unfolds the diagram's warnings panel: two or more warnings start as one summary line. */
export async function expandWarnings(page: Page) {
  const summary = page.getByRole("region", { name: "Warnings" }).getByTestId("warnings-summary");
  await expect(summary.or(page.locator("#warnings-list"))).not.toHaveCount(0);
  if ((await summary.count()) > 0 && (await summary.getAttribute("aria-expanded")) === "false") await summary.click();
}

/** A pointer drag in many small steps, as a person does it (dnd-kit needs them). */
export async function drag(page: Page, source: Locator, target: Locator) {
  const s = await source.boundingBox();
  const t = await target.boundingBox();
  if (!s || !t) throw new Error("drag source or target is not on screen");
  await page.mouse.move(s.x + s.width / 2, s.y + s.height / 2);
  await page.mouse.down();
  await page.mouse.move(s.x + s.width / 2 + 10, s.y + s.height / 2 + 6, { steps: 3 });
  await page.mouse.move(t.x + t.width / 2, t.y + Math.min(t.height / 2, 40), { steps: 12 });
  await page.mouse.up();
}

/**
 * Edits a server in its form (the servers page is open): opens "Edit server <name>", lets
 * `fill` set fields (and check what the form shows), saves, and waits for the form to close.
 */
export async function editServer(page: Page, server: string, fill: (form: Locator) => Promise<void>): Promise<void> {
  await page.getByRole("button", { name: `Edit server ${server}` }).click();
  const form = page.getByRole("dialog", { name: `Edit server ${server}` });
  await fill(form);
  await form.getByRole("button", { name: "Save server" }).click();
  await expect(form).toBeHidden();
}

/** Opens "+ Inbound" on a server's card (the servers page is open) and returns its dialog. */
export async function openNewInboundForm(page: Page, server: string): Promise<Locator> {
  await page.getByRole("region", { name: `Server ${server}` }).getByRole("button", { name: "+ Inbound" }).click();
  return page.getByRole("dialog", { name: `New inbound on ${server}` });
}

/** The name of the route an inbound is in, per the API (null = unassigned); an inbound the cluster does not have fails the call. */
export async function routeOf(page: Page, cluster: TestCluster, inbound: string): Promise<string | null> {
  const t = await trpcQuery<{ inbounds: Array<{ name: string; routeId: string | null }>; routes: Array<{ id: string; name: string }> }>(page.request, "topology.get", { clusterId: cluster.id });
  const ib = t.inbounds.find((i) => i.name === inbound);
  if (!ib) throw new Error(`no inbound ${inbound}`);
  return t.routes.find((r) => r.id === ib.routeId)?.name ?? null;
}
