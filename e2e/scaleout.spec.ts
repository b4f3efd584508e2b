/**
 * Several app instances on one PostgreSQL (DESIGN §5): changes propagate between instances
 * within a second, exactly one instance probes and another takes over when it dies, and a
 * database restart is survived with subscriptions answered throughout and nothing lost.
 */
import { test, expect, request as playwrightRequest, type APIRequestContext } from "@playwright/test";
import { startApp, type AppProcess } from "../scripts/harness/app";
import { startPg, type PgServer } from "../scripts/harness/postgres";
import { login, trpcMutation, trpcQuery, TrpcCallError } from "../scripts/harness/trpc";

test.describe.configure({ mode: "serial" });

const ADMIN = { username: "ops", password: "scale-out-password" };
const SHARED = {
  ADMIN_USERNAME: ADMIN.username,
  ADMIN_PASSWORD: ADMIN.password,
  SESSION_SECRET: "a-shared-session-secret-of-at-least-32-chars",
  ROUTEBOARD_DEMO: "1",
  ROUTEBOARD_LEADER_RETRY_MS: "500",
};

interface Topo {
  cluster: { id: string };
  routes: Array<{ id: string; name: string }>;
  inbounds: Array<{ id: string; name: string; routeId: string | null; version: number }>;
}
interface SubJson {
  routes: Array<{ routeId: string; route: string; inboundId: string; inbound: string }>;
}

let pg: PgServer;
let a: AppProcess;
let b: AppProcess;
let apiA: APIRequestContext;
let apiB: APIRequestContext;
let clusterId: string;
let token: string;

async function health(app: AppProcess) {
  const res = await fetch(`${app.url}/api/health`);
  return (await res.json()) as { ok: boolean; instance: { id: string; prober: boolean; changeBus: string } };
}

async function subJson(app: AppProcess): Promise<SubJson> {
  const res = await fetch(`${app.url}/sub/${token}?format=json`);
  expect(res.status).toBe(200);
  return (await res.json()) as SubJson;
}

test.beforeAll(async () => {
  test.setTimeout(300_000);
  pg = await startPg();
  a = await startApp({ ...SHARED, DATABASE_URL: pg.url });
  b = await startApp({ ...SHARED, DATABASE_URL: pg.url });
  apiA = await playwrightRequest.newContext({ baseURL: a.url });
  apiB = await playwrightRequest.newContext({ baseURL: b.url });
  await login(apiA, ADMIN.username, ADMIN.password);
  // The session secret is shared, so instance B accepts the session too.
  await login(apiB, ADMIN.username, ADMIN.password);
  const clusters = await trpcQuery<Array<{ id: string; name: string }>>(apiA, "clusters.list");
  clusterId = clusters.find((c) => c.name === "Demo cluster")!.id;
  const subs = await trpcQuery<Array<{ token: string }> | { items: Array<{ token: string }> }>(apiA, "subscribers.list", { clusterId });
  token = (Array.isArray(subs) ? subs : subs.items)[0]!.token;
});

test.afterAll(async () => {
  await apiA?.dispose();
  await apiB?.dispose();
  await a?.stop();
  await b?.stop();
  pg?.stop();
});

test("a move on instance A shows in instance B's subscriptions and dashboard", async () => {
  const before = await subJson(b);
  const usa = before.routes.find((r) => r.route === "🇺🇸 USA")!;
  const topo = await trpcQuery<Topo>(apiA, "topology.get", { clusterId });
  const germany = topo.routes.find((r) => r.name === "🇩🇪 Germany")!;
  const chosen = topo.inbounds.find((i) => i.id === usa.inboundId)!;
  // How soon is the benchmarks' business; here: B hears it through the shared change bus.
  await trpcMutation(apiA, "topology.moveInbound", { inboundId: chosen.id, toRouteId: germany.id, expectedVersion: chosen.version });
  await expect.poll(async () => (await subJson(b)).routes.find((r) => r.route === "🇺🇸 USA")?.inboundId, { intervals: [25] }).not.toBe(chosen.id);
  await expect
    .poll(async () => (await trpcQuery<Topo>(apiB, "topology.get", { clusterId })).inbounds.find((i) => i.id === chosen.id)?.routeId, { intervals: [25] })
    .toBe(germany.id);
  const live = (await health(b)).instance.changeBus;
  expect(live).toBe("postgres");
});

