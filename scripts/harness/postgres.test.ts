import { execSync } from "node:child_process";
import { existsSync } from "node:fs";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { asPostgres, parseStarted, serverOptions, startPg } from "./postgres";

describe("postgres harness helpers", () => {
  it("runs PostgreSQL's tools as the postgres user only when we are root", () => {
    expect(asPostgres(["pg_ctl", "stop"], 0)).toEqual(["runuser", "-u", "postgres", "--", "pg_ctl", "stop"]);
    expect(asPostgres(["pg_ctl", "stop"], 1000)).toEqual(["pg_ctl", "stop"]);
  });
  it("reads the folder and binaries from the last line pg_start's caller prints", () => {
    expect(parseStarted("noise\n/tmp/routeboard-pg.x|/usr/lib/postgresql/17/bin\n")).toEqual({ dir: "/tmp/routeboard-pg.x", bin: "/usr/lib/postgresql/17/bin" });
    expect(() => parseStarted("")).toThrow(/PG_DIR\|PG_BIN/);
  });
  it("restarts on loopback only, on the same port and socket folder", () => {
    expect(serverOptions(5544, "/tmp/d")).toBe("-p 5544 -c listen_addresses=127.0.0.1 -k /tmp/d -c fsync=off");
  });
});

const installed = (() => {
  try {
    return execSync("ls -d /usr/lib/postgresql/*/bin/initdb", { encoding: "utf8" }).trim() !== "";
  } catch {
    return false;
  }
})();

describe.skipIf(!installed)("startPg (needs PostgreSQL installed)", () => {
  it("starts a server of its own, survives a restart, and stop deletes its folder", { timeout: 60_000 }, async () => {
    const server = await startPg();
    try {
      const query = async () => {
        const c = new pg.Client({ connectionString: server.url });
        await c.connect();
        try {
          return (await c.query<{ n: number }>("select 1 as n")).rows[0]!.n;
        } finally {
          await c.end();
        }
      };
      expect(server.url).toBe(`postgres://postgres@127.0.0.1:${server.port}/postgres`);
      expect(await query()).toBe(1);
      await server.restart(100);
      expect(await query()).toBe(1);
    } finally {
      server.stop();
    }
    expect(existsSync(server.dir)).toBe(false);
  });
});
