/**
 * Feedback and confirmation on the cluster pages (issue 13): a toast with the server's answer
 * after a drag, Undo with the move's version check, "Saving…" and the question before
 * unloading while a write is in flight, a new route brought into view, and the question
 * before a change that leaves a route with no available inbound.
 */
import type { Page } from "@playwright/test";
import { asViewer, test, expect, type TestCluster, drag, expandWarnings, routeOf } from "./fixtures";
import { trpcMutation, trpcQuery } from "../scripts/harness/trpc";

test.use({ viewport: { width: 1440, height: 900 } });

interface Topo {
  servers: Array<{ id: string; name: string; enabled: boolean; status: string }>;
  inbounds: Array<{ id: string; name: string; routeId: string | null; version: number }>;
  routes: Array<{ id: string; name: string }>;
}

const chip = (page: Page, name: string) => page.getByRole("button", { name, exact: true });
const routeBox = (page: Page, name: string) => page.getByRole("region", { name: `Route ${name}`, exact: true });
const toasts = (page: Page) => page.getByTestId("toasts");
const topology = (page: Page, cluster: TestCluster) => trpcQuery<Topo>(page.request, "topology.get", { clusterId: cluster.id });

async function openDiagram(page: Page, cluster: TestCluster) {
  await page.goto(`/clusters/${cluster.id}`);
  await expect(chip(page, "🇺🇸 Dallas")).toBeVisible();
}

test("a drag's toast gives the server's answer, and Undo moves the inbound back", async ({ page, cluster }) => {
  await openDiagram(page, cluster);
  await drag(page, chip(page, "🇺🇸 Dallas"), routeBox(page, "🇩🇪 Germany"));
  const toast = toasts(page).getByRole("status").filter({ hasText: "🇺🇸 Dallas" });
  await expect(toast).toHaveText(/Saved: 🇺🇸 Dallas moved from 🇺🇸 USA to 🇩🇪 Germany\./);
  expect(await routeOf(page, cluster, "🇺🇸 Dallas")).toBe("🇩🇪 Germany");

  await toast.getByRole("button", { name: "Undo" }).click();
  await expect(toast).toContainText("Undone: 🇺🇸 Dallas is back in 🇺🇸 USA.");
  await expect.poll(() => routeOf(page, cluster, "🇺🇸 Dallas")).toBe("🇺🇸 USA");
  await expect(routeBox(page, "🇺🇸 USA").getByText("🇺🇸 Dallas", { exact: true })).toBeVisible();
});

test("Undo after someone else moved the inbound fails with the conflict and changes nothing", async ({ page, cluster }) => {
  await openDiagram(page, cluster);
  await drag(page, chip(page, "🇺🇸 Dallas"), routeBox(page, "🇩🇪 Germany"));
  const toast = toasts(page).getByRole("status").filter({ hasText: "Saved: 🇺🇸 Dallas" });
  await expect(toast).toBeVisible();

  // Another operator moves it on.
  const t = await topology(page, cluster);
  const dallas = t.inbounds.find((i) => i.name === "🇺🇸 Dallas")!;
  const nl = t.routes.find((r) => r.name === "🇳🇱 Netherlands")!;
  await trpcMutation(page.request, "topology.moveInbound", { inboundId: dallas.id, toRouteId: nl.id, expectedVersion: dallas.version });

  await toast.getByRole("button", { name: "Undo" }).click();
  await expect(toasts(page).getByRole("alert")).toContainText("Could not undo the move of 🇺🇸 Dallas: Someone else changed this inbound");
  expect(await routeOf(page, cluster, "🇺🇸 Dallas")).toBe("🇳🇱 Netherlands");
  await expect(routeBox(page, "🇳🇱 Netherlands").getByText("🇺🇸 Dallas", { exact: true })).toBeVisible();
});

test("while a move is in flight the diagram says Saving…, and reloading asks first", async ({ page, cluster }) => {
  await openDiagram(page, cluster);
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  await page.route("**/api/trpc/topology.moveInbound*", async (route) => {
    await held;
    await route.continue();
  });
  await drag(page, chip(page, "🇺🇸 Dallas"), routeBox(page, "🇩🇪 Germany"));
  await expect(page.getByTestId("save-status")).toHaveText("Saving…");

  const dialog = page.waitForEvent("dialog");
  const reload = page.reload().catch(() => null);
  const asked = await dialog;
  expect(asked.type()).toBe("beforeunload");
  await asked.dismiss();
  void reload;

  release();
  await expect(page.getByTestId("save-status")).toHaveText("Saved");
  await expect.poll(() => routeOf(page, cluster, "🇺🇸 Dallas")).toBe("🇩🇪 Germany");
  await page.unroute("**/api/trpc/topology.moveInbound*");
});

