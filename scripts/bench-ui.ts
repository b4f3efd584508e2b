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
 * Prints one JSON object. The app is stopped by its PID at the end.
 *
 * Options: --servers N --inbounds-per-server N --routes N --drops N. Diagnostics (env):
 * BENCH_DEBUG=1 logs requests and each drop, BENCH_PROFILE=1 prints a CPU profile of one
 * drop, BENCH_SCREENSHOT=<file.png> saves screenshots (first drag, failure).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Page } from "@playwright/test";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ADMIN = { username: "bench", password: "bench-admin-password" };
const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"];

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : NaN;
  return Number.isFinite(v) && v >= 0 ? v : fallback;
}
const SIZE = { servers: arg("servers", 500), inboundsPerServer: arg("inbounds-per-server", 4), routes: arg("routes", 100) };
const DROPS = arg("drops", 20);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
    srv.on("error", reject);
  });
}

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

async function waitForHealth(url: string, child: ChildProcess, timeoutMs = 90_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`the app exited with code ${child.exitCode}`);
    try {
      const res = await fetch(`${url}/api/health`);
      if (res.ok) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error("the app did not become healthy in time");
}

async function trpc<T>(url: string, pathName: string, input: unknown, cookie?: string): Promise<{ data: T; setCookie: string | null }> {
  const res = await fetch(`${url}/api/trpc/${pathName}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(cookie ? { cookie } : {}) },
    body: JSON.stringify({ json: input }),
  });
  const body = (await res.json()) as { result?: { data?: { json?: T } }; error?: { json?: { message?: string } } };
  if (!res.ok || body.error) throw new Error(`${pathName}: ${body.error?.json?.message ?? res.status}`);
  return { data: body.result!.data!.json as T, setCookie: res.headers.get("set-cookie") };
}

async function trpcGet<T>(url: string, pathName: string, input: unknown, cookie: string): Promise<T> {
  const res = await fetch(`${url}/api/trpc/${pathName}?input=${encodeURIComponent(JSON.stringify({ json: input }))}`, { headers: { cookie } });
  const body = (await res.json()) as { result?: { data?: { json?: T } } };
  if (!res.ok) throw new Error(`${pathName}: HTTP ${res.status}`);
  return body.result!.data!.json as T;
}

interface Topo {
  servers: Array<{ id: string; name: string }>;
  inbounds: Array<{ id: string; name: string; serverId: string; routeId: string | null }>;
  routes: Array<{ id: string; name: string }>;
}

/** Navigation → first route box and first chip rendered; in ms from the navigation start. */
async function firstRender(page: Page, url: string): Promise<number> {
  await page.goto(url, { waitUntil: "commit" });
  const handle = await page.waitForFunction(
    () => {
      const route = document.querySelector('section[aria-label^="Route "]');
      const chip = document.querySelector("[data-inbound-id] button");
      return route && chip ? performance.now() : null;
    },
    undefined,
    { polling: "raf", timeout: 30_000 },
  );
  return (await handle.jsonValue()) as number;
}

async function main() {
  const port = await freePort();
  const url = `http://localhost:${port}`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "rb-bench-ui-"));
  log(`starting the app on ${url} (data in ${dataDir})`);
  const child = spawn(process.execPath, ["--import", "tsx", "server/main.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      DATA_DIR: dataDir,
      NODE_ENV: "production",
      ADMIN_USERNAME: ADMIN.username,
      ADMIN_PASSWORD: ADMIN.password,
      ROUTEBOARD_DEMO: "0",
      // tooling.createSynthetic builds the benchmark cluster.
      ROUTEBOARD_DEVTOOLS: "1",
      LOG_LEVEL: "warn",
      DATABASE_URL: "",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", args: CHROMIUM_ARGS });
  try {
    await waitForHealth(url, child);
    const login = await trpc(url, "auth.login", ADMIN);
    const cookie = (login.setCookie ?? "").split(";")[0]!;
    if (!cookie.includes("=")) throw new Error("login gave no session cookie");

    log(`creating ${SIZE.servers} servers × ${SIZE.inboundsPerServer} inbounds, ${SIZE.routes} routes`);
    const t0 = performance.now();
    const cluster = await trpc<{ id: string }>(url, "tooling.createSynthetic", { name: "Bench cluster", ...SIZE }, cookie);
    const seedMs = performance.now() - t0;
    const clusterId = cluster.data.id;
    const topoT0 = performance.now();
    let topo = await trpcGet<Topo>(url, "topology.get", { clusterId }, cookie);
    const topologyGetMs = performance.now() - topoT0;

    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const [name, value] = [cookie.slice(0, cookie.indexOf("=")), cookie.slice(cookie.indexOf("=") + 1)];
    await context.addCookies([{ name, value, url }]);
    const page = await context.newPage();
    const pageUrl = `${url}/clusters/${clusterId}`;

    if (process.env.BENCH_DEBUG) {
      page.on("request", (r) => log(`request ${r.method()} ${r.url().slice(0, 100)}`));
      page.on("console", (m) => log(`console ${m.type()} ${m.text().slice(0, 300)}`));
    }
    const cold = await firstRender(page, pageUrl);
    const warm: number[] = [];
    for (let i = 0; i < 3; i++) warm.push(await firstRender(page, pageUrl));
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
    const firstServers = topo.servers.slice(0, 2).map((s) => s.id);
    const candidates = topo.inbounds.filter((i) => firstServers.includes(i.serverId));
    const saved: number[] = [];
    const visible: number[] = [];
    let failures = 0;
    for (let k = 0; k < DROPS; k++) {
      topo = await trpcGet<Topo>(url, "topology.get", { clusterId }, cookie);
      // The first chip (in turn) that is fully on screen: the warnings above the diagram may
      // grow as inbounds leave routes, pushing the lower chips off screen.
      let ib = topo.inbounds[0]!;
      for (let j = 0; j < candidates.length; j++) {
        const c = topo.inbounds.find((i) => i.id === candidates[(k + j) % candidates.length]!.id)!;
        const b = await page.getByRole("button", { name: c.name, exact: true }).boundingBox();
        if (b && b.y > 0 && b.y + b.height < viewport.height - 10) {
          ib = c;
          break;
        }
      }
      const choices = onScreen.filter((t) => t.routeId !== ib.routeId);
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
      const cdp = process.env.BENCH_PROFILE && k === 6 ? await context.newCDPSession(page) : null;
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
    // The same move straight through the API, without a browser: the server's share.
    const api: number[] = [];
    for (let k = 0; k < 10; k++) {
      const t = await trpcGet<Topo & { inbounds: Array<{ version: number }> }>(url, "topology.get", { clusterId }, cookie);
      const ib = t.inbounds.find((i) => i.id === candidates[k % candidates.length]!.id)! as Topo["inbounds"][number] & { version: number };
      const to = ib.routeId === t.routes[0]!.id ? null : t.routes[0]!.id;
      const s0 = performance.now();
      await trpc(url, "topology.moveInbound", { inboundId: ib.id, toRouteId: to, expectedVersion: ib.version }, cookie);
      api.push(performance.now() - s0);
    }
    const after = await trpcGet<Topo>(url, "topology.get", { clusterId }, cookie);
    const moved = candidates.filter((c) => after.inbounds.find((i) => i.id === c.id)?.routeId !== c.routeId).length;

    const result = {
      cluster: { servers: topo.servers.length, inbounds: topo.inbounds.length, routes: topo.routes.length },
      seedMs: round(seedMs),
      topologyGetMs: round(topologyGetMs),
      firstRenderMs: { cold: round(cold), warmMedian: round(median(warm)), warm: warm.map(round) },
      dropToSavedMs: { median: round(median(saved)), p90: round(pct(saved, 90)), min: round(Math.min(...saved)), max: round(Math.max(...saved)), n: saved.length },
      apiMoveMs: { median: round(median(api)), max: round(Math.max(...api)), n: api.length },
      dropToVisibleMs: { median: round(median(visible)), max: round(Math.max(...visible)) },
      failedDrops: failures,
      inboundsMovedInDatabase: moved,
      goals: { firstRenderUnder2s: median(warm) < 2000 && cold < 2000, dropToSavedUnder300ms: median(saved) < 300 },
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    await context.close();
  } catch (err) {
    if (process.env.BENCH_SCREENSHOT) await browser.contexts()[0]?.pages()[0]?.screenshot({ path: process.env.BENCH_SCREENSHOT }).catch(() => {});
    log(`failed: ${(err as Error).message}`);
    if (stderr) log(`app stderr:\n${stderr}`);
    process.exitCode = 1;
  } finally {
    await browser.close().catch(() => {});
    if (child.pid && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      process.kill(child.pid, "SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) process.kill(child.pid, "SIGKILL");
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

void main();
