/**
 * `npm run bench:ui` — how the cluster diagram performs at scale, in a real browser.
 *
 * Starts the built app (run `npm run build` first) on a free port with a fresh data folder,
 * creates a synthetic cluster of 500 servers, 2,000 inbounds and 100 routes, then measures in
 * Debian's Chromium:
 *   - time to first render of the diagram (navigation → route boxes and chips on screen),
 *     once cold and the median of a few warm loads;
 *   - drop-to-saved latency: median of 20 pointer drops, from the mouse release to the
 *     response of topology.moveInbound (and, for reference, to the box showing the move).
 *   - node re-renders on a refetch (on a fresh page, after the drops, with probes off): of
 *     the boxes on screen, how many re-render when a refetch changes nothing they draw
 *     (goal 0) and when it changes one inbound (goal 2: its server's and its route's).
 * Prints one JSON object. The app is stopped by its PID at the end.
 *
 * Options: --servers N --inbounds-per-server N --routes N --drops N. Diagnostics (env):
 * BENCH_DEBUG=1 logs requests and each drop, BENCH_PROFILE=1 prints a CPU profile of one
 * drop (BENCH_PROFILE=render: the requests and main-thread time of each first render, and
 * its CPU profile in the temporary folder),
 * BENCH_TRACE=<file.json> a Chromium performance trace of the last warm load,
 * BENCH_SCREENSHOT=<file.png> saves screenshots (first drag, failure).
 */
import { writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type Page } from "@playwright/test";
import { startApp } from "./harness/app";
import { installRenderCounter, measureRefetchRenders } from "./harness/render-counter";
import { loginToApp } from "./harness/trpc";
import { UNASSIGNED_MAX_ITEMS } from "../components/diagram/layout";

const ADMIN = { username: "bench", password: "bench-admin-password" };
const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"];

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : NaN;
  return Number.isFinite(v) && v >= 0 ? v : fallback;
}
const SIZE = { servers: arg("servers", 500), inboundsPerServer: arg("inbounds-per-server", 4), routes: arg("routes", 100) };
const DROPS = arg("drops", 20);

const log = (msg: string) => process.stderr.write(`bench-ui: ${msg}\n`);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}
const round = (n: number) => Math.round(n * 10) / 10;

interface Topo {
  servers: Array<{ id: string; name: string }>;
  inbounds: Array<{ id: string; name: string; serverId: string; routeId: string | null }>;
  routes: Array<{ id: string; name: string }>;
}

/** Navigation → first route box and first chip rendered; in ms from the navigation start. */
async function firstRender(page: Page, url: string, label: string): Promise<number> {
  await page.goto(url, { waitUntil: "commit" });
  const profiling = process.env.BENCH_PROFILE === "render";
  const cdp = profiling ? await page.context().newCDPSession(page) : null;
  if (cdp) {
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: 200 });
    await cdp.send("Profiler.start");
  }
  const handle = await page.waitForFunction(
    () => {
      const route = document.querySelector('section[aria-label^="Route "]');
      const chip = document.querySelector("[data-inbound-id] button");
      return route && chip ? performance.now() : null;
    },
    undefined,
    { polling: "raf", timeout: 30_000 },
  );
  const at = (await handle.jsonValue()) as number;
  if (cdp) {
    const { profile } = await cdp.send("Profiler.stop");
    await cdp.detach();
    const file = path.join(os.tmpdir(), `bench-ui-${label.replace(" ", "-")}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    log(`${label}: CPU profile in ${file}`);
    // What the page fetched, on the page's own clock, then where its main thread went.
    const requests = await page.evaluate(() =>
      performance
        .getEntriesByType("resource")
        .map((e) => e as PerformanceResourceTiming)
        .map((e) => ({ name: e.name.replace(location.origin, "").slice(0, 90), start: e.startTime, end: e.responseEnd, size: e.encodedBodySize })),
    );
    const nav = await page.evaluate(() => {
      const n = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming | undefined;
      return n ? { responseEnd: n.responseEnd, domInteractive: n.domInteractive, domContentLoaded: n.domContentLoadedEventEnd } : null;
    });
    log(`${label}: rendered at ${round(at)} ms; document ${JSON.stringify(nav && { responseEnd: round(nav.responseEnd), domInteractive: round(nav.domInteractive), dcl: round(nav.domContentLoaded) })}`);
    for (const r of requests.sort((a, b) => a.start - b.start)) log(`  ${round(r.start)}–${round(r.end)} ms ${r.name} (${r.size} B)`);
    const self = new Map<string, number>();
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    let total = 0;
    profile.samples!.forEach((id, i) => {
      const n = byId.get(id)!;
      const ms = (profile.timeDeltas![i] ?? 0) / 1000;
      if (n.callFrame.functionName !== "(idle)") total += ms;
      const key = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.split("/").pop()}:${n.callFrame.columnNumber}`;
      self.set(key, (self.get(key) ?? 0) + ms);
    });
    log(`  busy ${Math.round(total)} ms of the main thread; top self time:`);
    log([...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([key, ms]) => `    ${Math.round(ms)}ms ${key}`).join("\n"));
  }
  return at;
}

