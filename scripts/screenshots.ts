/**
 * `npm run screenshots`: the README's pictures, made from the demo.
 *
 * Installs Debian's fonts-noto-color-emoji when it is missing (as root; otherwise says what to
 * install), so the routes' flags render. Builds once when .next/BUILD_ID is missing, starts
 * the app through the harness on a throwaway database seeded with the demo cluster, puts the
 * demo's simulated fleet behind it (as `npm run demo` does) so statuses, users and traffic are
 * real, logs in, and writes at 1440×900 with Playwright and /usr/bin/chromium:
 *   docs/screenshots/diagram-light.png, diagram-dark.png (prefers-color-scheme: dark), health.png
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { chromium, type Page } from "@playwright/test";
import { ROOT, startApp, type AppProcess } from "./harness/app";
import { login, loginToApp } from "./harness/trpc";
import { takeOverCluster } from "./fleet/enrol";
import { startFleet, type Fleet } from "@/server/demo/fleet";

const OUT = path.join(ROOT, "docs", "screenshots");
const VIEWPORT = { width: 1440, height: 900 };
const ADMIN = { username: "admin", password: "screenshots-Demo-2026!" };
const REPORT_INTERVAL_S = 2;

function ensureEmojiFont(): void {
  const installed = spawnSync("dpkg-query", ["-W", "-f=${Status}", "fonts-noto-color-emoji"], { encoding: "utf8" });
  if (installed.status === 0 && installed.stdout.includes("install ok installed")) return;
  if (process.getuid?.() !== 0) {
    throw new Error("The flags need Debian's fonts-noto-color-emoji: run 'sudo apt-get install fonts-noto-color-emoji' and try again");
  }
  console.log("screenshots: installing fonts-noto-color-emoji…");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const update = spawnSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
  const install = update.status === 0 ? spawnSync("apt-get", ["install", "-y", "-qq", "--no-install-recommends", "fonts-noto-color-emoji"], { stdio: "inherit", env }) : update;
  if (install.status !== 0) throw new Error("Could not install fonts-noto-color-emoji with apt-get: install it by hand and run again");
}

function ensureBuild(): void {
  if (existsSync(path.join(ROOT, ".next", "BUILD_ID"))) return;
  console.log("screenshots: no production build yet — running `npm run build` once…");
  const r = spawnSync("npm", ["run", "build"], { cwd: ROOT, stdio: "inherit" });
  if (r.status !== 0) throw new Error("npm run build failed");
}

async function shoot(page: Page, file: string): Promise<void> {
  await page.screenshot({ path: path.join(OUT, file) });
  console.log(`screenshots: wrote docs/screenshots/${file}`);
}

async function main(): Promise<void> {
  ensureEmojiFont();
  ensureBuild();
  mkdirSync(OUT, { recursive: true });
  let app: AppProcess | null = null;
  let fleet: Fleet | null = null;
  try {
    app = await startApp(
      { ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password, ROUTEBOARD_DEMO: "1", ROUTEBOARD_DEVTOOLS: "1" },
      { readyTimeoutMs: 120_000, tempPrefix: "rb-screenshots-" },
    );
    const client = await loginToApp(app.url, ADMIN.username, ADMIN.password);
    const clusters = await client.query<Array<{ id: string; name: string }>>("clusters.list");
    const cluster = clusters.find((c) => c.name === "Demo cluster");
    if (!cluster) throw new Error("the app did not seed the demo cluster");
    await client.mutation("monitoring.setReportInterval", { clusterId: cluster.id, seconds: REPORT_INTERVAL_S });
    const probe = await client.query<{ config: Record<string, unknown> }>("monitoring.getProbeConfig", { clusterId: cluster.id });
    await client.mutation("monitoring.setProbeConfig", { clusterId: cluster.id, config: { ...probe.config, intervalS: REPORT_INTERVAL_S, timeoutS: 2 } });
    const enrolled = await takeOverCluster(client, cluster.id);
    fleet = await startFleet(enrolled.plan, { appUrl: app.url, reportIntervalMs: REPORT_INTERVAL_S * 1000 });
    // A few reports and probes, so every server has a verdict.
    await new Promise((r) => setTimeout(r, 4 * REPORT_INTERVAL_S * 1000));

    const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
    try {
      for (const scheme of ["light", "dark"] as const) {
        const context = await browser.newContext({ viewport: VIEWPORT, colorScheme: scheme, baseURL: app.url });
        await login(context.request, ADMIN.username, ADMIN.password);
        const page = await context.newPage();
        await page.emulateMedia({ colorScheme: scheme });
        await page.goto(`/clusters/${cluster.id}`);
        await page.locator(".react-flow__node").first().waitFor({ timeout: 30_000 });
        await page.waitForTimeout(1500);
        await shoot(page, `diagram-${scheme}.png`);
        if (scheme === "light") {
          await page.goto(`/clusters/${cluster.id}/health`);
          await page.getByTestId("history-chart").first().locator("canvas").waitFor({ timeout: 30_000 });
          // The charts are what this picture is for: bring them to the top of the view.
          await page.locator("#health-history").evaluate((el) => el.scrollIntoView({ block: "start" }));
          await page.waitForTimeout(1000);
          await shoot(page, "health.png");
        }
        await context.close();
      }
    } finally {
      await browser.close();
    }
  } finally {
    await fleet?.stop().catch(() => {});
    await app?.stop();
  }
}

main().catch((err: unknown) => {
  console.error(`screenshots: ${(err as Error)?.message ?? String(err)}`);
  process.exit(1);
});
