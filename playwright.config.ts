import { defineConfig } from "@playwright/test";
import { availableParallelism } from "node:os";

/**
 * End-to-end tests in Debian's Chromium (never a downloaded browser) against the real app,
 * started here: on PGlite always, and on PostgreSQL when E2E_DATABASE_URL is set
 * (scripts/test.sh starts a PostgreSQL server for it). Run `npm run build` first.
 */
const pgUrl = process.env.E2E_DATABASE_URL;
const dataDir = process.env.E2E_DATA_DIR ?? ".tmp/e2e-data";
/** Base port of the apps under test (PGlite on it, PostgreSQL on the next); set E2E_PORT to run two suites side by side. */
const basePort = Number(process.env.E2E_PORT ?? 3200);
type TraceMode = "off" | "on" | "retain-on-failure" | "on-first-retry";
function traceMode(value: string | undefined): TraceMode {
  const modes: TraceMode[] = ["off", "on", "retain-on-failure", "on-first-retry"];
  if (value === undefined || value === "") return "off";
  if (!(modes as string[]).includes(value)) throw new Error(`E2E_TRACE must be one of ${modes.join(", ")}, not ${JSON.stringify(value)}`);
  return value as TraceMode;
}

/** Specs whose longest test took over a minute on a busy machine (fresh-clone run, 4 workers). */
const LONG_SPECS = ["vpn-traffic.spec.ts", "monitoring.spec.ts", "auth.spec.ts", "agent-limits.spec.ts", "first-view.spec.ts", "failover.spec.ts", "two-factor.spec.ts"].map((f) => `**/${f}`);

export const E2E_ADMIN = { username: "admin", password: "e2e-admin-password" };

const appEnv = (port: number, extra: Record<string, string>) => ({
  PORT: String(port),
  NODE_ENV: "production",
  ADMIN_USERNAME: E2E_ADMIN.username,
  ADMIN_PASSWORD: E2E_ADMIN.password,
  ROUTEBOARD_DEMO: "1",
  // The monitoring spec enrols a simulated fleet through tooling.*.
  ROUTEBOARD_DEVTOOLS: "1",
  // The alerts specs deliver to webhook receivers they start on 127.0.0.1.
  ROUTEBOARD_ALERTS_ALLOW_PRIVATE: "1",
  LOG_LEVEL: "warn",
  ...extra,
});

export default defineConfig({
  testDir: "./e2e",
  // Bounds for a hang, not for speed: a machine busy with other work must still pass.
  timeout: 300_000,
  expect: { timeout: 60_000 },
  fullyParallel: true,
  // Twice the cores (4 on the suite's 2): a test mostly waits on the app, a poll or an agent (a
  // whole run with two workers used about one core of two).
  workers: Math.min(8, Math.max(4, 2 * availableParallelism())),
  // A retry would hide a flake: a test that fails once fails the run.
  retries: 0,
  reporter: [["list"]],
  use: {
    // Recording a trace costs every test its screencast and DOM snapshots even when it passes
    // (about half of Chromium's and the runner's CPU here): off unless asked for, e.g.
    // E2E_TRACE=retain-on-failure npx playwright test e2e/diagram.spec.ts
    trace: traceMode(process.env.E2E_TRACE),
    screenshot: "only-on-failure",
    // Still pipes: their moving dash alone kept each open diagram at a third of a core.
    reducedMotion: "reduce",
    // One browser context per worker, reset between tests (cookies, storage, routes, init
    // scripts, extra pages; Playwright's own reset): a new context per test started and tore
    // down a renderer each time, about a quarter of Chromium's CPU per test here. Every test
    // signs in again and works on a cluster of its own; specs that need a second user open
    // their own context from `browser`.
    reuseContext: true,
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"],
    },
  },
  // The specs with the longest tests (each starts apps, agents or cores of its own) are a
  // project listed first, so workers start them first: in file order vpn-traffic (about 3
  // minutes on a busy machine) started last and ran on alone. `--project='pglite*'` runs both.
  projects: [
    { name: "pglite-long", use: { baseURL: `http://localhost:${basePort}` }, testMatch: LONG_SPECS },
    { name: "pglite", use: { baseURL: `http://localhost:${basePort}` }, testIgnore: LONG_SPECS },
    ...(pgUrl ? [{ name: "postgres", use: { baseURL: `http://localhost:${basePort + 1}` }, grep: /@pg/ }] : []),
  ],
  webServer: [
    {
      command: "node --import tsx server/main.ts",
      url: `http://localhost:${basePort}/api/health`,
      env: appEnv(basePort, { DATA_DIR: dataDir }),
      timeout: 120_000,
      reuseExistingServer: false,
      // Warnings and errors (LOG_LEVEL=warn) show in the run: a 500 in a test names its cause.
      stdout: "pipe",
      stderr: "pipe",
    },
    ...(pgUrl
      ? [
          {
            command: "node --import tsx server/main.ts",
            url: `http://localhost:${basePort + 1}/api/health`,
            env: appEnv(basePort + 1, { DATA_DIR: `${dataDir}-pg`, DATABASE_URL: pgUrl }),
            timeout: 120_000,
            reuseExistingServer: false,
            stdout: "pipe" as const,
            stderr: "pipe" as const,
          },
        ]
      : []),
  ],
});
