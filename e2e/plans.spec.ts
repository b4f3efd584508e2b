/**
 * Plans (issue 27 point 2) in a real browser: a plan made in the Plans section gives its
 * subscribers only its routes in /sub; the bulk bar moves subscribers to another plan and their
 * next fetch follows; the default plan is what a new subscriber gets.
 */
import type { APIRequestContext, Page } from "@playwright/test";
import { trpcMutation, trpcQuery } from "../scripts/harness/trpc";
import { asViewer, expect, test, type TestCluster } from "./fixtures";

/** The route names a subscriber's app gets now (the JSON format of /sub). */
async function subRoutes(request: APIRequestContext, token: string): Promise<string[]> {
  const res = await request.get(`/sub/${token}?format=json`);
  expect(res.status()).toBe(200);
  return ((await res.json()) as { routes: Array<{ route: string }> }).routes.map((r) => r.route);
}

async function tokenOf(page: Page, cluster: TestCluster, name: string): Promise<string> {
  const found = await trpcQuery<{ items: Array<{ name: string; token: string }> }>(page.request, "subscribers.page", { clusterId: cluster.id, search: name });
  return found.items.find((s) => s.name === name)!.token;
}

async function createPlan(page: Page, name: string, route: string) {
  await page.getByRole("button", { name: "New plan" }).click();
  const form = page.getByRole("dialog", { name: "New plan" });
  await form.getByLabel("Name").fill(name);
  await form.getByRole("checkbox", { name: route }).check();
  return form;
}

