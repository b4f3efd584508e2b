import { existsSync, mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { APP_NODE_FLAGS, appEnv, freePort, startApp, waitForHealth, type AppProcess } from "./app";
import pkg from "../../package.json" with { type: "json" };

const STAND_IN = "scripts/harness/testdata/stand-in-app.ts";
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("freePort", () => {
  it("gives a port nothing listens on, which can then be bound", async () => {
    const port = await freePort();
    expect(port).toBeGreaterThan(0);
    const srv = net.createServer();
    await new Promise<void>((resolve, reject) => srv.once("error", reject).listen(port, "127.0.0.1", () => resolve()));
    await new Promise((r) => srv.close(r));
  });
});

describe("appEnv", () => {
  it("puts a throwaway instance's defaults over the caller's environment", () => {
    const env = appEnv({ PATH: "/bin", LOG_LEVEL: "debug", ADMIN_USERNAME: "root", ADMIN_PASSWORD: "pw" }, {}, 4000, "/tmp/d");
    expect(env).toMatchObject({ PATH: "/bin", NODE_ENV: "production", LOG_LEVEL: "warn", ADMIN_USERNAME: "", ADMIN_PASSWORD: "", ROUTEBOARD_DEVTOOLS: "1", PORT: "4000", DATA_DIR: "/tmp/d" });
  });
  it("lets the caller's env override the defaults, but never PORT or DATA_DIR", () => {
    const env = appEnv({}, { ROUTEBOARD_DEVTOOLS: "0", LOG_LEVEL: "info", PORT: "1", DATA_DIR: "/elsewhere" }, 4000, "/tmp/d");
    expect(env).toMatchObject({ ROUTEBOARD_DEVTOOLS: "0", LOG_LEVEL: "info", PORT: "4000", DATA_DIR: "/tmp/d" });
  });
});

describe("waitForHealth", () => {
  let server: http.Server | undefined;
  afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

  async function healthServer(failures: number): Promise<{ url: string; calls: () => number }> {
    let calls = 0;
    server = http.createServer((req, res) => {
      calls++;
      res.writeHead(req.url === "/api/health" && calls > failures ? 200 : 503).end();
    });
    const port = await new Promise<number>((r) => server!.listen(0, "127.0.0.1", () => r((server!.address() as net.AddressInfo).port)));
    return { url: `http://127.0.0.1:${port}`, calls: () => calls };
  }

  it("waits through non-2xx answers until /api/health answers 200", async () => {
    const s = await healthServer(3);
    await waitForHealth(s.url, () => null, 5000, 10);
    expect(s.calls()).toBe(4);
  });
  it("fails at once with the exit reason when the process is gone", async () => {
    const s = await healthServer(1000);
    // The exit reason, not a timeout after 5 s, and not one call made.
    await expect(waitForHealth(s.url, () => "the app exited (code 1)", 5000, 10)).rejects.toThrow("the app exited (code 1)");
    expect(s.calls()).toBe(0);
  });
  it("gives up after the timeout when nothing listens", async () => {
    const port = await freePort();
    await expect(waitForHealth(`http://127.0.0.1:${port}`, () => null, 300, 20)).rejects.toThrow(`did not answer http://127.0.0.1:${port}/api/health`);
  });
});

describe("the app's node flags", () => {
  it("are the ones npm start and npm run serve give it", () => {
    for (const script of [pkg.scripts.start, pkg.scripts.serve]) expect(script).toContain(`node ${APP_NODE_FLAGS.join(" ")} --import tsx server/main.ts`);
  });
});

describe("startApp (with a stand-in for server/main.ts)", () => {
  const started: AppProcess[] = [];
  afterEach(async () => {
    for (const a of started.splice(0)) await a.stop({ graceMs: 100 });
  });

  it("spawns node itself (the child's PID is the app's), with the env, and waits for health", async () => {
    const app = await startApp({ STAND_IN_DELAY_MS: "500", EXTRA: "x" }, { entry: STAND_IN, urlHost: "127.0.0.1" });
    started.push(app);
    expect(app.url).toBe(`http://127.0.0.1:${app.port}`);
    expect(Number(await (await fetch(`${app.url}/pid`)).text())).toBe(app.child.pid);
    expect(await (await fetch(`${app.url}/env`)).json()).toEqual({ NODE_ENV: "production", LOG_LEVEL: "warn", EXTRA: "x" });
    expect(app.setupCode()).toBe("ABCD-1234");
  });

  it("stops by PID and deletes the data folder, or keeps it when asked", async () => {
    const app = await startApp({}, { entry: STAND_IN, urlHost: "127.0.0.1" });
    const pid = app.child.pid!;
    await app.stop({ keepData: true });
    expect(alive(pid)).toBe(false);
    expect(existsSync(app.dataDir)).toBe(true);
    const again = await startApp({}, { entry: STAND_IN, urlHost: "127.0.0.1", port: app.port, dataDir: app.dataDir });
    expect(again.port).toBe(app.port);
    await again.stop();
    expect(existsSync(app.dataDir)).toBe(false);
  });

  it("kills an app that ignores SIGTERM once the grace period is over", async () => {
    const app = await startApp({ STAND_IN_STUBBORN: "1" }, { entry: STAND_IN, urlHost: "127.0.0.1" });
    const pid = app.child.pid!;
    const t0 = Date.now();
    await app.stop({ graceMs: 300 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
    expect(alive(pid)).toBe(false);
  });

  it("reports an app that exits during start-up with its stderr, and keeps a given data folder", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "rb-harness-test-"));
    try {
      await expect(startApp({ STAND_IN_FAIL: "1" }, { entry: STAND_IN, dataDir })).rejects.toThrow(/exited \(code 3\).*DATABASE_URL is not a postgres/s);
      expect(existsSync(dataDir)).toBe(true);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
