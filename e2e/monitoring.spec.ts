/**
 * Monitoring end to end: a real app instance of its own (fast sweep), a simulated fleet in
 * this process (real TCP listeners, real agent reports), faults switched at run time.
 * Intervals: reports every 2 s, probes every 1 s with unhealthyThreshold 2.
 */
import { test, expect } from "@playwright/test";
import { startApp, type AppProcess } from "../scripts/harness/app";
import { loginToApp, type AppClient, type HealthServerRow } from "../scripts/harness/trpc";
import { enrolFleet, takeOverCluster } from "../scripts/fleet/enrol";
import { startFleet, type Fleet } from "../server/demo/fleet";

const ADMIN = { username: "mon-admin", password: "mon-admin-password" };
const PROBE = { intervalS: 1, timeoutS: 1, unhealthyThreshold: 2, healthyThreshold: 1 };
const REPORT_S = 2;
/** A report is a hang only past this: a busy machine answered the 2 s default too late and the fleet went no-data. */
const REPORT_TIMEOUT_MS = 30_000;

type HealthServer = Pick<HealthServerRow, "id" | "name" | "status" | "label" | "reason" | "failStreak" | "probe" | "meshReason" | "unreliableWitness">;
interface Health {
  servers: HealthServer[];
}

test.describe.configure({ mode: "serial" });
test.setTimeout(300_000);

let app: AppProcess;
let api: AppClient;
const fleets: Fleet[] = [];

test.beforeAll(async () => {
  test.setTimeout(300_000);
  app = await startApp({ ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password, ROUTEBOARD_DEMO: "0", ROUTEBOARD_SWEEP_MS: "250" });
  api = await loginToApp(app.url, ADMIN.username, ADMIN.password);
});

test.afterAll(async () => {
  await Promise.all(fleets.map((f) => f.stop()));
  await app?.stop();
});

async function health(clusterId: string): Promise<Health> {
  return api.query<Health>("monitoring.health", { clusterId });
}

async function statusOf(clusterId: string, serverId: string): Promise<HealthServer> {
  const h = await health(clusterId);
  return h.servers.find((s) => s.id === serverId)!;
}

async function fastCluster(clusterId: string): Promise<void> {
  await api.mutation("monitoring.setReportInterval", { clusterId, seconds: REPORT_S });
  await api.mutation("monitoring.setProbeConfig", { clusterId, config: PROBE });
}

/** The demo cluster (routes, subscribers), taken over by a local fleet, all healthy. */
async function demoWithFleet(name: string) {
  const c = await api.mutation<{ id: string }>("clusters.createDemo", { name });
  await fastCluster(c.id);
  const enrolled = await takeOverCluster(api, c.id);
  const fleet = await startFleet(enrolled.plan, { appUrl: app.url, reportIntervalMs: REPORT_S * 1000, reportTimeoutMs: REPORT_TIMEOUT_MS });
  fleets.push(fleet);
  await allHealthy(c.id, fleet, 6);
  return { clusterId: c.id, fleet, plan: enrolled.plan };
}

async function allHealthy(clusterId: string, fleet: Fleet, n: number): Promise<void> {
  try {
    await expect.poll(async () => (await health(clusterId)).servers.map((s) => s.status), { timeout: 60_000 }).toEqual(Array(n).fill("healthy"));
  } catch (err) {
    const h = await health(clusterId);
    const sims = fleet.state().servers.map((s) => `${s.name}: sent ${s.reportsSent}, failed ${s.reportsFailed} (${s.lastReportError ?? "-"})`);
    throw new Error(`${(err as Error).message}\nstatuses: ${h.servers.map((s) => `${s.name}=${s.status} (${s.reason})`).join("; ")}\nfleet: ${sims.join("; ")}`);
  }
}

/** Waits until every simulated server (but `except`) has had `n` more reports stored than now. */
async function reportsStored(fleet: Fleet, n: number, except?: string): Promise<void> {
  const sent = (): Map<string, number> => new Map(fleet.state().servers.filter((s) => s.serverId !== except).map((s) => [s.serverId, s.reportsSent]));
  const start = sent();
  await expect
    .poll(() => Math.min(...[...sent()].map(([id, count]) => count - start.get(id)!)), { timeout: 10 * n * REPORT_S * 1000 })
    .toBeGreaterThanOrEqual(n);
}