test("a drop followed at once by a reload keeps the move", async ({ page, cluster }) => {
  await openDiagram(page, cluster);
  const asked: string[] = [];
  page.on("dialog", (d) => {
    asked.push(d.type());
    void d.accept();
  });
  await drag(page, chip(page, "🇺🇸 Dallas"), routeBox(page, "🇩🇪 Germany"));
  await page.reload();
  await expect(routeBox(page, "🇩🇪 Germany").getByText("🇺🇸 Dallas", { exact: true })).toBeVisible();
  await expect(routeBox(page, "🇺🇸 USA").getByText("🇺🇸 Dallas", { exact: true })).toHaveCount(0);
  expect(await routeOf(page, cluster, "🇺🇸 Dallas")).toBe("🇩🇪 Germany");
  expect(asked.every((t) => t === "beforeunload")).toBe(true);
});

test("a new route from the wizard is brought into view and highlighted", async ({ page, cluster }) => {
  // Enough routes that the diagram opens at its top and the new one lands far below.
  for (let i = 1; i <= 16; i++) await trpcMutation(page.request, "routes.create", { clusterId: cluster.id, name: `Filler ${i}` });
  await page.goto(`/clusters/${cluster.id}`);
  await expect(routeBox(page, "🇺🇸 USA")).toBeVisible();

  await page.getByRole("button", { name: "New route" }).click();
  const wizard = page.getByRole("dialog", { name: "New route" });
  await wizard.getByLabel("Name", { exact: true }).fill("Brand new");
  await wizard.getByRole("button", { name: "Create route" }).click();
  await expect(wizard).toBeHidden();
  await expect(toasts(page).getByRole("status").filter({ hasText: "Route Brand new created" })).toBeVisible();

  const box = routeBox(page, "Brand new");
  await expect(box).toBeVisible();
  await expect(box).toHaveAttribute("data-flash", "true");
  await expect(box).toBeInViewport({ ratio: 0.9 });
  const diagram = await page.getByTestId("diagram").boundingBox();
  const b = await box.boundingBox();
  expect(b!.y).toBeGreaterThanOrEqual(diagram!.y);
  expect(b!.y + Math.min(b!.height, 60)).toBeLessThanOrEqual(diagram!.y + diagram!.height);
});

/** A server whose agent reports it healthy, alone in the (empty) 🇯🇵 Japan route. */
async function soloHealthyServer(page: Page, cluster: TestCluster) {
  const tag = Math.random().toString(36).slice(2, 8);
  // No probes: only the agent's reports decide, so the server stays healthy.
  await trpcMutation(page.request, "monitoring.setProbeConfig", { clusterId: cluster.id, config: { enabled: false } });
  const server = await trpcMutation<{ id: string; name: string; agentToken: string }>(page.request, "servers.create", {
    clusterId: cluster.id,
    name: `jp-solo-${tag}`,
    address: "127.0.50.44",
  });
  await trpcMutation(page.request, "inbounds.create", { serverId: server.id, name: `Tokyo ${tag}`, port: 443, security: "none", sni: null });
  const t = await topology(page, cluster);
  const tokyo = t.inbounds.find((i) => i.name === `Tokyo ${tag}`)!;
  const japan = t.routes.find((r) => r.name === "🇯🇵 Japan")!;
  await trpcMutation(page.request, "topology.moveInbound", { inboundId: tokyo.id, toRouteId: japan.id, expectedVersion: tokyo.version });
  const res = await page.request.post("/api/agent/report", {
    headers: { authorization: `Bearer ${server.agentToken}` },
    data: { listenerAlive: true, serviceRunning: true, usersOnline: 0, rxBps: 0, txBps: 0, cpu: 1, memory: 1, neighbours: [] },
  });
  expect(((await res.json()) as { status: string }).status).toBe("healthy");
  await expect.poll(async () => (await topology(page, cluster)).servers.find((s) => s.id === server.id)?.status).toBe("healthy");
  return { server, tokyo: `Tokyo ${tag}` };
}

