/**
 * Issue 21, point 3: usage is kept per server, so the operator sees who reported what, and
 * the owner discards what one server reported over a period: the subscriber gets the usage
 * back and, under their limit again, is served again.
 */
import { test, expect } from "./fixtures";
import { healthyReport, postAgentReport } from "./agent-report";
import { trpcMutation, trpcQuery } from "../scripts/harness/trpc";

const MB = 1024 ** 2;

test("the owner sees usage per server and discards what one server reported: the subscriber is back under the limit", async ({ page, cluster }) => {
  const servers: Record<string, { id: string; agentToken: string }> = {};
  for (const name of ["acct-a", "acct-b"]) {
    servers[name] = await trpcMutation(page.request, "servers.create", { clusterId: cluster.id, name, address: "127.0.0.1", role: "node", coefficient: 1, capacityMbps: null });
  }
  const dave = await trpcMutation<{ id: string; token: string }>(page.request, "subscribers.create", { clusterId: cluster.id, name: "Acct Dave", expiresAt: null, trafficLimitGb: 0.005 });
  const report = (instance: string, down: number) => healthyReport({ instance, seq: 1, users: [{ email: dave.id, up: 0, down }] });
  // A served 1 MB; B served nothing to Dave but reports 6 MB: over his 5.1 MB limit.
  expect((await postAgentReport(page.request, servers["acct-a"]!.agentToken, report("e2e-acct-a", 1 * MB))).status()).toBe(200);
  expect((await postAgentReport(page.request, servers["acct-b"]!.agentToken, report("e2e-acct-b", 6 * MB))).status()).toBe(200);
  const limited = async () => ((await (await page.request.get(`/sub/${dave.token}?format=json`)).json()) as { routes: Array<{ inbound: string }> }).routes.some((r) => r.inbound.startsWith("⛔"));
  await expect.poll(limited, { timeout: 60_000 }).toBe(true);

  // Who reported what, on the subscriber's page.
  await page.goto(`/clusters/${cluster.id}/subscribers/${dave.id}`);
  const byServer = page.getByRole("region", { name: "Usage by server" });
  await expect(byServer.getByRole("row", { name: "Usage on acct-b" }).getByTestId("period-usage")).toHaveText("6.0 MB", { timeout: 60_000 });
  await expect(byServer.getByRole("row", { name: "Usage on acct-a" }).getByTestId("period-usage")).toHaveText("1.0 MB");

  // The owner discards B's reports from the health page; a period that ends before it starts is refused.
  await page.goto(`/clusters/${cluster.id}/health`);
  const rowB = page.getByRole("row", { name: "Usage reported by acct-b" });
  await expect(rowB.getByTestId("reported-bytes")).toContainText("6.0 MB", { timeout: 60_000 });
  await rowB.getByRole("button", { name: "Discard…" }).click();
  const dialog = page.getByRole("dialog", { name: "Discard usage reported by acct-b" });
  const from = await dialog.getByLabel("From (UTC day)").inputValue();
  await dialog.getByLabel("To (UTC day, exclusive)").fill(from);
  await dialog.getByRole("button", { name: "Discard usage" }).click();
  await expect(dialog.getByText("to must be after from")).toBeVisible();
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
  await dialog.getByLabel("To (UTC day, exclusive)").fill(tomorrow);
  await dialog.getByRole("button", { name: "Discard usage" }).click();
  await expect(dialog).toBeHidden();
  await expect(page.getByRole("status").filter({ hasText: "Discarded 6.0 MB reported by acct-b for 1 subscriber; 6.0 MB given back, 1 back under their limit." })).toBeVisible();
  await expect(rowB.getByTestId("reported-bytes")).toContainText("0 KB");
  await page.screenshot({ path: "test-results/reported-usage-discarded.png", fullPage: true });

  // Dave is served again, with only A's megabyte counted; the audit log says who did it.
  await expect.poll(limited).toBe(false);
  const list = await trpcQuery<Array<{ id: string; trafficUsedBytes: number }>>(page.request, "subscribers.list", { clusterId: cluster.id });
  expect(list.find((s) => s.id === dave.id)!.trafficUsedBytes).toBe(1 * MB);
  await page.goto(`/clusters/${cluster.id}/audit`);
  await expect(page.getByText(/Discarded the usage acct-b reported/)).toBeVisible();
});

test("the report capacity is set in the server form, validated, and bounds what the server's agent may report", async ({ page, cluster }) => {
  const server = await trpcMutation<{ id: string; agentToken: string }>(page.request, "servers.create", { clusterId: cluster.id, name: "acct-cap", address: "127.0.0.1", role: "node", coefficient: 1, capacityMbps: null });
  const erin = await trpcMutation<{ id: string }>(page.request, "subscribers.create", { clusterId: cluster.id, name: "Acct Erin", expiresAt: null, trafficLimitGb: null });
  await page.goto(`/clusters/${cluster.id}/servers`);
  await page.getByRole("button", { name: "Edit server acct-cap" }).click();
  const form = page.getByRole("dialog", { name: "Edit server acct-cap" });
  await expect(form.getByLabel("Report capacity (Mbit/s)")).toHaveValue("10000");
  await form.getByLabel("Report capacity (Mbit/s)").fill("0");
  await form.getByRole("button", { name: "Save server" }).click();
  await expect(form.getByText("Report capacity must be between 1 and 10,000,000 Mbit/s")).toBeVisible();
  // 8 Mbit/s: 1 MB a second.
  await form.getByLabel("Report capacity (Mbit/s)").fill("8");
  await form.getByRole("button", { name: "Save server" }).click();
  await expect(form).toBeHidden();

  // 500 MB for one user within about a minute is more than 8 Mbit/s moves: refused, naming the row.
  const res = await postAgentReport(page.request, server.agentToken, healthyReport({ instance: "e2e-acct-cap", seq: 1, users: [{ email: erin.id, up: 0, down: 500 * MB }] }));
  expect(res.status()).toBe(400);
  expect(((await res.json()) as { error: string }).error).toMatch(/^users\[0\]\.down: \d+ bytes is more than this server's report capacity \(8 Mbit\/s\)/);
  const list = await trpcQuery<Array<{ id: string; trafficUsedBytes: number }>>(page.request, "subscribers.list", { clusterId: cluster.id });
  expect(list.find((s) => s.id === erin.id)!.trafficUsedBytes).toBe(0);

  // A rate above 8 Mbit/s is no more than the link carries: the report is kept (its user's
  // traffic counted), the rate stored and shown as 8 Mbit/s.
  const fast = await postAgentReport(page.request, server.agentToken, healthyReport({ instance: "e2e-acct-cap", seq: 2, usersOnline: 1, rxBps: 50e6, txBps: 1e6, users: [{ email: erin.id, up: 0, down: MB }] }));
  expect(fast.status()).toBe(200);
  await page.goto(`/clusters/${cluster.id}/health`);
  await expect(page.locator('tr[aria-label="Server acct-cap"] td[data-label="Last report"]')).toContainText("1 users · ↓8.0 Mbit/s ↑1.0 Mbit/s");
  await expect
    .poll(async () => (await trpcQuery<Array<{ id: string; trafficUsedBytes: number }>>(page.request, "subscribers.list", { clusterId: cluster.id })).find((s) => s.id === erin.id)!.trafficUsedBytes, { timeout: 60_000 })
    .toBe(MB);
});
