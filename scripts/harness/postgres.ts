/**
 * A throwaway PostgreSQL server of the caller's own, started by scripts/pg.sh (the suite's
 * way) on a free loopback port, so a test may restart it without disturbing anything else.
 * A server still running when this process exits is stopped and its folder deleted.
 */
import { execFileSync } from "node:child_process";
import { ROOT, freePort } from "./app";

export interface PgServer {
  url: string;
  port: number;
  dir: string;
  bin: string;
  /** Stops the server, waits `downMs`, starts it again on the same port and data. */
  restart(downMs?: number): Promise<void>;
  /** Stops the server and deletes its folder. */
  stop(): void;
}

/** A command as the `postgres` user when we are root (PostgreSQL refuses to run as root). */
export function asPostgres(cmd: string[], uid = process.getuid?.()): string[] {
  return uid === 0 ? ["runuser", "-u", "postgres", "--", ...cmd] : cmd;
}

/** The server options of a restart (pg.sh's pg_start uses the same on first start). */
export function serverOptions(port: number, dir: string): string {
  return `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off`;
}

/** Parses the "PG_DIR|PG_BIN" line printed after pg_start (the last line of its output). */
export function parseStarted(out: string): { dir: string; bin: string } {
  const [dir, bin] = out.trim().split("\n").pop()!.split("|");
  if (!dir || !bin) throw new Error(`pg_start printed no "PG_DIR|PG_BIN" line: ${out}`);
  return { dir, bin };
}

function run(cmd: string[]) {
  execFileSync(cmd[0]!, cmd.slice(1), { stdio: "pipe" });
}

const running = new Set<PgServer>();
let exitHookInstalled = false;

export async function startPg(port?: number): Promise<PgServer> {
  const p = port ?? (await freePort());
  const out = execFileSync("bash", ["-c", `source scripts/pg.sh && pg_start ${p} && echo "$PG_DIR|$PG_BIN"`], { cwd: ROOT, encoding: "utf8" });
  const { dir, bin } = parseStarted(out);
  const pgctl = (...args: string[]) => run(asPostgres([`${bin}/pg_ctl`, "-D", `${dir}/data`, ...args]));
  const server: PgServer = {
    url: `postgres://postgres@127.0.0.1:${p}/postgres`,
    port: p,
    dir,
    bin,
    async restart(downMs = 2000) {
      pgctl("-m", "fast", "-w", "stop");
      await new Promise((r) => setTimeout(r, downMs));
      pgctl("-l", `${dir}/server.log`, "-w", "-t", "60", "-o", serverOptions(p, dir), "start");
    },
    stop() {
      running.delete(server);
      try {
        pgctl("-m", "immediate", "-w", "stop");
      } catch {
        // already stopped
      }
      execFileSync("rm", ["-rf", dir]);
    },
  };
  running.add(server);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const s of [...running]) s.stop();
    });
  }
  return server;
}