test("exactly one instance probes; when it dies the other takes over", async () => {
  const intervalS = 2;
  await trpcMutation(apiA, "monitoring.setProbeConfig", { clusterId, config: { intervalS, timeoutS: 1 } });
  const [ha, hb] = await Promise.all([health(a), health(b)]);
  expect([ha.instance.prober, hb.instance.prober].filter(Boolean)).toHaveLength(1);
  const leader = ha.instance.prober ? a : b;
  const follower = leader === a ? b : a;
  leader.child.kill("SIGKILL");
  await expect.poll(async () => (await health(follower)).instance.prober, { timeout: 60_000, intervals: [100] }).toBe(true);
  // Bring a second instance back for the next test.
  await leader.stop();
  const restarted = await startApp({ ...SHARED, DATABASE_URL: pg.url });
  if (leader === a) {
    a = restarted;
    apiA = await playwrightRequest.newContext({ baseURL: a.url });
    await login(apiA, ADMIN.username, ADMIN.password);
  } else {
    b = restarted;
    apiB = await playwrightRequest.newContext({ baseURL: b.url });
    await login(apiB, ADMIN.username, ADMIN.password);
  }
  const [h1, h2] = await Promise.all([health(a), health(b)]);
  expect([h1.instance.prober, h2.instance.prober].filter(Boolean)).toHaveLength(1);
});

test("a database restart is survived: subscriptions answered throughout, writes refused clearly, nothing lost", async ({ browser }) => {
  test.setTimeout(300_000);
  // An operator has the dashboard open on instance B during the outage.
  const context = await browser.newContext({ baseURL: b.url });
  await login(context.request, ADMIN.username, ADMIN.password);
  const dashboard = await context.newPage();
  await dashboard.goto(`/clusters/${clusterId}`);
  await expect(dashboard.getByRole("region", { name: "Route 🇺🇸 USA" })).toBeVisible();
  const banner = dashboard.getByRole("alert").filter({ hasText: "The database is unavailable" });
  await expect(banner).toHaveCount(0);
  // A write saved before the outage.
  const created = await trpcMutation<{ id: string; token?: string | null }>(apiA, "subscribers.create", { clusterId, name: "saved-before-outage" });
  const beforeCount = (await subJson(a)).routes.length;

  let answered = 0;
  let failures = 0;
  let staleSeen = 0;
  let stop = false;
  const hammer = (async () => {
    while (!stop) {
      for (const app of [a, b]) {
        try {
          const res = await fetch(`${app.url}/sub/${token}?format=json`);
          const body = (await res.json()) as SubJson;
          if (res.status === 200 && body.routes.length === beforeCount) answered++;
          else failures++;
          if (res.headers.get("x-routeboard-stale") === "1") staleSeen++;
        } catch {
          failures++;
        }
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();

  let writeDuringOutage: unknown = null;
  const restart = pg.restart(6000);
  // While the database is down the dashboard says so, and a write fails with a clear message.
  await expect(banner).toBeVisible();
  writeDuringOutage = await trpcMutation(apiB, "clusters.create", { name: "during outage" }).catch((e: unknown) => e);
  const healthDuring = await fetch(`${a.url}/api/health`);
  await restart;
  // Everything resumes: a write goes through on both instances.
  await expect
    .poll(async () => {
      try {
        await trpcMutation(apiA, "clusters.rename", { clusterId, name: "Demo cluster" });
        return "ok";
      } catch (e) {
        return (e as Error).message;
      }
    }, { timeout: 60_000 })
    .toBe("ok");
  // And subscriptions go on being answered after it, from both instances.
  const answeredAtRecovery = answered;
  await expect.poll(() => answered, { timeout: 60_000 }).toBeGreaterThan(answeredAtRecovery + 20);
  stop = true;
  await hammer;

  expect(failures).toBe(0);
  expect(answered).toBeGreaterThan(50);
  expect(staleSeen).toBeGreaterThan(0);
  expect(writeDuringOutage).toBeInstanceOf(TrpcCallError);
  expect((writeDuringOutage as TrpcCallError).status).toBe(503);
  expect((writeDuringOutage as TrpcCallError).message).toMatch(/database is unavailable/i);
  expect(healthDuring.status).toBe(503);
  const subs = await trpcQuery<Array<{ id: string; name: string }> | { items: Array<{ id: string; name: string }> }>(apiB, "subscribers.list", { clusterId });
  const list = Array.isArray(subs) ? subs : subs.items;
  expect(list.find((s) => s.id === created.id)?.name).toBe("saved-before-outage");
  // Nothing half-written: the refused cluster does not exist.
  const clusters = await trpcQuery<Array<{ name: string }>>(apiB, "clusters.list");
  expect(clusters.find((c) => c.name === "during outage")).toBeUndefined();
  await expect(banner).toHaveCount(0, { timeout: 60_000 });
  await context.close();
  // Answers are fresh again.
  const fresh = await fetch(`${b.url}/sub/${token}`);
  expect(fresh.headers.get("x-routeboard-stale")).toBeNull();
});
