/**
 * A PostgreSQL server of a test's own (scripts/pg.sh), so the test may restart it without
 * disturbing anything else.
 */
import { execFileSync } from "node:child_process";
import { freePort } from "./app-process";

export interface PgServer {
  url: string;
  dir: string;
  bin: string;
  restart(downMs?: number): Promise<void>;
  stop(): void;
}

function asPostgres(cmd: string[]): string[] {
  return process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...cmd] : cmd;
}

function run(cmd: string[]) {
  execFileSync(cmd[0]!, cmd.slice(1), { stdio: "pipe" });
}

export async function startPg(): Promise<PgServer> {
  const port = await freePort();
  const out = execFileSync("bash", ["-c", `source scripts/pg.sh && pg_start ${port} && echo "$PG_DIR|$PG_BIN"`], { encoding: "utf8" }).trim();
  const [dir, bin] = out.split("\n").pop()!.split("|") as [string, string];
  const pgctl = (...args: string[]) => run(asPostgres([`${bin}/pg_ctl`, "-D", `${dir}/data`, ...args]));
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    dir,
    bin,
    async restart(downMs = 2000) {
      pgctl("-m", "fast", "-w", "stop");
      await new Promise((r) => setTimeout(r, downMs));
      pgctl("-l", `${dir}/server.log`, "-w", "-t", "60", "-o", `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off`, "start");
    },
    stop() {
      try {
        pgctl("-m", "immediate", "-w", "stop");
      } catch {
        // already stopped
      }
      execFileSync("rm", ["-rf", dir]);
    },
  };
}
