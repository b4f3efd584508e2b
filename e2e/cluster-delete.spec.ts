/**
 * Deleting a cluster in the browser (issue 27, point 4): the dialog lists what goes and keeps
 * its button disabled until the cluster's name is typed; afterwards the cluster is gone, its
 * agents' tokens get 401 and its subscribers' links 404.
 */
import { test, expect } from "./fixtures";
import { trpcMutation, trpcQuery } from "../scripts/harness/trpc";

test("a cluster is deleted only after its name is typed, with its servers, routes and subscribers", async ({ page, cluster, baseURL, context }) => {
  const servers = await trpcQuery<Array<{ id: string }>>(page.request, "servers.list", { clusterId: cluster.id });
  const agentToken = (await trpcMutation<{ agentToken: string }>(page.request, "servers.rotateToken", { serverId: servers[0]!.id })).agentToken;
  const subscriber = await trpcMutation<{ token: string }>(page.request, "subscribers.create", { clusterId: cluster.id, name: "to-be-gone", expiresAt: null, trafficLimitGb: null });
  const config = () => fetch(`${baseURL}/api/agent/config`, { headers: { authorization: `Bearer ${agentToken}` } }).then((r) => r.status);
  const sub = () => fetch(`${baseURL}/sub/${subscriber.token}?format=json`).then((r) => r.status);
  expect(await config()).toBe(200);
  expect(await sub()).toBe(200);
  const impact = await trpcQuery<{ servers: number; routes: number; subscribers: number; inbounds: number }>(page.request, "clusters.deletionImpact", { clusterId: cluster.id });

  // Another tab of the same operator shows the cluster's diagram meanwhile.
  const other = await context.newPage();
  await other.goto(`/clusters/${cluster.id}`);
  await expect(other.getByRole("region", { name: /^Route / }).first()).toBeVisible();

  await page.goto("/clusters");
  await page.getByRole("button", { name: `Delete cluster ${cluster.name}` }).click();
  const dialog = page.getByRole("dialog", { name: `Delete cluster ${cluster.name}?` });
  const what = dialog.getByRole("list", { name: "What is deleted" });
  await expect(what).toContainText(`${impact.servers} servers`);
  await expect(what).toContainText(`${impact.inbounds} inbounds`);
  await expect(what).toContainText(`${impact.routes} routes`);
  await expect(what).toContainText(`${impact.subscribers} subscribers`);
  const confirm = dialog.getByRole("button", { name: "Delete cluster" });
  await expect(confirm).toBeDisabled();
  const typed = dialog.getByLabel(`Type ${cluster.name} to confirm`);
  await typed.fill(cluster.name.slice(0, -1));
  await expect(confirm).toBeDisabled();
  await typed.press("Enter");
  await expect(dialog).toBeVisible();
  expect(await config()).toBe(200);
  await typed.fill(cluster.name);
  await expect(confirm).toBeEnabled();
  await confirm.click();

  await expect(dialog).toBeHidden();
  await expect(page.getByRole("button", { name: `Delete cluster ${cluster.name}` })).toHaveCount(0);
  await expect(page.getByRole("link", { name: new RegExp(cluster.name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")) })).toHaveCount(0);
  const left = await trpcQuery<Array<{ id: string }>>(page.request, "clusters.list");
  expect(left.map((c) => c.id)).not.toContain(cluster.id);
  expect(await config()).toBe(401);
  await expect.poll(sub).toBe(404);
  // The open tab follows the change: the cluster's pages are gone, it is back at the list.
  await expect(other).toHaveURL(/\/clusters$/);
  await expect(other.getByRole("heading", { name: "Clusters" })).toBeVisible();
  await other.close();
});
