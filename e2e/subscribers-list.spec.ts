/**
 * The subscribers list past one page: search, sort, filters and paging done by the server,
 * each row's route choices, bulk actions behind a confirmation naming the count, and names
 * unique per cluster.
 */
import type { Page } from "@playwright/test";
import { trpcMutation, trpcQuery } from "../scripts/harness/trpc";
import { expect, test, type TestCluster } from "./fixtures";
import { healthyReport, postAgentReport } from "./agent-report";

const MB = 1024 ** 2;

/** 55 more subscribers ("member-01" … "member-55") beside the demo's five: 60, two pages of 50. */
async function addMembers(page: Page, cluster: TestCluster): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  const names = Array.from({ length: 55 }, (_, i) => `member-${String(i + 1).padStart(2, "0")}`);
  for (let i = 0; i < names.length; i += 11) {
    const made = await Promise.all(
      names.slice(i, i + 11).map((name) => trpcMutation<{ id: string; token: string }>(page.request, "subscribers.create", { clusterId: cluster.id, name, expiresAt: null, trafficLimitGb: 1 })),
    );
    made.forEach((m, k) => ids.set(names[i + k]!, m.id));
  }
  return ids;
}

/** Traffic for two members through the agent report path: they become the heaviest and online. */
async function reportTraffic(page: Page, cluster: TestCluster, users: Array<{ id: string; mb: number }>) {
  const server = await trpcMutation<{ id: string; agentToken: string }>(page.request, "servers.create", {
    clusterId: cluster.id,
    name: "list-agent",
    address: "127.0.0.1",
    role: "node",
    coefficient: 1,
    capacityMbps: null,
  });
  const res = await postAgentReport(
    page.request,
    server.agentToken,
    healthyReport({ usersOnline: users.length, instance: "e2e-list-agent", seq: 1, users: users.map((u) => ({ email: u.id, up: MB, down: (u.mb - 1) * MB })) }),
  );
  expect(res.status()).toBe(200);
}

test("searches, sorts, filters and pages through the list on the server, with each row's route choices", async ({ page, cluster }) => {
  const ids = await addMembers(page, cluster);
  await reportTraffic(page, cluster, [
    { id: ids.get("member-07")!, mb: 900 },
    { id: ids.get("member-33")!, mb: 300 },
  ]);
  // alice's app fetches her subscription: the balancer stores a choice per route.
  const all = await trpcQuery<{ items: Array<{ name: string; token: string }> }>(page.request, "subscribers.page", { clusterId: cluster.id, search: "alice" });
  const alice = all.items.find((s) => s.name === "alice")!;
  expect((await page.request.get(`/sub/${alice.token}`, { headers: { "user-agent": "v2rayNG/1.9.36" } })).status()).toBe(200);

  await page.goto(`/clusters/${cluster.id}/subscribers`);
  const rows = page.getByTestId("subscriber-row");
  await expect(page.getByTestId("subscriber-total")).toHaveText("60 subscribers");
  await expect(rows).toHaveCount(50);
  await expect(page.getByTestId("page-range")).toHaveText("1–50 of 60");

  // Page forward: the last ten, then back.
  await page.getByRole("button", { name: "Next page" }).click();
  await expect(page.getByTestId("page-range")).toHaveText("51–60 of 60");
  await expect(rows).toHaveCount(10);
  await expect(page.getByRole("button", { name: "Next page" })).toBeDisabled();
  await page.getByRole("button", { name: "Previous page" }).click();
  await expect(rows).toHaveCount(50);

  // Sort by usage: the heaviest first; again for the other way round.
  await page.getByRole("button", { name: "Sort by usage" }).click();
  await expect(page.getByRole("columnheader", { name: "Sort by usage" })).toHaveAttribute("aria-sort", "descending");
  await expect(rows.nth(0)).toContainText("member-07");
  await expect(rows.nth(1)).toContainText("member-33");
  await expect(rows.nth(0).getByTestId("subscriber-usage")).toContainText("900.0 MB / 1.00 GB");
  await expect(rows.nth(0).getByRole("progressbar", { name: "Usage of member-07" })).toHaveAttribute("aria-valuenow", "88");
  await page.getByRole("button", { name: "Sort by usage" }).click();
  await expect(page.getByRole("columnheader", { name: "Sort by usage" })).toHaveAttribute("aria-sort", "ascending");
  await expect(rows.nth(0)).not.toContainText("member-07");
  await page.getByRole("button", { name: "Sort by name" }).click();
  await expect(rows.nth(0)).toContainText("alice");

  // Filter: online now, then a status with no match.
  await page.getByLabel("Online now only").check();
  await expect(rows).toHaveCount(2);
  await expect(page.getByTestId("subscriber-total")).toHaveText("2 matching");
  await expect(rows.nth(0).getByTestId("subscriber-online")).toHaveText("Online now");
  await page.getByLabel("Online now only").uncheck();
  await page.getByLabel("Status").selectOption("expired");
  await expect(page.getByText("No subscriber matches these filters.")).toBeVisible();
  await page.getByLabel("Status").selectOption("active");
  await expect(page.getByTestId("subscriber-total")).toHaveText("60 matching");
  await page.getByLabel("Status").selectOption("");

  // Search: a name substring in any case, then a whole token (never a part of one).
  const search = page.getByRole("searchbox", { name: "Search subscribers" });
  await search.fill("MEMBER-1");
  await expect(rows).toHaveCount(10);
  await expect(page.getByTestId("subscriber-total")).toHaveText("10 matching");
  await search.fill(alice.token);
  await expect(rows).toHaveCount(1);
  await expect(rows.nth(0)).toContainText("alice");
  await search.fill(alice.token.slice(0, 10));
  await expect(page.getByText(`No subscriber matches “${alice.token.slice(0, 10)}”.`)).toBeVisible();
  await search.fill("nobody-by-this-name");
  await expect(page.getByText("No subscriber matches “nobody-by-this-name”.")).toBeVisible();
  await search.fill("");

  // Route choices: alice's, stored in the background after her fetch; bob has not fetched.
  await expect(rows.filter({ hasText: "alice" }).getByTestId("subscriber-routes").getByRole("listitem").first()).toBeVisible({ timeout: 60_000 });
  await expect(rows.filter({ hasText: "bob" }).getByTestId("subscriber-routes")).toHaveText("not fetched yet");
  await page.screenshot({ path: "test-results/subscribers-list.png", fullPage: true });
});

