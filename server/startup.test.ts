/**
 * Bad configuration stops start-up with one clear line on stderr, never a stack trace.
 * Runs the real entry point in a child process.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { startApp } from "@/scripts/harness/app";

function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", "server/main.ts"], {
      env: { PATH: process.env.PATH ?? "", HOME: os.tmpdir(), NODE_ENV: "production", PORT: "0", LOG_LEVEL: "silent", ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

function expectOneLine(stderr: string, pattern: RegExp) {
  const lines = stderr.trim().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
  expect(stderr).not.toMatch(/\n\s+at /);
}

describe("start-up with bad configuration", () => {
  it("refuses a malformed DATABASE_URL", async () => {
    const r = await start({ DATABASE_URL: "mysql://localhost/routeboard" });
    expect(r.code).toBe(1);
    expectOneLine(r.stderr, /^routeboard: Configuration error: DATABASE_URL must look like postgres:\/\//);
  });

  it("says which database it cannot reach", async () => {
    const r = await start({ DATABASE_URL: "postgres://routeboard@127.0.0.1:1/routeboard" });
    expect(r.code).toBe(1);
    expectOneLine(r.stderr, /^routeboard: Cannot reach the database at 127\.0\.0\.1:1\/routeboard \(ECONNREFUSED\): check DATABASE_URL/);
  });

  it("says the data folder is not writable", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "rb-notdir-"));
    const file = path.join(dir, "a-file");
    writeFileSync(file, "x");
    const r = await start({ DATA_DIR: path.join(file, "data") });
    expect(r.code).toBe(1);
    expectOneLine(r.stderr, /^routeboard: Data folder .* is not writable \(ENOTDIR\): set DATA_DIR/);
  });

  it("refuses an out-of-range PORT", async () => {
    const r = await start({ PORT: "70000" });
    expect(r.code).toBe(1);
    expectOneLine(r.stderr, /^routeboard: Configuration error: PORT/);
  });
});

describe("start banner", () => {
  it("names PUBLIC_URL (and the port it listens on) when set", async () => {
    const app = await startApp({ PUBLIC_URL: "https://vpn.example.com/", LOG_LEVEL: "silent" });
    try {
      await expect.poll(() => app.stdout(), { timeout: 30_000 }).toContain(`Routeboard is running on https://vpn.example.com (listening on port ${app.port}) — `);
    } finally {
      await app.stop();
    }
  }, 240_000);
});
