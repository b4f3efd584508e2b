/**
 * Starting the app for tests, benchmarks, the demo and the soak run: a free port, a data
 * folder (a fresh temporary one unless given), `node --import tsx server/main.ts` spawned
 * directly so the child's PID is the app's own, ready once /api/health answers, stopped by
 * that PID. An app still running when this process exits is killed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { preparePgliteTemplates } from "../../db/pglite-template";
import { freeLocalPorts } from "../../server/topology/local-ports";
import { hasExited as childHasExited, stopProcess } from "./process";

/** The repository root: the app is started from there. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Ports this process has handed out: a port picked at random again (it is free until its user binds it) would clash. */
const handedOut = new Set<number>();

/** A free TCP port on `host`, below the ephemeral range (see server/topology/local-ports.ts), never one handed out before. */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  const [port] = await freeLocalPorts(1, handedOut, host);
  handedOut.add(port!);
  return port!;
}

/**
 * The app's environment: the caller's, then a throwaway instance's defaults (production
 * mode, quiet log, no bootstrap admin, the tooling router mounted), then `env`. PORT and
 * DATA_DIR are always the harness's.
 */
export function appEnv(base: Record<string, string | undefined>, env: Record<string, string>, port: number, dataDir: string): NodeJS.ProcessEnv {
  return {
    ...base,
    NODE_ENV: "production",
    LOG_LEVEL: "warn",
    ADMIN_USERNAME: "",
    ADMIN_PASSWORD: "",
    ROUTEBOARD_DEVTOOLS: "1",
    ...env,
    PORT: String(port),
    DATA_DIR: dataDir,
  };
}

/**
 * Polls `${url}/api/health` until it answers 2xx. `exited` is checked before each try and
 * names why the app is gone (it then fails at once instead of waiting out the timeout).
 */
export async function waitForHealth(url: string, exited: () => string | null, timeoutMs: number, intervalMs = 200): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const gone = exited();
    if (gone !== null) throw new Error(gone);
    try {
      const res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the app did not answer ${url}/api/health within ${Math.round(timeoutMs / 1000)} s`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Node flags the app runs with, as `npm start` and `npm run serve` give them (app.test.ts checks
 * that they agree): a young generation of up to 128 MB per semi-space. With V8's 16 MB, a
 * thousand agents' long-polls (each held about half a second) outlived two scavenges and were
 * promoted, filling the old generation with garbage: a full collection of a million
 * subscribers' heap every 25 s, hundreds of milliseconds of the event loop each
 * (Performance, `bench:scale`). At 64 MB the old generation still grew 14 MB/s under
 * `bench:scale` (a full collection every 45 s); at 128 MB, 7 MB/s. V8 grows the young
 * generation only when the allocation rate asks for it: a small panel keeps a small one.
 */
export const APP_NODE_FLAGS = ["--max-semi-space-size=128"];

export interface StartAppOptions {
  /** Default: a free port. */
  port?: number;
  /** Default: a fresh temporary folder. */
  dataDir?: string;
  /** Host name in the returned URL (the app listens on its HOST, 0.0.0.0 by default). */
  urlHost?: string;
  /** Node flags after APP_NODE_FLAGS, before `--import tsx`, e.g. --cpu-prof. */
  nodeFlags?: string[];
  /** Entry module relative to the repository root; tests of the harness give a stand-in. */
  entry?: string;
  /**
   * The app's own output: "capture" keeps the tail of stderr for error messages (default),
   * "stderr" shows stderr only, "inherit" shows stdout and stderr.
   */
  output?: "capture" | "stderr" | "inherit";
  /** How long to wait for /api/health (default 180 s: a bound for a hang, not for speed; a test's own timeout usually ends the wait first). */
  readyTimeoutMs?: number;
  /** Prefix of the temporary data folder. */
  tempPrefix?: string;
}

export interface AppProcess {
  url: string;
  port: number;
  dataDir: string;
  /** The app's process (`child.pid` is the app itself, not a shell or npm). */
  child: ChildProcess;
  /** The last few kB of the app's stderr when output is "capture". */
  stderr(): string;
  /** The last few kB of the app's stdout (its start banner) when output is "capture". */
  stdout(): string;
  /** The one-time setup code of a new install (the app keeps it in <DATA_DIR>/setup-code). */
  setupCode(): string;
  /**
   * SIGTERM to the app's PID, SIGKILL after `graceMs` (5 s); then deletes the data folder
   * unless `keepData` (a restart on the same database, or the demo's lasting folder).
   */
  stop(opts?: { keepData?: boolean; graceMs?: number }): Promise<void>;
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Kills every app still running when this process exits (a failed test, Ctrl-C, an error). */
function installExitHook() {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const child of running) if (child.pid && !childHasExited(child)) child.kill("SIGKILL");
  });
}

const STDERR_TAIL = 8000;

/** Starts the app (`env` over the defaults of `appEnv`) and resolves once /api/health answers. */
export async function startApp(env: Record<string, string> = {}, opts: StartAppOptions = {}): Promise<AppProcess> {
  const port = opts.port ?? (await freePort());
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(os.tmpdir(), opts.tempPrefix ?? "rb-app-"));
  const output = opts.output ?? "capture";
  const childEnv = appEnv(process.env, env, port, dataDir);
  // A new PGlite install starts from a copy of a migrated data folder: the app finds it
  // migrated and skips the initdb that costs each start about 7 s of CPU.
  const pgliteDir = path.join(dataDir, "pglite");
  if (!opts.entry && !childEnv.DATABASE_URL && !existsSync(pgliteDir)) cpSync(path.join(await preparePgliteTemplates(), "migrated", "pglite"), pgliteDir, { recursive: true });
  const child = spawn(process.execPath, [...APP_NODE_FLAGS, ...(opts.nodeFlags ?? []), "--import", "tsx", opts.entry ?? "server/main.ts"], {
    cwd: ROOT,
    env: childEnv,
    stdio: ["ignore", output === "inherit" ? "inherit" : output === "capture" ? "pipe" : "ignore", output === "capture" ? "pipe" : "inherit"],
  });
  installExitHook();
  running.add(child);
  child.once("exit", () => running.delete(child));
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-STDERR_TAIL)));
  // Read as it comes (a pipe nobody reads would block the app once full); only the tail is kept.
  let stdout = "";
  child.stdout?.on("data", (d: Buffer) => (stdout = (stdout + d.toString()).slice(-STDERR_TAIL)));
  const url = `http://${opts.urlHost ?? "localhost"}:${port}`;
  const hasExited = () => childHasExited(child);

  const stop: AppProcess["stop"] = async ({ keepData = false, graceMs = 5000 } = {}) => {
    await stopProcess(child, graceMs);
    if (!keepData) rmSync(dataDir, { recursive: true, force: true });
  };

  try {
    await waitForHealth(url, () => (hasExited() ? `the app exited (code ${child.exitCode ?? child.signalCode}) before it was ready${stderr ? `: ${stderr}` : ""}` : null), opts.readyTimeoutMs ?? 180_000);
  } catch (err) {
    const message = `${(err as Error).message}${stderr && !hasExited() ? `\n${stderr}` : ""}`;
    await stop({ keepData: opts.dataDir !== undefined, graceMs: 0 });
    throw new Error(message, { cause: err });
  }
  return {
    url,
    port,
    dataDir,
    child,
    stderr: () => stderr,
    stdout: () => stdout,
    setupCode: () => readFileSync(path.join(dataDir, "setup-code"), "utf8").trim(),
    stop,
  };
}