test("disables selected rows, then every row a search matches, each after a confirmation naming the count", async ({ page, cluster }) => {
  await addMembers(page, cluster);
  const bob = (await trpcQuery<{ items: Array<{ name: string; token: string }> }>(page.request, "subscribers.page", { clusterId: cluster.id, search: "bob" })).items[0]!;
  expect((await page.request.get(`/sub/${bob.token}`, { headers: { "user-agent": "v2rayNG/1.9.36" } })).status()).toBe(200);

  await page.goto(`/clusters/${cluster.id}/subscribers`);
  await page.getByRole("button", { name: "Sort by name" }).click();
  const rows = page.getByTestId("subscriber-row");
  for (const name of ["alice", "bob", "carol"]) await page.getByRole("checkbox", { name: `Select ${name}`, exact: true }).check();
  const toolbar = page.getByRole("toolbar", { name: "Bulk actions" });
  await expect(toolbar.getByTestId("selection-count")).toHaveText("3 selected");
  await toolbar.getByRole("button", { name: "Disable" }).click();
  const confirm = page.getByRole("dialog", { name: "Disable 3 subscribers?" });
  await expect(confirm).toContainText("drop them in the next config push");
  await confirm.getByRole("button", { name: "Disable 3 subscribers" }).click();
  await expect(confirm).toBeHidden();
  for (const name of ["alice", "bob", "carol"]) await expect(rows.filter({ hasText: name }).getByTestId("subscriber-status")).toHaveText("Disabled");
  await expect(rows.filter({ hasText: "dave" }).getByTestId("subscriber-status")).toHaveText("Active");
  await expect.poll(async () => (await page.request.get(`/sub/${bob.token}`)).status()).toBe(404);
  await expect(toolbar).toBeHidden();

  // All 55 a search matches, across both pages: the dialog counts them all.
  await page.getByRole("searchbox", { name: "Search subscribers" }).fill("member");
  await expect(page.getByTestId("subscriber-total")).toHaveText("55 matching");
  await page.getByRole("checkbox", { name: "Select every subscriber on this page" }).check();
  await expect(toolbar.getByTestId("selection-count")).toHaveText("50 selected");
  await toolbar.getByRole("button", { name: "Select all 55 matching" }).click();
  await expect(toolbar.getByTestId("selection-count")).toHaveText("All 55 matching selected");
  await toolbar.getByRole("button", { name: "Extend expiry…" }).click();
  const extend = page.getByRole("dialog", { name: "Extend the expiry of 55 subscribers?" });
  await extend.getByLabel("Days").fill("0");
  await extend.getByRole("button", { name: "Extend 55 subscribers" }).click();
  await expect(extend.getByText("Days must be between 1 and 3650")).toBeVisible();
  await extend.getByRole("button", { name: "Cancel" }).click();
  await expect(toolbar.getByTestId("selection-count")).toHaveText("All 55 matching selected");
  await toolbar.getByRole("button", { name: "Disable" }).click();
  await page.getByRole("dialog", { name: "Disable 55 subscribers?" }).getByRole("button", { name: "Disable 55 subscribers" }).click();
  await page.getByLabel("Status").selectOption("disabled");
  await expect(page.getByTestId("subscriber-total")).toHaveText("55 matching");
  await page.getByRole("searchbox", { name: "Search subscribers" }).fill("");
  await expect(page.getByTestId("subscriber-total")).toHaveText("58 matching");

  await page.goto(`/clusters/${cluster.id}/audit`);
  await expect(page.getByText("Disabled 55 subscribers: member-01")).toBeVisible();
  await expect(page.getByText("Disabled 3 subscribers: alice, bob, carol")).toBeVisible();
});

test("a second subscriber with the same name in another case is refused, the name field says why", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}/subscribers`);
  await page.getByRole("button", { name: "New subscriber" }).click();
  const form = page.getByRole("dialog", { name: "New subscriber" });
  await form.getByLabel("Name").fill("ALICE");
  await form.getByRole("button", { name: "Create subscriber" }).click();
  await expect(form.getByLabel("Name")).toHaveAttribute("aria-invalid", "true");
  await expect(form.getByText('A subscriber named "ALICE" already exists in this cluster')).toBeVisible();
  await form.getByLabel("Name").fill("Alice Two");
  await form.getByRole("button", { name: "Create subscriber" }).click();
  await expect(page.getByRole("dialog", { name: "Subscription link of Alice Two" })).toBeVisible();
});
