/** The route wizard on the cluster page: create (with a pool that moves inbounds), edit, delete, validation. */
import { test, expect } from "./fixtures";
import { trpcMutation, trpcQuery } from "../scripts/harness/trpc";

interface Topology {
  routes: Array<{ id: string; name: string; flag: string | null; algorithm: string; position: number }>;
  inbounds: Array<{ id: string; name: string; routeId: string | null }>;
}
// Room for the whole diagram, so every route box is on screen.
test.use({ viewport: { width: 1440, height: 1100 } });

const topology = (page: import("@playwright/test").Page, clusterId: string) => trpcQuery<Topology>(page.request, "topology.get", { clusterId });

test("@pg a new route's pool takes an inbound away from another route", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}`);
  await page.getByRole("button", { name: "New route" }).click();
  const wizard = page.getByRole("dialog", { name: "New route" });
  await expect(wizard).toBeVisible();
  await expect(wizard.getByRole("heading", { name: "How clients see this route" })).toBeVisible();
  await expect(wizard.getByRole("heading", { name: "Load-balancing algorithm" })).toBeVisible();
  await expect(wizard.getByRole("heading", { name: /Inbounds in pool/ })).toBeVisible();

  await wizard.getByLabel("Name", { exact: true }).fill("🇪🇺 Europe");
  await wizard.getByRole("searchbox", { name: "Search countries" }).fill("germ");
  await wizard.getByRole("radio", { name: "Germany" }).check();
  // The chosen flag is drawn (SVG) beside its name in the group's legend.
  await expect(wizard.locator("legend", { hasText: "Flag" })).toContainText("— Germany");
  await expect(wizard.locator("legend", { hasText: "Flag" }).locator("svg")).toBeVisible();
  await wizard.getByRole("radio", { name: /Round-robin/ }).check();

  const berlin = wizard.getByRole("checkbox", { name: "🇩🇪 Berlin", exact: true });
  await expect(wizard.getByText(":443 · moves from 🇩🇪 Germany").first()).toBeVisible();
  await berlin.check();
  await wizard.getByRole("checkbox", { name: "🇺🇸 Dallas alt", exact: true }).check();
  await expect(wizard.getByText("2 inbounds, 1 moving from other routes")).toBeVisible();

  // Nothing is written before the operator confirms.
  expect((await topology(page, cluster.id)).routes.map((r) => r.name)).not.toContain("🇪🇺 Europe");
  await wizard.getByRole("button", { name: "Create route" }).click();
  await expect(wizard).toBeHidden();

  const t = await topology(page, cluster.id);
  const europe = t.routes.find((r) => r.name === "🇪🇺 Europe")!;
  expect(europe).toMatchObject({ flag: "DE", algorithm: "round-robin", position: 4 });
  expect(t.inbounds.find((i) => i.name === "🇩🇪 Berlin")!.routeId).toBe(europe.id);
  expect(t.inbounds.find((i) => i.name === "🇺🇸 Dallas alt")!.routeId).toBe(europe.id);

  // The diagram shows the move at once: the route box lists its inbounds by name.
  const region = page.getByRole("region", { name: "Route 🇪🇺 Europe", exact: true });
  await expect(region.getByText("🇩🇪 Berlin", { exact: true })).toBeVisible();
  await expect(region.getByText("🇺🇸 Dallas alt", { exact: true })).toBeVisible();
  await expect(page.getByRole("region", { name: "Route 🇩🇪 Germany", exact: true }).getByText("🇩🇪 Berlin", { exact: true })).toHaveCount(0);
  await page.screenshot({ path: "test-results/wizard-after-create.png" });
});

test("creates an empty route, its name filled from the flag", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}`);
  await page.getByRole("button", { name: "New route" }).click();
  const wizard = page.getByRole("dialog", { name: "New route" });
  await wizard.getByRole("searchbox", { name: "Search countries" }).fill("fr");
  await wizard.getByRole("radio", { name: "France" }).check();
  await expect(wizard.getByLabel("Name", { exact: true })).toHaveValue("🇫🇷 France");
  await expect(wizard.getByText("Empty route", { exact: true })).toBeVisible();
  await page.screenshot({ path: "test-results/wizard-dialog.png" });
  await wizard.getByRole("button", { name: "Create route" }).click();
  await expect(wizard).toBeHidden();
  const t = await topology(page, cluster.id);
  const france = t.routes.find((r) => r.name === "🇫🇷 France")!;
  expect(france).toMatchObject({ flag: "FR", algorithm: "least-traffic" });
  expect(t.inbounds.filter((i) => i.routeId === france.id)).toEqual([]);
  await expect(page.getByRole("region", { name: "Route 🇫🇷 France", exact: true })).toContainText("Empty");
});