test("disabling the only healthy server of a route asks, naming the route and its users", async ({ page, cluster }) => {
  const { server } = await soloHealthyServer(page, cluster);
  const enabled = async () => (await topology(page, cluster)).servers.find((s) => s.id === server.id)!.enabled;
  await page.goto(`/clusters/${cluster.id}/servers`);

  await page.getByRole("button", { name: `Disable server ${server.name}` }).click();
  const dialog = page.getByRole("dialog", { name: `Disable server ${server.name}?` });
  await expect(dialog.getByRole("list", { name: "Affected routes" })).toHaveText(/🇯🇵 Japan — no available inbound left/);
  // The demo cluster's five subscribers all get every route.
  await expect(dialog.getByTestId("impact-users")).toHaveText("5 users get this route.");
  await dialog.getByRole("button", { name: "Cancel" }).click();
  await expect(dialog).toBeHidden();
  expect(await enabled()).toBe(true);

  // Asked again, and confirmed: the server is disabled.
  await page.getByRole("button", { name: `Disable server ${server.name}` }).click();
  await dialog.getByRole("button", { name: "Disable server" }).click();
  await expect(dialog).toBeHidden();
  await expect.poll(enabled).toBe(false);
  await expect(toasts(page).getByRole("status").filter({ hasText: `Server ${server.name} disabled` })).toBeVisible();
  // Enabling needs no question.
  await page.getByRole("button", { name: `Enable server ${server.name}` }).click();
  await expect.poll(enabled).toBe(true);
});

test("dragging a route's last available inbound out asks first; Cancel keeps it; its Undo asks the same", async ({ page, cluster }) => {
  const { tokyo } = await soloHealthyServer(page, cluster);
  await openDiagram(page, cluster);
  await drag(page, chip(page, tokyo), routeBox(page, "🇺🇸 USA"));
  const dialog = page.getByRole("dialog", { name: `Move ${tokyo} to route 🇺🇸 USA?` });
  await expect(dialog.getByRole("list", { name: "Affected routes" })).toHaveText(/🇯🇵 Japan/);
  await expect(dialog.getByTestId("impact-users")).toHaveText("5 users get this route.");
  await dialog.getByRole("button", { name: "Cancel" }).click();
  expect(await routeOf(page, cluster, tokyo)).toBe("🇯🇵 Japan");

  await drag(page, chip(page, tokyo), routeBox(page, "🇺🇸 USA"));
  await dialog.getByRole("button", { name: "Move anyway" }).click();
  await expect.poll(() => routeOf(page, cluster, tokyo)).toBe("🇺🇸 USA");

  // Undo takes it out of 🇺🇸 USA, whose only available inbound it now is: that asks too.
  const toast = toasts(page).getByRole("status").filter({ hasText: tokyo });
  await toast.getByRole("button", { name: "Undo" }).click();
  const undoDialog = page.getByRole("dialog", { name: `Undo: move ${tokyo} back to route 🇯🇵 Japan?` });
  await expect(undoDialog.getByRole("list", { name: "Affected routes" })).toHaveText(/🇺🇸 USA/);
  expect(await routeOf(page, cluster, tokyo)).toBe("🇺🇸 USA");
  await undoDialog.getByRole("button", { name: "Move anyway" }).click();
  await expect.poll(() => routeOf(page, cluster, tokyo)).toBe("🇯🇵 Japan");
  await expect(toast).toContainText(`Undone: ${tokyo} is back in 🇯🇵 Japan.`);
});

test("a viewer sees none of the risky actions", async ({ page, browser, cluster }) => {
  const wide = { width: 1440, height: 900 };
  await asViewer(page, browser, async (viewer) => {
    await viewer.goto(`/clusters/${cluster.id}/servers`);
    await expect(viewer.getByRole("region", { name: "Server de-fra-1" })).toBeVisible();
    await expect(viewer.getByRole("button", { name: /^(Disable|Enable|Delete) server/ })).toHaveCount(0);
    await expect(viewer.getByRole("button", { name: /^Delete inbound/ })).toHaveCount(0);
    await viewer.goto(`/clusters/${cluster.id}`);
    await expect(routeBox(viewer, "🇺🇸 USA")).toBeVisible();
    await expect(viewer.getByRole("button", { name: /^Actions for route/ })).toHaveCount(0);
    await expect(viewer.getByRole("button", { name: "New route" })).toHaveCount(0);
    // Chips cannot be picked up: a drag changes nothing.
    await drag(viewer, chip(viewer, "🇺🇸 Dallas"), routeBox(viewer, "🇩🇪 Germany"));
    await expect(viewer.getByRole("dialog")).toHaveCount(0);
    expect(await routeOf(page, cluster, "🇺🇸 Dallas")).toBe("🇺🇸 USA");
  }, wide);
});

