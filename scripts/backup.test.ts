/**
 * Backup and restore of an embedded install (issue 27, point 6), as an operator runs them:
 * `npm run backup` against a running app (real processes, real HTTP), `npm run restore` into
 * a new data folder, a second app started on it; every subscriber's /sub answers byte for
 * byte as before, and sessions survive (the session secret travels with the database).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeBackup, restoreBackup } from "../db/backup";
import { ROOT, startApp, type AppProcess } from "./harness/app";
import { loginToApp, trpcClient, fetchTransport, type LoggedInClient } from "./harness/trpc";
import { parseBackupArgs } from "./backup";
import { parseRestoreArgs } from "./restore";

const run = promisify(execFile);
const OWNER = { ADMIN_USERNAME: "owner", ADMIN_PASSWORD: "backup-owner-password-1", ROUTEBOARD_DEMO: "0" };

/** Runs one of the npm scripts as `npm run` does (tsx), and says how it ended. */
async function script(name: "backup" | "restore", args: string[]) {
  try {
    const r = await run(process.execPath, ["--import", "tsx", path.join(ROOT, "scripts", `${name}.ts`), ...args], { cwd: ROOT });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("npm run backup / npm run restore", () => {
  let app: AppProcess | undefined;
  let restored: AppProcess | undefined;
  let owner: LoggedInClient;
  const work = mkdtempSync(path.join(os.tmpdir(), "rb-backup-test-"));
  const tokens: string[] = [];
  const answers = new Map<string, string>();
  let backupToken = "";

  const fetchAll = async (url: string) => {
    const out = new Map<string, string>();
    for (const t of tokens) {
      for (const format of ["", "?format=json", "?format=clash"]) {
        const res = await fetch(`${url}/sub/${t}${format}`);
        out.set(`${t}${format}`, `${res.status}\n${res.headers.get("subscription-userinfo")}\n${await res.text()}`);
      }
    }
    return out;
  };

  beforeAll(async () => {
    app = await startApp(OWNER, { readyTimeoutMs: 170_000 });
    owner = await loginToApp(app.url, OWNER.ADMIN_USERNAME, OWNER.ADMIN_PASSWORD);
    const cluster = await owner.mutation<{ id: string }>("clusters.create", { name: "Backed up" });
    for (const [i, port] of [
      [1, 8443],
      [2, 9443],
    ] as const) {
      const s = await owner.mutation<{ id: string }>("servers.create", { clusterId: cluster.id, name: `s${i}`, address: `192.0.2.${i}`, role: "node", coefficient: 1, capacityMbps: null, enabled: true });
      await owner.mutation("inbounds.create", { serverId: s.id, name: `Node ${i}`, port, security: "none", sni: null });
    }
    for (const name of ["alice", "bob", "carol", "dave"]) {
      const sub = await owner.mutation<{ token: string }>("subscribers.create", { clusterId: cluster.id, name, expiresAt: null, trafficLimitGb: name === "dave" ? 5 : null });
      tokens.push(sub.token);
    }
    backupToken = (await owner.mutation<{ token: string }>("apiTokens.create", { name: "nightly-backup", scopes: ["backup"] })).token;
  }, 180_000);
  afterAll(async () => {
    await restored?.stop();
    await app?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it("reads its flags, and says what is missing", () => {
    expect(parseBackupArgs(["--out", "f"], {})).toEqual({ error: expect.stringMatching(/API token with the backup scope/) as unknown as string });
    expect(parseBackupArgs(["--out", "f", "--token", "t"], { PORT: "4100" })).toEqual({ out: "f", token: "t", app: "http://127.0.0.1:4100", force: false });
    expect(parseBackupArgs(["--out", "f", "--data-dir", "d", "--token", "t"], {})).toEqual({ error: expect.stringMatching(/do not go together/) as unknown as string });
    expect(parseBackupArgs([], {})).toEqual({ error: "--out FILE is required" });
    expect(parseRestoreArgs(["f"])).toEqual({ error: expect.stringMatching(/--data-dir DIR is required/) as unknown as string });
    expect(parseRestoreArgs(["f", "--data-dir", "d", "--force"])).toEqual({ file: "f", dataDir: "d", force: true });
  });

  it("refuses a token without the backup scope, and a token of someone who is not the owner", async () => {
    const reader = (await owner.mutation<{ token: string }>("apiTokens.create", { name: "reader", scopes: ["read"] })).token;
    const r = await script("backup", ["--out", path.join(work, "no.backup"), "--app", app!.url, "--token", reader]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/answered 403: \/api\/backup needs the backup scope: this token has read/);
    expect(existsSync(path.join(work, "no.backup"))).toBe(false);
    await owner.mutation("operators.create", { username: "ada", password: "ada-admin-password-2", role: "admin" });
    const ada = await loginToApp(app!.url, "ada", "ada-admin-password-2");
    await expect(ada.mutation("apiTokens.create", { name: "sneaky", scopes: ["backup"] })).rejects.toThrow(/Only the owner can create a token with the backup scope/);
    const anonymous = await fetch(`${app!.url}/api/backup`);
    expect(anonymous.status).toBe(401);
    // The folder of a running app is never opened a second time.
    const offline = await script("backup", ["--out", path.join(work, "no.backup"), "--data-dir", app!.dataDir]);
    expect(offline.code).toBe(1);
    expect(offline.stderr).toMatch(/has .* open \(or did not stop cleanly\): take the backup from the running app/);
    expect(existsSync(path.join(work, "no.backup"))).toBe(false);
  });

  it("backs up the running app, restores into a new folder, and a second app answers every /sub as before", async () => {
    const before = await fetchAll(app!.url);
    // Stored choices make the answers stable: asking again changes nothing.
    expect(await fetchAll(app!.url)).toEqual(before);
    for (const [k, v] of before) answers.set(k, v);
    expect([...answers.values()].every((v) => v.startsWith("200\n"))).toBe(true);

    const file = path.join(work, "routeboard.backup");
    const taken = await script("backup", ["--out", file, "--app", app!.url, "--token", backupToken]);
    expect(taken.stderr).toBe("");
    expect(taken.code).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const { manifest } = decodeBackup(readFileSync(file));
    expect(Object.keys(manifest.files)).toEqual(["session-secret"]);
    expect(manifest.migration).toMatch(/^\d{4}_/);
    // It will not overwrite a backup by accident.
    expect((await script("backup", ["--out", file, "--app", app!.url, "--token", backupToken])).stderr).toMatch(/exists: choose another name, or pass --force/);

    const dataDir = path.join(work, "restored");
    const r = await script("restore", [file, "--data-dir", dataDir]);
    expect(r.stderr).toBe("");
    expect(r.stdout).toMatch(/start the app with DATA_DIR=/);
    expect(readFileSync(path.join(dataDir, "session-secret"), "utf8")).toBe(readFileSync(path.join(app!.dataDir, "session-secret"), "utf8"));
    expect(statSync(path.join(dataDir, "session-secret")).mode & 0o777).toBe(0o600);
    const again = await script("restore", [file, "--data-dir", dataDir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/is not empty .*pass --force/);

    restored = await startApp(OWNER, { dataDir, readyTimeoutMs: 170_000 });
    expect(await fetchAll(restored.url)).toEqual(before);
    // The owner's session from the first app is good on the second: same sessions, same secret.
    const sameSession = trpcClient(restored.url, fetchTransport(restored.url, owner.cookie));
    expect(await sameSession.query("auth.me")).toEqual({ username: "owner", role: "owner" });
  }, 240_000);

  it("backs up a stopped install from its folder, and restore --force replaces a folder", async () => {
    await restored!.stop({ keepData: true });
    const dataDir = restored!.dataDir;
    restored = undefined;
    const file = path.join(work, "offline.backup");
    const taken = await script("backup", ["--out", file, "--data-dir", dataDir]);
    expect(taken.stderr).toBe("");
    const target = path.join(work, "replaced");
    await restoreBackup(readFileSync(path.join(work, "routeboard.backup")), target);
    writeFileSync(path.join(target, "stray"), "x");
    const forced = await script("restore", [file, "--data-dir", target, "--force"]);
    expect(forced.stderr).toBe("");
    expect(existsSync(path.join(target, "stray"))).toBe(false);
    expect(existsSync(path.join(target, "pglite", "PG_VERSION"))).toBe(true);
    await expect(restoreBackup(Buffer.from("not a backup"), path.join(work, "bad"))).rejects.toThrow(/not a Routeboard backup/);
  }, 120_000);
});