async function subscriberTokens(clusterId: string): Promise<string[]> {
  // clusters.createDemo publishes only "topology", and the subscription snapshot reloads
  // subscribers only on "subscribers" events, so a new demo cluster's tokens answer 404 until
  // some subscriber changes. Creating one here triggers that reload.
  await api.mutation("subscribers.create", { clusterId, name: `probe-${Date.now()}` });
  const list = await api.query<Array<{ token: string }> | { subscribers: Array<{ token: string }> }>("subscribers.list", { clusterId });
  const rows = Array.isArray(list) ? list : list.subscribers;
  return rows.map((r) => r.token);
}

/** Server names in every subscriber's subscription (JSON format). */
async function serversInSubscriptions(tokens: string[]): Promise<Set<string>> {
  const names = new Set<string>();
  for (const t of tokens) {
    const res = await fetch(`${app.url}/sub/${t}?format=json`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { routes: Array<{ server: string }> };
    for (const r of body.routes) names.add(r.server);
  }
  return names;
}

test("a dead listener makes the server probe-failing and drops it from every subscription; it comes back", async () => {
  const { clusterId, fleet, plan } = await demoWithFleet("mon dead listener");
  const victim = plan.servers.find((s) => s.name === "de-ber-1")!;
  const tokens = await subscriberTokens(clusterId);
  expect(tokens.length).toBeGreaterThan(0);

  // The agent does not notice (firewalled): only the active probe can tell.
  // How soon is the benchmarks' business (a busy machine stretches it); here: it happens, and
  // only after `unhealthyThreshold` failed probes in a row.
  await fleet.get(victim.serverId)!.setFault("firewalled", true);
  await expect.poll(async () => (await statusOf(clusterId, victim.serverId)).status, { timeout: 60_000, intervals: [100] }).toBe("probe-failing");
  const s = await statusOf(clusterId, victim.serverId);
  expect(s.label).toBe("Health probe failing");
  expect(s.reason).toMatch(/connection refused/);
  expect(s.failStreak).toBeGreaterThanOrEqual(PROBE.unhealthyThreshold);
  await expect.poll(async () => (await serversInSubscriptions(tokens)).has("de-ber-1")).toBe(false);

  // One streak of successes brings it back: no redeploy, nothing to click.
  await fleet.get(victim.serverId)!.clearFaults();
  await expect.poll(async () => (await statusOf(clusterId, victim.serverId)).status, { timeout: 60_000 }).toBe("healthy");

  // A listener the agent itself reports dead: unavailable, also out of every subscription.
  await fleet.get(victim.serverId)!.setFault("listenerDown", true);
  await expect.poll(async () => (await statusOf(clusterId, victim.serverId)).status, { timeout: 60_000 }).toBe("unavailable");
  expect(await serversInSubscriptions(tokens)).not.toContain("de-ber-1");
  await fleet.get(victim.serverId)!.clearFaults();
  await expect.poll(async () => (await statusOf(clusterId, victim.serverId)).status, { timeout: 60_000 }).toBe("healthy");
});

test("silence makes a server no-data after three report intervals", async () => {
  const { clusterId, fleet, plan } = await demoWithFleet("mon silence");
  const victim = plan.servers[0]!;
  const sim = fleet.get(victim.serverId)!;
  await sim.setFault("stopReporting", true);
  const t0 = Date.now();
  await expect.poll(async () => (await statusOf(clusterId, victim.serverId)).status, { timeout: 60_000, intervals: [100] }).toBe("no-data");
  // 3 intervals after the last report (which came at most one interval before the fault):
  // never sooner. (A busy machine only makes it later, so this bound cannot flake.)
  expect(Date.now() - t0).toBeGreaterThanOrEqual(2 * REPORT_S * 1000);
  expect((await statusOf(clusterId, victim.serverId)).label).toBe("No data from server");
  await sim.clearFaults();
  await expect.poll(async () => (await statusOf(clusterId, victim.serverId)).status, { timeout: 60_000 }).toBe("healthy");
});

test("mesh: two of four observers failing make a server unreachable; an observer failing everything is ignored", async () => {
  const enrolled = await enrolFleet(api, { servers: 5, clusterName: "mon mesh" });
  const clusterId = enrolled.clusterId;
  await fastCluster(clusterId);
  const fleet = await startFleet(enrolled.plan, { appUrl: app.url, reportIntervalMs: REPORT_S * 1000, reportTimeoutMs: REPORT_TIMEOUT_MS });
  fleets.push(fleet);
  const [target, o1, o2, o3, o4] = enrolled.plan.servers.map((s) => s.serverId) as [string, string, string, string, string];
  await allHealthy(clusterId, fleet, 5);

  // one unreliable observer (o4 fails everything) + one honest vote (o1) against the target:
  // o4's votes are discarded, 1 of 3 usable is not enough
  for (const other of [target, o1, o2, o3]) await fleet.get(other)!.setFault("unreachableFrom", true, { observers: [o4] });
  await fleet.get(target)!.setFault("unreachableFrom", true, { observers: [o1, o4] });
  await expect
    .poll(async () => (await health(clusterId)).servers.find((s) => s.id === o4)!.unreliableWitness, { timeout: 60_000 })
    .toBe(true);
  await expect.poll(async () => (await statusOf(clusterId, target)).meshReason ?? "", { timeout: 60_000 }).toMatch(/unreliable observer/);
  // Until every observer has had four more reports stored (more than the three-check streak):
  // a report is acknowledged only once its batch committed, so each vote has been counted.
  await reportsStored(fleet, 4);
  expect((await statusOf(clusterId, target)).status).toBe("healthy");
  for (const s of fleet.servers.values()) await s.clearFaults();

  // two of four honest observers failing ≥ 3 checks in a row: unreachable
  await fleet.get(target)!.setFault("unreachableFrom", true, { observers: [o1, o2] });
  await expect.poll(async () => (await statusOf(clusterId, target)).status, { timeout: 60_000 }).toBe("unreachable");
  const s = await statusOf(clusterId, target);
  expect(s.label).toBe("Unreachable from your servers");
  expect(s.reason).toMatch(/2 of 4 usable observers/);
  await fleet.get(target)!.clearFaults();
  await expect.poll(async () => (await statusOf(clusterId, target)).status, { timeout: 60_000 }).toBe("healthy");
});

test("a disabled server is never probed into rotation", async () => {
  const { clusterId, fleet, plan } = await demoWithFleet("mon disabled");
  const victim = plan.servers.find((s) => s.name === "nl-rtm-1")!;
  const tokens = await subscriberTokens(clusterId);
  await api.mutation("servers.setEnabled", { serverId: victim.serverId, enabled: false });
  await expect.poll(async () => (await statusOf(clusterId, victim.serverId)).status).toBe("disabled");
  const probedAt = JSON.stringify((await statusOf(clusterId, victim.serverId)).probe?.at ?? null);
  // Several probe rounds and reports later (seen on a sibling, probed in the same sweeps):
  // still disabled, not probed, in no subscription.
  const sibling = plan.servers.find((s) => s.serverId !== victim.serverId)!.serverId;
  const siblingProbes = new Set<string>();
  await expect
    .poll(
      async () => {
        siblingProbes.add(JSON.stringify((await statusOf(clusterId, sibling)).probe?.at ?? null));
        return siblingProbes.size;
      },
      { timeout: 60_000, intervals: [250] },
    )
    .toBeGreaterThan(3);
  await reportsStored(fleet, 2, victim.serverId);
  const s = await statusOf(clusterId, victim.serverId);
  expect(s.status).toBe("disabled");
  expect(s.label).toBe("Disabled by operator");
  expect(JSON.stringify(s.probe?.at ?? null)).toBe(probedAt);
  expect(await serversInSubscriptions(tokens)).not.toContain("nl-rtm-1");
});

test("browser: a fault turns the server's colour and label without a reload", async ({ page }) => {
  const { clusterId, fleet, plan } = await demoWithFleet("mon browser");
  const victim = plan.servers.find((s) => s.name === "us-dal-1")!;
  const login = await page.request.post(`${app.url}/api/trpc/auth.login`, { data: { json: ADMIN } });
  expect(login.ok()).toBe(true);

  // the diagram: the server's node shows its status label
  await page.goto(`${app.url}/clusters/${clusterId}`);
  const node = page.locator("[data-status]", { hasText: "us-dal-1" }).first();
  await expect(node).toHaveAttribute("data-status", "healthy", { timeout: 60_000 });
  await expect(node).toContainText("Healthy");
  await fleet.get(victim.serverId)!.setFault("serviceDown", true);
  // Next report (2 s) + sweep + live refetch; generous for a loaded CI machine.
  await expect(node).toHaveAttribute("data-status", "unavailable", { timeout: 60_000 });
  await expect(node).toContainText("Server unavailable");

  // the health page: same, live
  await page.goto(`${app.url}/clusters/${clusterId}/health`);
  const row = page.getByRole("row", { name: "Server us-dal-1" });
  await expect(row.getByTestId("health-status")).toHaveText("Server unavailable");
  const redBadge = await row.getByTestId("health-status").evaluate((el) => getComputedStyle(el).color);
  await fleet.get(victim.serverId)!.clearFaults();
  await expect(row.getByTestId("health-status")).toHaveText("Healthy", { timeout: 60_000 });
  await expect(row).toHaveAttribute("data-status", "healthy");
  expect(await row.getByTestId("health-status").evaluate((el) => getComputedStyle(el).color)).not.toBe(redBadge);
});

/** A loopback port nothing listens on: bound once by the OS, then released. */
async function closedPort(): Promise<number> {
  const net = await import("node:net");
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

test("browser: a new server whose probes fail before any success is probe-failing, with the count and last error in the tooltip", async ({ page }) => {
  const c = await api.mutation<{ id: string }>("clusters.create", { name: "mon never healthy" });
  await fastCluster(c.id);
  const s = await api.mutation<{ id: string }>("servers.create", { clusterId: c.id, name: "fresh-1", address: "127.0.0.1" });
  // No agent, and nothing listens on the inbound's port: every probe is refused.
  await api.mutation("inbounds.create", { serverId: s.id, name: "fresh-in", port: await closedPort(), security: "none" });

  await expect.poll(async () => (await statusOf(c.id, s.id)).status, { timeout: 60_000, intervals: [200] }).toBe("probe-failing");
  const h = await statusOf(c.id, s.id);
  expect(h.label).toBe("Health probe failing");
  expect(h.reason).toMatch(/^Health probe has never passed \(\d+ failures? in a row\); last error: .*refused/);

  const login = await page.request.post(`${app.url}/api/trpc/auth.login`, { data: { json: ADMIN } });
  expect(login.ok()).toBe(true);

  // the diagram: the server's status label says so, its tooltip gives the count and the error
  await page.goto(`${app.url}/clusters/${c.id}`);
  const node = page.locator("[data-status]", { hasText: "fresh-1" }).first();
  await expect(node).toHaveAttribute("data-status", "probe-failing", { timeout: 60_000 });
  await expect(node.getByTestId("server-status")).toHaveText("Health probe failing");
  const label = node.getByTestId("server-status").locator("..");
  await expect(label).toHaveAttribute("title", /never passed \(\d+ failures? in a row\); last error: .*refused/);

  // the health page: the same label and tooltip
  await page.goto(`${app.url}/clusters/${c.id}/health`);
  const badge = page.getByRole("row", { name: "Server fresh-1" }).getByTestId("health-status");
  await expect(badge).toHaveText("Health probe failing");
  await expect(badge).toHaveAttribute("title", /never passed \(\d+ failures? in a row\); last error: .*refused/);
});

test("browser: a new server whose probe passes before its agent ever reported waits for its first check, as its agent dialog says", async ({ page }) => {
  const net = await import("node:net");
  // Something answers on the inbound's port (the core the agent is about to start, say), but no agent has reported.
  const listener = net.createServer((socket) => socket.end());
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  try {
    const port = (listener.address() as { port: number }).port;
    const c = await api.mutation<{ id: string }>("clusters.create", { name: "mon probe before report" });
    await fastCluster(c.id);
    const s = await api.mutation<{ id: string }>("servers.create", { clusterId: c.id, name: "fresh-2", address: "127.0.0.1" });
    await api.mutation("inbounds.create", { serverId: s.id, name: "fresh-2-in", port, security: "none" });

    // The probe passed: still "Waiting for first check" (never "No data from server"), and it says why.
    await expect.poll(async () => (await statusOf(c.id, s.id)).reason, { timeout: 60_000, intervals: [200] }).toMatch(/^The health probe passes; waiting for the agent's first report/);
    const h = await statusOf(c.id, s.id);
    expect(h.status).toBe("pending");
    expect(h.label).toBe("Waiting for first check");

    const login = await page.request.post(`${app.url}/api/trpc/auth.login`, { data: { json: ADMIN } });
    expect(login.ok()).toBe(true);
    await page.goto(`${app.url}/clusters/${c.id}/health`);
    const badge = page.getByRole("row", { name: "Server fresh-2" }).getByTestId("health-status");
    await expect(badge).toHaveText("Waiting for first check");
    await expect(badge).toHaveAttribute("title", /waiting for the agent's first report/);
  } finally {
    await new Promise<void>((resolve) => listener.close(() => resolve()));
  }
});