test("deleting a route or a route's last available inbound names what users lose", async ({ page, cluster }) => {
  const { server, tokyo } = await soloHealthyServer(page, cluster);
  await page.goto(`/clusters/${cluster.id}/servers`);
  await page.getByRole("region", { name: `Server ${server.name}` }).getByRole("button", { name: `Delete inbound ${tokyo}` }).click();
  const confirmInbound = page.getByRole("dialog", { name: `Delete inbound ${tokyo}?` });
  await expect(confirmInbound.getByRole("list", { name: "Affected routes" })).toHaveText(/🇯🇵 Japan — no available inbound left/);
  await expect(confirmInbound.getByTestId("impact-users")).toHaveText("5 users get this route.");
  await confirmInbound.getByRole("button", { name: "Cancel" }).click();

  await page.goto(`/clusters/${cluster.id}`);
  // The Japan box sits below the first view: bring it in as an operator would, from its warning.
  await expandWarnings(page);
  await page.getByRole("region", { name: "Warnings" }).getByRole("button", { name: "Show route 🇯🇵 Japan" }).click();
  // A live refetch can close the menu just opened, so open it until its item shows.
  await expect(async () => {
    await page.getByRole("button", { name: "Actions for route 🇯🇵 Japan" }).click();
    await expect(page.getByRole("menuitem", { name: "Delete route…" })).toBeVisible({ timeout: 2_000 });
  }).toPass({ timeout: 60_000 });
  await page.getByRole("menuitem", { name: "Delete route…" }).click();
  const confirmRoute = page.getByRole("dialog", { name: "Delete route 🇯🇵 Japan?" });
  await expect(confirmRoute.getByRole("list", { name: "Affected routes" })).toHaveText(/🇯🇵 Japan — deleted/);
  await expect(confirmRoute.getByTestId("impact-users")).toHaveText("5 users get this route.");
  await confirmRoute.getByRole("button", { name: "Delete route" }).click();
  await expect(toasts(page).getByRole("status").filter({ hasText: "Route 🇯🇵 Japan deleted" })).toBeVisible();
  expect((await topology(page, cluster)).routes.map((r) => r.name)).not.toContain("🇯🇵 Japan");
});

test("a route's actions near the bottom of the diagram open upwards, inside the diagram and on top", async ({ page, cluster }) => {
  await page.goto(`/clusters/${cluster.id}`);
  const diagram = page.getByTestId("diagram");
  const button = page.getByRole("button", { name: "Actions for route 🇺🇸 USA" });
  await expect(button).toBeVisible();
  const frame = (await diagram.boundingBox())!;
  const at = (await button.boundingBox())!;
  // Pan the empty pane (grabbed left of the boxes, near the top) so the menu button sits 30 px above the diagram's bottom edge.
  const dy = frame.y + frame.height - 30 - (at.y + at.height / 2);
  const grab = { x: frame.x + 8, y: frame.y + 40 };
  await page.mouse.move(grab.x, grab.y);
  await page.mouse.down();
  for (let i = 1; i <= 8; i++) await page.mouse.move(grab.x, grab.y + (dy * i) / 8);
  await page.mouse.up();
  const moved = (await button.boundingBox())!;
  expect(moved.y + moved.height).toBeGreaterThan(frame.y + frame.height - 60);
  await button.click();
  const item = page.getByRole("menuitem", { name: "Delete route…" });
  await expect(item).toBeVisible();
  const box = (await item.boundingBox())!;
  expect(box.y + box.height).toBeLessThanOrEqual(frame.y + frame.height);
  expect(box.y + box.height).toBeLessThanOrEqual(moved.y);
  // On top of the boxes around it: it takes the click.
  await item.click();
  const confirm = page.getByRole("dialog", { name: "Delete route 🇺🇸 USA?" });
  await confirm.getByRole("button", { name: "Cancel" }).click();
  await expect(confirm).toBeHidden();
});