async function main() {
  log("starting the app");
  const app = await startApp(
    { ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password, ROUTEBOARD_DEMO: "0", ROUTEBOARD_DEVTOOLS: "1", DATABASE_URL: "" },
    { readyTimeoutMs: 90_000, tempPrefix: "rb-bench-ui-" },
  );
  const url = app.url;
  log(`app on ${url} (data in ${app.dataDir})`);
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", args: CHROMIUM_ARGS });
  try {
    const client = await loginToApp(url, ADMIN.username, ADMIN.password);

    log(`creating ${SIZE.servers} servers × ${SIZE.inboundsPerServer} inbounds, ${SIZE.routes} routes`);
    const t0 = performance.now();
    const cluster = await client.mutation<{ id: string }>("tooling.createSynthetic", { name: "Bench cluster", ...SIZE });
    const seedMs = performance.now() - t0;
    const clusterId = cluster.id;
    const topoT0 = performance.now();
    let topo = await client.query<Topo>("topology.get", { clusterId });
    const topologyGetMs = performance.now() - topoT0;

    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    await context.addCookies(client.cookie.split("; ").map((c) => ({ name: c.slice(0, c.indexOf("=")), value: c.slice(c.indexOf("=") + 1), url })));
    const page = await context.newPage();
    const pageUrl = `${url}/clusters/${clusterId}`;

    if (process.env.BENCH_DEBUG) {
      page.on("request", (r) => log(`request ${r.method()} ${r.url().slice(0, 100)}`));
      page.on("console", (m) => log(`console ${m.type()} ${m.text().slice(0, 300)}`));
    }
    const cold = await firstRender(page, pageUrl, "cold");
    const warm: number[] = [];
    for (let i = 0; i < 3; i++) {
      // BENCH_TRACE=<file.json>: a Chromium performance trace of the last warm load (open
      // it in the DevTools Performance panel).
      const trace = process.env.BENCH_TRACE && i === 2 ? process.env.BENCH_TRACE : null;
      if (trace) await browser.startTracing(page, { path: trace, screenshots: false, categories: ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "blink.user_timing", "loading", "disabled-by-default-v8.cpu_profiler"] });
      warm.push(await firstRender(page, pageUrl, `warm ${i + 1}`));
      if (trace) await browser.stopTracing();
    }
    log(`first render: cold ${round(cold)} ms, warm ${warm.map(round).join(", ")} ms`);
    await page.waitForTimeout(500);

    // Drops: chips of the first servers (top of the first column, on screen) onto the boxes
    // of the routes column that are fully on screen (Unassigned, Route 001, …), each to a
    // box it is not in yet.
    const viewport = page.viewportSize()!;
    const onScreen: Array<{ routeId: string | null; label: string }> = [];
    for (const t of [{ id: null as string | null, name: "Unassigned inbounds" }, ...topo.routes.slice(0, 4).map((r) => ({ id: r.id as string | null, name: `Route ${r.name}` }))]) {
      const loc = page.getByRole("region", { name: t.name, exact: true });
      // Boxes off screen are not rendered at all (onlyRenderVisibleElements).
      const b = (await loc.count()) > 0 ? await loc.boundingBox() : null;
      if (b && b.y >= 0 && b.y + Math.min(60, b.height) < viewport.height) onScreen.push({ routeId: t.id, label: t.name });
    }
    if (onScreen.length < 2) throw new Error("fewer than two drop targets on screen");
    // Inbounds moved through the API below; the browser drops whatever chips are on screen.
    const firstServers = topo.servers.slice(0, 2).map((s) => s.id);
    const candidates = topo.inbounds.filter((i) => firstServers.includes(i.serverId));
    /** Inbounds dropped in the browser, with the route each was in first. */
    const dropped = new Map<string, string | null>();
    const saved: number[] = [];
    const visible: number[] = [];
    let failures = 0;
    for (let k = 0; k < DROPS; k++) {
      topo = await client.query<Topo>("topology.get", { clusterId });
      // A chip fully on screen, in turn: the diagram renders only what is in view, the
      // warnings above it may grow as inbounds leave routes, and a move sends the chip's
      // server beside the routes it now feeds, maybe off screen.
      const onScreenChips = new Set(
        await page.locator("[data-inbound-id]").evaluateAll(
          (els, height) =>
            els
              .filter((el) => {
                const r = el.getBoundingClientRect();
                return r.top > 0 && r.bottom < height - 10;
              })
              .map((el) => el.getAttribute("data-inbound-id")),
          viewport.height,
        ),
      );
      // The Unassigned zone lists only its first few inbounds by name: once it could not
      // show the dropped one, drop into routes only.
      const unassignedNow = topo.inbounds.filter((i) => i.routeId === null).length;
      const targetsFor = (i: Topo["inbounds"][number]) =>
        onScreen.filter((t) => t.routeId !== i.routeId && (t.routeId !== null || unassignedNow < UNASSIGNED_MAX_ITEMS));
      const pool = topo.inbounds.filter((i) => onScreenChips.has(i.id) && targetsFor(i).length > 0);
      if (pool.length === 0) throw new Error("no chip fully on screen with a box on screen to drop it in");
      const ib = pool[k % pool.length]!;
      if (!dropped.has(ib.id)) dropped.set(ib.id, ib.routeId);
      const choices = targetsFor(ib);
      const target = choices[k % choices.length]!;
      const chip = page.getByRole("button", { name: ib.name, exact: true });
      const box = page.getByRole("region", { name: target.label, exact: true });
      const s = await chip.boundingBox();
      const t = await box.boundingBox();
      if (!s || !t) throw new Error(`chip ${ib.name} or ${target.label} is not on screen`);
      await page.mouse.move(s.x + s.width / 2, s.y + s.height / 2);
      await page.mouse.down();
      await page.mouse.move(s.x + s.width / 2 + 10, s.y + s.height / 2 + 5, { steps: 3 });
      await page.mouse.move(t.x + t.width / 2, t.y + Math.min(30, t.height / 2), { steps: 8 });
      const response = page.waitForResponse((r) => r.url().includes("topology.moveInbound"), { timeout: 10_000 });
      const shown = box.getByText(ib.name, { exact: true }).waitFor({ state: "attached", timeout: 10_000 });
      if (process.env.BENCH_SCREENSHOT && k === 0) await page.screenshot({ path: process.env.BENCH_SCREENSHOT.replace(".png", "-drag.png") });
      // Linger over the target until it shows it will take the drop, as a person does.
      await box.and(page.locator("[data-drop-target]")).waitFor({ timeout: 1_000 }).catch(() => {});
      if (process.env.BENCH_DEBUG) log(`before drop ${k} on ${target.label}: drop targets ${JSON.stringify(await page.locator("[data-drop-target]").evaluateAll((els) => els.map((e) => e.getAttribute("aria-label"))))} chip ${JSON.stringify(s)} box ${JSON.stringify(t)}`);
      const cdp = process.env.BENCH_PROFILE && process.env.BENCH_PROFILE !== "render" && k === 6 ? await context.newCDPSession(page) : null;
      if (cdp) {
        await cdp.send("Profiler.enable");
        await cdp.send("Profiler.start");
      }
      const start = performance.now();
      await page.mouse.up();
      if (process.env.BENCH_DEBUG) {
        await page.waitForTimeout(500);
        log(`after drop ${k}: ${await page.getByTestId("diagram-announcer").textContent()} / alert: ${await page.getByRole("alert").allTextContents()} / live: ${await page.locator("[aria-live]").allTextContents()}`);
      }
      response.catch(async () => {
        log(`drop ${k} (${ib.name} → ${target.label}) not saved: ${JSON.stringify(await page.locator("[aria-live]").allTextContents().catch(() => []))}`);
      });
      const [res] = await Promise.all([
        response.then((r) => {
          saved.push(performance.now() - start);
          return r;
        }),
        shown.then(() => visible.push(performance.now() - start)),
      ]);
      if (!res.ok()) failures++;
      if (cdp) {
        const { profile } = await cdp.send("Profiler.stop");
        const self = new Map<string, number>();
        const byId = new Map(profile.nodes.map((n) => [n.id, n]));
        profile.samples!.forEach((id, i) => {
          const n = byId.get(id)!;
          const key = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.split("/").pop()}:${n.callFrame.columnNumber}`;
          self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas![i] ?? 0) / 1000);
        });
        log([...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 20).map(([key, ms]) => `${Math.round(ms)}ms ${key}`).join("\n"));
      }
      if (process.env.BENCH_DEBUG) log(`drop ${k}: ${await page.getByTestId("diagram-announcer").textContent()}`);
      // Let the refetch that follows a move land before the next drag, as it would for a
      // person (who does not start the next drag within a few milliseconds).
      await page.waitForResponse((r) => r.url().includes("topology.get"), { timeout: 3_000 }).catch(() => {});
      await page.waitForTimeout(200);
    }
    const afterDrops = await client.query<Topo>("topology.get", { clusterId });
    const moved = [...dropped].filter(([id, from]) => afterDrops.inbounds.find((i) => i.id === id)?.routeId !== from).length;
    // The same move straight through the API, without a browser: the server's share.
    const api: number[] = [];
    for (let k = 0; k < 10; k++) {
      const t = await client.query<Topo & { inbounds: Array<{ version: number }> }>("topology.get", { clusterId });
      const ib = t.inbounds.find((i) => i.id === candidates[k % candidates.length]!.id)! as Topo["inbounds"][number] & { version: number };
      const to = ib.routeId === t.routes[0]!.id ? null : t.routes[0]!.id;
      const s0 = performance.now();
      await client.mutation("topology.moveInbound", { inboundId: ib.id, toRouteId: to, expectedVersion: ib.version });
      api.push(performance.now() - s0);
    }

    // Node re-renders on a refetch (harness/render-counter.ts), on a page of their own so the
    // counter's walk of each commit weighs on nothing measured above. Probes off: only the
    // two writes change the cluster meanwhile.
    const probe = await client.query<{ config: Record<string, unknown> }>("monitoring.getProbeConfig", { clusterId });
    await client.mutation("monitoring.setProbeConfig", { clusterId, config: { ...probe.config, enabled: false } });
    const rendersPage = await context.newPage();
    await rendersPage.addInitScript(installRenderCounter);
    await firstRender(rendersPage, pageUrl, "renders");
    const renders = await measureRefetchRenders(rendersPage, await client.query<Parameters<typeof measureRefetchRenders>[1]>("topology.get", { clusterId }), (p, input) =>
      client.mutation(p, input),
    );

    const result = {
      cluster: { servers: topo.servers.length, inbounds: topo.inbounds.length, routes: topo.routes.length },
      seedMs: round(seedMs),
      topologyGetMs: round(topologyGetMs),
      firstRenderMs: { cold: round(cold), warmMedian: round(median(warm)), warm: warm.map(round) },
      dropToSavedMs: { median: round(median(saved)), p90: round(pct(saved, 90)), min: round(Math.min(...saved)), max: round(Math.max(...saved)), n: saved.length },
      apiMoveMs: { median: round(median(api)), max: round(Math.max(...api)), n: api.length },
      dropToVisibleMs: { median: round(median(visible)), max: round(Math.max(...visible)) },
      failedDrops: failures,
      nodeRendersOnRefetch: { nodesOnScreen: renders.nodes, unchanged: renders.unchanged.length, oneInboundChanged: renders.oneInbound.length },
      inboundsMovedInDatabase: moved,
      goals: { firstRenderUnder1500ms: median(warm) < 1500 && cold < 1500, dropToSavedUnder300ms: median(saved) < 300, refetchRendersOnlyChangedNodes: renders.unchanged.length === 0 && renders.oneInbound.join() === renders.affected.join() },
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    await context.close();
  } catch (err) {
    if (process.env.BENCH_SCREENSHOT) await browser.contexts()[0]?.pages()[0]?.screenshot({ path: process.env.BENCH_SCREENSHOT }).catch(() => {});
    log(`failed: ${(err as Error).message}`);
    if (app.stderr()) log(`app stderr:\n${app.stderr()}`);
    process.exitCode = 1;
  } finally {
    await browser.close().catch(() => {});
    await app.stop();
  }
}

void main();
