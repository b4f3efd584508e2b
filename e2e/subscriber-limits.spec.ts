/**
 * Limits that take effect (issue 14, part 1) in the dashboard: a traffic limit with a monthly
 * reset set in the form, usage from an agent report reaching it (the row and /sub say so, with
 * the renewal day), "Reset usage" bringing the subscriber back, the period kept; on hold.
 */
import { test, expect } from "./fixtures";
import { healthyReport, postAgentReport } from "./agent-report";
import { trpcMutation, trpcQuery } from "../scripts/harness/trpc";

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** 00:00 UTC of the next day-`day` of a month (the month's last day when shorter), after now. */
function nextMonthly(day: number, nowMs = Date.now()): Date {
  const at = (y: number, m: number) => Date.UTC(y, m, Math.min(day, new Date(Date.UTC(y, m + 1, 0)).getUTCDate()));
  const d = new Date(nowMs);
  const t = at(d.getUTCFullYear(), d.getUTCMonth());
  return new Date(t > nowMs ? t : at(d.getUTCFullYear(), d.getUTCMonth() + 1));
}

test("the operator sets a limit with a monthly reset, sees usage and the next reset, and resets usage by hand", async ({ page, cluster }) => {
  const server = await trpcMutation<{ id: string; agentToken: string }>(page.request, "servers.create", {
    clusterId: cluster.id,
    name: "agent-limits",
    address: "127.0.0.1",
    role: "node",
    coefficient: 1,
    capacityMbps: null,
  });
  await page.goto(`/clusters/${cluster.id}/subscribers`);
  await page.getByRole("button", { name: "New subscriber" }).click();
  const form = page.getByRole("dialog", { name: "New subscriber" });
  await form.getByLabel("Name").fill("Lim Lucy");
  await form.getByLabel("Traffic limit in GB (optional)").fill("0.005");
  await form.getByLabel("Usage resets").selectOption("monthly");
  // Bad input: the field says what is wrong, nothing is created.
  await form.getByLabel("Day of the month").fill("40");
  await form.getByRole("button", { name: "Create subscriber" }).click();
  await expect(form.getByText("Monthly reset day must be between 1 and 31")).toBeVisible();
  await form.getByLabel("Day of the month").fill("31");
  await form.getByRole("button", { name: "Create subscriber" }).click();
  await page.getByRole("dialog", { name: "Subscription link of Lim Lucy" }).getByRole("button", { name: "Done" }).click();

  const next = nextMonthly(31);
  const nextText = `${next.getUTCDate()} ${MONTHS[next.getUTCMonth()]} ${next.getUTCFullYear()}`;
  const row = page.getByTestId("subscriber-row").filter({ hasText: "Lim Lucy" });
  await expect(row.getByTestId("subscriber-reset")).toHaveText(`Resets monthly on day 31 · next ${nextText}`);
  await expect(row).toContainText("Active");

  // An agent reports 6 MB for Lucy: over the 5.1 MB limit.
  const lucy = (await trpcQuery<Array<{ id: string; name: string; token: string }>>(page.request, "subscribers.list", { clusterId: cluster.id })).find((s) => s.name === "Lim Lucy")!;
  const report = healthyReport({ instance: "e2e-limits", seq: 1, users: [{ email: lucy.id, up: 1024 ** 2, down: 5 * 1024 ** 2 }] });
  expect((await postAgentReport(page.request, server.agentToken, report)).status()).toBe(200);
  await expect(row).toContainText("Limit reached", { timeout: 60_000 });
  await expect(row.getByTestId("subscriber-usage")).toContainText("6.0 MB / 5.1 MB");
  // The subscriber's app shows one entry saying when it renews.
  const inbounds = async () => ((await (await page.request.get(`/sub/${lucy.token}?format=json`)).json()) as { routes: Array<{ inbound: string }> }).routes.map((r) => r.inbound);
  await expect.poll(inbounds).toEqual([`⛔ Traffic limit reached — renews on ${next.getUTCDate()} ${MONTHS[next.getUTCMonth()]}`]);
  await page.screenshot({ path: "test-results/subscriber-limit-reached.png", fullPage: true });

  // Reset usage: confirmed, usage back to 0, the subscriber active and served again.
  await row.getByRole("button", { name: "Reset usage of Lim Lucy" }).click();
  const confirm = page.getByRole("dialog", { name: "Reset the usage of Lim Lucy?" });
  await expect(confirm).toContainText("can connect again at once");
  await confirm.getByRole("button", { name: "Reset usage" }).click();
  await expect(confirm).toBeHidden();
  await expect(row.getByTestId("subscriber-usage")).toContainText("0 KB / 5.1 MB");
  await expect(row).toContainText("Active");
  await expect(row.getByTestId("subscriber-reset")).toHaveText(`Resets monthly on day 31 · next ${nextText}`);
  await expect.poll(async () => (await inbounds()).some((i) => i.startsWith("⛔"))).toBe(false);

  // The finished period is kept and shown in the edit dialog.
  await row.getByRole("button", { name: "Edit subscriber Lim Lucy" }).click();
  const edit = page.getByRole("dialog", { name: "Edit subscriber Lim Lucy" });
  await expect(edit.getByLabel("Usage resets")).toHaveValue("monthly");
  await expect(edit.getByLabel("Day of the month")).toHaveValue("31");
  await expect(edit.getByTestId("usage-period")).toHaveCount(1);
  await expect(edit.getByTestId("usage-period")).toContainText("6.0 MB");
  await expect(edit.getByTestId("usage-period")).toContainText("Reset by hand");
  await page.screenshot({ path: "test-results/subscriber-usage-periods.png" });
  await edit.getByRole("button", { name: "Cancel" }).click();
});

test("a subscriber on hold until first connection: the form sets the length, the row says so", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}/subscribers`);
  await page.getByRole("button", { name: "New subscriber" }).click();
  const form = page.getByRole("dialog", { name: "New subscriber" });
  await form.getByLabel("Name").fill("Held Hank");
  await form.getByLabel("On hold until first connection").check();
  await form.getByLabel("Subscription length in days").fill("0");
  await form.getByRole("button", { name: "Create subscriber" }).click();
  await expect(form.getByText("Hold duration must be at least 1 day")).toBeVisible();
  await form.getByLabel("Subscription length in days").fill("30");
  await form.getByRole("button", { name: "Create subscriber" }).click();
  await page.getByRole("dialog", { name: "Subscription link of Held Hank" }).getByRole("button", { name: "Done" }).click();
  const row = page.getByTestId("subscriber-row").filter({ hasText: "Held Hank" });
  await expect(row).toContainText("On hold");
  await expect(row.getByTestId("subscriber-expiry")).toHaveText("30 d from first connection");
});

test("a reset of a subscriber deleted meanwhile says so in the confirmation, which stays open", async ({ page, cluster }) => {
  const gone = await trpcMutation<{ id: string }>(page.request, "subscribers.create", { clusterId: cluster.id, name: "Gone Gina", expiresAt: null, trafficLimitGb: 1 });
  await page.goto(`/clusters/${cluster.id}/subscribers`);
  const row = page.getByTestId("subscriber-row").filter({ hasText: "Gone Gina" });
  await row.getByRole("button", { name: "Reset usage of Gone Gina" }).click();
  const confirm = page.getByRole("dialog", { name: "Reset the usage of Gone Gina?" });
  await expect(confirm).toContainText("0 KB used now is kept as a previous period");
  await expect(confirm).not.toContainText("can connect again at once");
  // Deleted from another session while the dialog is open.
  await trpcMutation(page.request, "subscribers.delete", { subscriberId: gone.id });
  await confirm.getByRole("button", { name: "Reset usage" }).click();
  await expect(confirm.getByRole("alert")).toHaveText("This subscriber no longer exists");
  await expect(confirm).toBeVisible();
  await confirm.getByRole("button", { name: "Cancel" }).click();
  await expect(confirm).toBeHidden();
});
