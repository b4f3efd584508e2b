/**
 * Issue 21, point 1 in the browser: a cluster's allowed private destinations on the servers
 * page, shown with a warning, edited with errors naming the line, saved for the agents.
 */
import { test, expect } from "./fixtures";
import { trpcQuery } from "../scripts/harness/trpc";

test("the cluster's allowed private destinations: empty by default, shown with a warning, edited line by line", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}/servers`);
  const section = page.getByRole("region", { name: "Allowed private destinations" });
  await expect(section).toBeVisible();
  await expect(section.getByRole("note")).toContainText("open to every subscriber of this cluster, through every server");
  await expect(section).toContainText("The core's API port stays closed whatever is listed here");
  await expect(section).toContainText("None: every private destination is closed to subscribers.");

  const field = section.getByLabel("Destinations, one per line");
  const save = section.getByRole("button", { name: "Save destinations" });
  await expect(save).toBeDisabled();

  // A name, and a CIDR with host bits: refused in the form, naming the line, before any call.
  await field.fill("10.0.0.5:5432\ndb.internal:5432");
  await expect(section.getByRole("alert")).toHaveText('Line 2: "db.internal:5432": use an IP address or a CIDR, not a host name');
  await expect(save).toBeDisabled();
  await field.fill("10.0.0.5/8");
  await expect(section.getByRole("alert")).toContainText("did you mean 10.0.0.0/8?");

  await field.fill("10.0.0.5:5432\n\n127.0.0.1:8080\n[fd00::/64]:443");
  await expect(section.getByRole("alert")).toHaveCount(0);
  await save.click();
  await expect(section.getByRole("status")).toContainText("Saved");
  const chips = section.getByRole("list", { name: "Allowed destinations" }).getByRole("listitem");
  await expect(chips).toHaveText(["10.0.0.5:5432", "127.0.0.1:8080", "[fd00::/64]:443"]);
  expect((await trpcQuery<{ allowedPrivateDestinations: string[] }>(page.request, "clusters.get", { clusterId: cluster.id })).allowedPrivateDestinations).toEqual([
    "10.0.0.5:5432",
    "127.0.0.1:8080",
    "[fd00::/64]:443",
  ]);

  // Kept across a reload; emptying the list closes everything again.
  await page.reload();
  await expect(chips).toHaveText(["10.0.0.5:5432", "127.0.0.1:8080", "[fd00::/64]:443"]);
  await expect(field).toHaveValue("10.0.0.5:5432\n127.0.0.1:8080\n[fd00::/64]:443");
  await field.fill("");
  await save.click();
  await expect(section).toContainText("None: every private destination is closed to subscribers.");
  expect((await trpcQuery<{ allowedPrivateDestinations: string[] }>(page.request, "clusters.get", { clusterId: cluster.id })).allowedPrivateDestinations).toEqual([]);
});
