/**
 * `npm run screenshots`: the README's pictures, made from the demo.
 *
 * Builds once when .next/BUILD_ID is missing, starts the app through the harness on a
 * throwaway database seeded with the live demo (its simulated agents run inside the app, as
 * after `npm start`), waits until every server is healthy and users are assigned, logs in, and
 * writes at 1440×900 with Playwright and /usr/bin/chromium:
 *   docs/screenshots/diagram-light.png, diagram-dark.png (prefers-color-scheme: dark), health.png
 * Flags are SVG, so no colour-emoji font is needed.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { chromium, type Page } from "@playwright/test";
import { ROOT, startApp, type AppProcess } from "./harness/app";
import { login, loginToApp } from "./harness/trpc";

const OUT = path.join(ROOT, "docs", "screenshots");
const VIEWPORT = { width: 1440, height: 900 };
const ADMIN = { username: "admin", password: "screenshots-Demo-2026!" };

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
  ensureBuild();
  mkdirSync(OUT, { recursive: true });
  let app: AppProcess | null = null;
  try {
    app = await startApp(
      { ADMIN_USERNAME: ADMIN.username, ADMIN_PASSWORD: ADMIN.password, ROUTEBOARD_DEMO: "1" },
      { readyTimeoutMs: 120_000, tempPrefix: "rb-screenshots-" },
    );
    const client = await loginToApp(app.url, ADMIN.username, ADMIN.password);
    const clusters = await client.query<Array<{ id: string; name: string; demo: boolean }>>("clusters.list");
    const cluster = clusters.find((c) => c.demo);
    if (!cluster) throw new Error("the app did not seed the live demo cluster");
    // Every server healthy and carrying users: the demo's agents have reported, its apps fetched.
    const deadline = Date.now() + 90_000;
    for (;;) {
      const topo = await client.query<{ servers: Array<{ status: string; usersOnline?: number | null }> }>("topology.get", { clusterId: cluster.id });
      if (topo.servers.every((s) => s.status === "healthy" && (s.usersOnline ?? 0) > 0)) break;
      if (Date.now() > deadline) throw new Error("the demo's servers did not all turn healthy with users within 90 s");
      await new Promise((r) => setTimeout(r, 1000));
    }

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
    await app?.stop();
  }
}

main().catch((err: unknown) => {
  console.error(`screenshots: ${(err as Error)?.message ?? String(err)}`);
  process.exit(1);
});
