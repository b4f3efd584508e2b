/**
 * Starts an extra app instance for tests that need their own database (first-run setup,
 * several instances, the data plane): the built app, a fresh data folder and a free port
 * unless given (a restart reuses both); stopped by PID.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

export interface AppProcess {
  url: string;
  port: number;
  dataDir: string;
  child: ChildProcess;
  /** The one-time setup code of a new install (the app keeps it in <DATA_DIR>/setup-code). */
  setupCode(): string;
  /** Stops the app; `keepData` leaves its data folder for a restart on the same database. */
  stop(opts?: { keepData?: boolean }): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
    srv.on("error", reject);
  });
}

export async function startApp(env: Record<string, string> = {}, at: { port?: number; dataDir?: string } = {}): Promise<AppProcess> {
  const port = at.port ?? (await freePort());
  const dataDir = at.dataDir ?? mkdtempSync(path.join(os.tmpdir(), "rb-e2e-app-"));
  const child = spawn(process.execPath, ["--import", "tsx", "server/main.ts"], {
    env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, NODE_ENV: "production", LOG_LEVEL: "warn", ADMIN_USERNAME: "", ADMIN_PASSWORD: "", ROUTEBOARD_DEVTOOLS: "1", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const url = `http://localhost:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`app exited early: ${stderr}`);
    try {
      const res = await fetch(`${url}/api/health`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`app did not start within 60 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    port,
    dataDir,
    child,
    setupCode: () => readFileSync(path.join(dataDir, "setup-code"), "utf8").trim(),
    async stop(opts = {}) {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        if (child.exitCode === null) child.kill("SIGKILL");
      }
      if (!opts.keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