test("edits and deletes a route", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}`);
  await page.getByRole("button", { name: "Actions for route 🇯🇵 Japan" }).click();
  await page.getByRole("menuitem", { name: "Edit route…" }).click();
  const edit = page.getByRole("dialog", { name: "Edit route 🇯🇵 Japan" });
  await expect(edit.getByLabel("Name", { exact: true })).toHaveValue("🇯🇵 Japan");
  await expect(edit.getByRole("radio", { name: "Japan" })).toBeChecked();
  await edit.getByLabel("Name", { exact: true }).fill("🇯🇵 Tokyo");
  await edit.getByRole("radio", { name: /Round-robin/ }).check();
  await edit.getByRole("button", { name: "Save route" }).click();
  await expect(edit).toBeHidden();
  await expect(page.getByRole("region", { name: "Route 🇯🇵 Tokyo", exact: true })).toBeVisible();
  let t = await topology(page, cluster.id);
  expect(t.routes.find((r) => r.name === "🇯🇵 Tokyo")).toMatchObject({ flag: "JP", algorithm: "round-robin" });

  await page.getByRole("button", { name: "Actions for route 🇺🇸 USA" }).click();
  await page.getByRole("menuitem", { name: "Delete route…" }).click();
  const confirm = page.getByRole("dialog", { name: "Delete route 🇺🇸 USA?" });
  await expect(confirm).toContainText("Its 3 inbounds become unassigned and users lose the 🇺🇸 USA line in their server list.");
  await confirm.getByRole("button", { name: "Delete route" }).click();
  await expect(confirm).toBeHidden();
  await expect(page.getByRole("region", { name: "Route 🇺🇸 USA", exact: true })).toHaveCount(0);
  t = await topology(page, cluster.id);
  expect(t.routes.map((r) => r.name)).not.toContain("🇺🇸 USA");
  expect(t.inbounds.find((i) => i.name === "🇺🇸 New York")!.routeId).toBeNull();
  await expect(page.getByRole("region", { name: "Unassigned inbounds" }).getByText("🇺🇸 New York", { exact: true })).toBeVisible();
});

test("shows validation errors next to the name and writes nothing", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}`);
  const before = await topology(page, cluster.id);
  await page.getByRole("button", { name: "New route" }).click();
  const wizard = page.getByRole("dialog", { name: "New route" });
  const name = wizard.getByLabel("Name", { exact: true });

  await wizard.getByRole("button", { name: "Create route" }).click();
  await expect(wizard.getByRole("alert")).toHaveText("Name is required");
  await expect(name).toHaveAttribute("aria-invalid", "true");

  await name.fill("   ");
  await wizard.getByRole("button", { name: "Create route" }).click();
  await expect(wizard.getByRole("alert")).toHaveText("Name is required");

  await name.fill("🇺🇸 usa");
  await wizard.getByRole("checkbox", { name: "🇩🇪 Berlin", exact: true }).check();
  await wizard.getByRole("button", { name: "Create route" }).click();
  await expect(wizard.getByRole("alert")).toHaveText('A route named "🇺🇸 usa" already exists in this cluster');

  // A name taken by someone else meanwhile: the server's CONFLICT shows next to the field too.
  await trpcMutation(page.request, "routes.create", { clusterId: cluster.id, name: "🇧🇷 Brazil", flag: "BR" });
  await name.fill("🇧🇷 BRAZIL");
  await wizard.getByRole("button", { name: "Create route" }).click();
  await expect(wizard.getByRole("alert")).toHaveText('A route named "🇧🇷 BRAZIL" already exists in this cluster');
  await expect(name).toHaveAttribute("aria-invalid", "true");

  await name.fill("bad\u202Ename");
  await wizard.getByRole("button", { name: "Create route" }).click();
  await expect(wizard.getByRole("alert")).toHaveText("Name must not contain control characters");
  await page.screenshot({ path: "test-results/wizard-validation.png" });

  await wizard.getByRole("button", { name: "Cancel" }).click();
  await expect(wizard).toBeHidden();
  const after = await topology(page, cluster.id);
  expect(after.routes.filter((r) => r.name !== "🇧🇷 Brazil")).toEqual(before.routes);
  expect(after.inbounds).toEqual(before.inbounds);
});