test("a plan gives only its routes; bulk Change plan moves subscribers at their next fetch; the default plan applies to new subscribers", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}/subscribers`);
  const plans = page.getByRole("list", { name: "Plans" });
  // Every cluster starts on its "All routes" plan, the default, with every subscriber on it.
  await expect(plans.getByRole("listitem", { name: "Plan All routes" })).toContainText("Default");
  await expect(plans.getByRole("listitem", { name: "Plan All routes" }).getByTestId("plan-subscribers")).toHaveText("5 subscribers");

  // A plan with one route and defaults; a bad expiry length is named and nothing is saved.
  let form = await createPlan(page, "USA only", "🇺🇸 USA");
  await form.getByLabel("Traffic limit in GB (optional)").fill("5");
  await form.getByLabel("Expires after (days, optional)").fill("0");
  await form.getByRole("button", { name: "Create plan" }).click();
  await expect(form.getByText("Expiry length must be between 1 and 3650 days")).toBeVisible();
  await form.getByLabel("Expires after (days, optional)").fill("30");
  await form.getByRole("button", { name: "Create plan" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Saved plan USA only" })).toBeVisible();
  await expect(plans.getByRole("listitem", { name: "Plan USA only" })).toContainText("🇺🇸 USA");
  await expect(plans.getByRole("listitem", { name: "Plan USA only" })).toContainText("5 GB · expires after 30 days");

  // A subscriber created on it: the form takes the plan's defaults; /sub lists only USA.
  await page.getByRole("button", { name: "New subscriber" }).click();
  const sub = page.getByRole("dialog", { name: "New subscriber" });
  await expect(sub.getByLabel("Plan")).toHaveValue(/.+/);
  await sub.getByLabel("Plan").selectOption({ label: "USA only" });
  await expect(sub.getByLabel("Traffic limit in GB (optional)")).toHaveValue("5");
  await sub.getByLabel("Name").fill("on-usa");
  await sub.getByRole("button", { name: "Create subscriber" }).click();
  await page.getByRole("dialog", { name: "Subscription link of on-usa" }).getByRole("button", { name: "Done" }).click();
  await expect(page.getByRole("row", { name: /on-usa/ }).getByTestId("subscriber-plan")).toHaveText("USA only");
  expect(await subRoutes(page.request, await tokenOf(page, cluster, "on-usa"))).toEqual(["🇺🇸 USA"]);

  // A second plan, then bulk: alice and bob move to it; their next fetch lists only Germany.
  form = await createPlan(page, "Germany only", "🇩🇪 Germany");
  await form.getByRole("button", { name: "Create plan" }).click();
  await expect(plans.getByRole("listitem", { name: "Plan Germany only" })).toBeVisible();
  const alice = await tokenOf(page, cluster, "alice");
  const bob = await tokenOf(page, cluster, "bob");
  expect(await subRoutes(page.request, alice)).toEqual(["🇺🇸 USA", "🇩🇪 Germany", "🇳🇱 Netherlands"]);
  expect(await subRoutes(page.request, bob)).toEqual(["🇺🇸 USA", "🇩🇪 Germany", "🇳🇱 Netherlands"]);
  await page.getByRole("checkbox", { name: "Select alice" }).check();
  await page.getByRole("checkbox", { name: "Select bob" }).check();
  await page.getByRole("toolbar", { name: "Bulk actions" }).getByRole("button", { name: "Change plan…" }).click();
  const confirm = page.getByRole("dialog", { name: "Change the plan of 2 subscribers?" });
  await confirm.getByRole("button", { name: "Change plan of 2 subscribers" }).click();
  await expect(confirm.getByRole("alert").filter({ hasText: "Choose a plan" })).toBeVisible();
  await confirm.getByLabel("New plan").selectOption({ label: "Germany only" });
  await confirm.getByRole("button", { name: "Change plan of 2 subscribers" }).click();
  await expect(confirm).toBeHidden();
  await expect(page.getByRole("row", { name: /alice/ }).getByTestId("subscriber-plan")).toHaveText("Germany only");
  await expect.poll(() => subRoutes(page.request, alice)).toEqual(["🇩🇪 Germany"]);
  await expect.poll(() => subRoutes(page.request, bob)).toEqual(["🇩🇪 Germany"]);
  await expect(plans.getByRole("listitem", { name: "Plan Germany only" }).getByTestId("plan-subscribers")).toHaveText("2 subscribers");

  // The list filters by plan.
  await page.getByRole("combobox", { name: /^Plan/ }).selectOption({ label: "Germany only" });
  await expect(page.getByTestId("subscriber-row")).toHaveCount(2);
  await page.getByRole("combobox", { name: /^Plan/ }).selectOption({ label: "All" });
  await expect(page.getByTestId("subscriber-row")).toHaveCount(6);

  // USA only becomes the default: a new subscriber gets it (preselected) and its routes.
  await plans.getByRole("button", { name: "Make USA only the default plan" }).click();
  await expect(page.getByRole("status").filter({ hasText: "USA only is now the default plan" })).toBeVisible();
  await expect(plans.getByRole("listitem", { name: "Plan USA only" })).toContainText("Default");
  await page.getByRole("button", { name: "New subscriber" }).click();
  const next = page.getByRole("dialog", { name: "New subscriber" });
  await expect(next.getByLabel("Plan").locator("option:checked")).toHaveText("USA only (default)");
  await next.getByLabel("Name").fill("newbie");
  await next.getByRole("button", { name: "Create subscriber" }).click();
  await page.getByRole("dialog", { name: "Subscription link of newbie" }).getByRole("button", { name: "Done" }).click();
  expect(await subRoutes(page.request, await tokenOf(page, cluster, "newbie"))).toEqual(["🇺🇸 USA"]);

  // Deleting a plan in use moves its subscribers; the default plan offers no Delete.
  await expect(plans.getByRole("button", { name: "Delete plan USA only" })).toHaveCount(0);
  await plans.getByRole("button", { name: "Delete plan Germany only" }).click();
  const del = page.getByRole("dialog", { name: "Delete plan Germany only?" });
  await del.getByLabel("Move its 2 subscribers to").selectOption({ label: "All routes" });
  await del.getByRole("button", { name: "Delete plan" }).click();
  await expect(plans.getByRole("listitem", { name: "Plan Germany only" })).toHaveCount(0);
  await expect.poll(() => subRoutes(page.request, alice)).toEqual(["🇺🇸 USA", "🇩🇪 Germany", "🇳🇱 Netherlands"]);

  // The edit form moves one subscriber, keeping her own limit unless the plan's are applied.
  await page.getByRole("button", { name: "Edit subscriber on-usa" }).click();
  const edit = page.getByRole("dialog", { name: "Edit subscriber on-usa" });
  await expect(edit.getByLabel("Traffic limit in GB (optional)")).toHaveValue("5");
  await edit.getByLabel("Plan").selectOption({ label: "All routes" });
  await edit.getByRole("checkbox", { name: /Apply the plan's limits/ }).check();
  await edit.getByRole("button", { name: "Save subscriber" }).click();
  await expect(edit).toBeHidden();
  await expect(page.getByRole("row", { name: /on-usa/ }).getByTestId("subscriber-plan")).toHaveText("All routes");
  await expect(page.getByRole("row", { name: /on-usa/ }).getByTestId("subscriber-usage")).not.toContainText("5.00 GB");
  await expect.poll(async () => subRoutes(page.request, await tokenOf(page, cluster, "on-usa"))).toEqual(["🇺🇸 USA", "🇩🇪 Germany", "🇳🇱 Netherlands"]);
});

test("a viewer sees the plans but cannot change them", async ({ page, browser, cluster }) => {
  await trpcMutation(page.request, "plans.create", { clusterId: cluster.id, name: "Read only" });
  await asViewer(page, browser, async (viewer) => {
    await viewer.goto(`/clusters/${cluster.id}/subscribers`);
    const plans = viewer.getByRole("list", { name: "Plans" });
    await expect(plans.getByRole("listitem", { name: "Plan Read only" })).toContainText("No routes");
    await expect(plans.getByRole("listitem", { name: "Plan All routes" })).toContainText("Default");
    await expect(viewer.getByRole("button", { name: "New plan" })).toHaveCount(0);
    await expect(viewer.getByRole("button", { name: /^(Edit|Delete) plan / })).toHaveCount(0);
    await expect(viewer.getByRole("button", { name: /default plan$/ })).toHaveCount(0);
  });
});