test("a route can name its line in the VPN app: both forms say what apps show, and /sub gives the route's name", async ({ page, cluster }) => {
  const subs = await trpcQuery<Array<{ name: string; token: string }>>(page.request, "subscribers.list", { clusterId: cluster.id });
  const alice = subs.find((s) => s.name === "alice")!;
  type Line = { route: string; inbound: string; name: string; link: string };
  const lines = async () => ((await (await page.request.get(`/sub/${alice.token}?format=json`)).json()) as { routes: Line[] }).routes;
  const usaLine = async () => (await lines()).find((l) => l.route === "🇺🇸 USA")!;
  const before = await usaLine();
  // The default: the app lists the chosen inbound's name.
  expect(before.name).toBe(before.inbound);
  expect(decodeURIComponent(new URL(before.link).hash.slice(1))).toBe(before.inbound);

  await page.goto(`/clusters/${cluster.id}`);
  await page.getByRole("button", { name: "New route" }).click();
  const wizard = page.getByRole("dialog", { name: "New route" });
  await expect(wizard).toContainText("VPN apps list the name of the inbound the balancer picked for each user");
  await expect(wizard).not.toContainText("Shown in the VPN app's server list");
  await expect(wizard.getByRole("radio", { name: /The chosen inbound’s name/ })).toBeChecked();
  await wizard.getByRole("button", { name: "Cancel" }).click();

  await page.getByRole("button", { name: "Actions for route 🇺🇸 USA" }).click();
  await page.getByRole("menuitem", { name: "Edit route…" }).click();
  const edit = page.getByRole("dialog", { name: "Edit route 🇺🇸 USA" });
  await expect(edit).toContainText("VPN apps list the name of the inbound the balancer picked for each user");
  await expect(edit.getByRole("radio", { name: /The chosen inbound’s name/ })).toBeChecked();
  await edit.getByRole("radio", { name: /This route’s name/ }).check();
  await expect(edit).toContainText("Everyone sees “🇺🇸 USA”, whichever inbound serves them");
  await edit.getByRole("button", { name: "Save route" }).click();
  await expect(edit).toBeHidden();

  // Every format now names the line after the route; JSON still says which inbound serves.
  await expect.poll(async () => (await usaLine()).name).toBe("🇺🇸 USA");
  const after = await usaLine();
  expect(after.inbound).toBe(before.inbound);
  expect(decodeURIComponent(new URL(after.link).hash.slice(1))).toBe("🇺🇸 USA");
  const clash = await (await page.request.get(`/sub/${alice.token}?format=clash`)).text();
  expect(clash).toContain('  - name: "🇺🇸 USA"');
  // Other routes keep their inbounds' names.
  const germany = (await lines()).find((l) => l.route === "🇩🇪 Germany")!;
  expect(germany.name).toBe(germany.inbound);

  // The choice is kept, and shown when the route is edited again.
  await page.getByRole("button", { name: "Actions for route 🇺🇸 USA" }).click();
  await page.getByRole("menuitem", { name: "Edit route…" }).click();
  await expect(page.getByRole("dialog", { name: "Edit route 🇺🇸 USA" }).getByRole("radio", { name: /This route’s name/ })).toBeChecked();
});
