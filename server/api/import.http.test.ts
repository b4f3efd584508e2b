/**
 * POST /api/import and old subscription URLs over real HTTP: who may import (viewers and
 * tokens without subscribers:write may not; a cookie from another site may not), the report
 * and its status, and an imported subscriber's old URL answering byte-for-byte as
 * /sub/<token> on the path and host it had, never over the app's own routes. And
 * `npm run import` against the running app.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { auditLog, operators, subscribers } from "@/db/schema";
import { createApiToken } from "@/server/accounts/api-tokens";
import { REMNAWAVE_SUB_HOST, XUI_SUB_IDS } from "@/scripts/import-fixtures";
import { parseImportArgs } from "@/scripts/import";
import { MAX_IMPORT_BYTES } from "@/server/import/engine";
import { openDatabase } from "@/db/client";
import { clusters } from "@/db/schema";
import { startTestApp, type TestApp } from "./http-testing";
import { trpcHttp } from "./http-testing";

process.env.DATA_DIR ??= mkdtempSync(path.join(os.tmpdir(), "rb-import-http-"));
const root = path.resolve(__dirname, "../..");
const fixture = (name: string) => readFileSync(path.join(root, "server/import/fixtures", name));

let app: TestApp;
let ownerCookie: string;
let clusterId: string;
let writeToken: string;
let readToken: string;

const post = (query: string, body: Uint8Array | string, headers: Record<string, string>) =>
  fetch(`${app.url}/api/import?${query}`, { method: "POST", headers: { "content-type": "application/octet-stream", ...headers }, body: typeof body === "string" ? body : new Blob([new Uint8Array(body)]) });

beforeAll(async () => {
  app = await startTestApp({ devtools: false });
  ownerCookie = await app.cookie("owner");
  const created = await trpcHttp(app, ownerCookie, "mutation", "clusters.create", { name: "Imports" });
  clusterId = (created.body as { result: { data: { json: { id: string } } } }).result.data.json.id;
  const [op] = await app.database.db.select().from(operators).where(eq(operators.username, "http-owner"));
  const owner = { operatorId: op!.id, username: op!.username };
  writeToken = (await createApiToken(app.database.db, owner, { name: "importer", scopes: ["subscribers:write"], expiresAt: null })).token;
  readToken = (await createApiToken(app.database.db, owner, { name: "reader", scopes: ["read"], expiresAt: null })).token;
}, 60_000);
afterAll(async () => app?.close());

describe("POST /api/import", () => {
  it("refuses viewers, read-only tokens, no credentials, and a cookie sent from another site", async () => {
    const viewer = await app.cookie("viewer");
    const q = `cluster=${clusterId}&from=csv&dryRun=1`;
    expect((await post(q, "name\nx\n", { cookie: viewer })).status).toBe(403);
    const r = await post(q, "name\nx\n", { authorization: `Bearer ${readToken}` });
    expect(r.status).toBe(403);
    expect(((await r.json()) as { error: string }).error).toMatch(/needs the subscribers:write scope/);
    expect((await post(q, "name\nx\n", {})).status).toBe(401);
    expect((await post(q, "name\nx\n", { cookie: ownerCookie, "sec-fetch-site": "cross-site" })).status).toBe(403);
  });

  it("refuses a file over the size cap before reading it", async () => {
    const http = await import("node:http");
    const u = new URL(app.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        { host: u.hostname, port: u.port, method: "POST", path: `/api/import?cluster=${clusterId}&from=csv`, headers: { authorization: `Bearer ${writeToken}`, "content-length": String(MAX_IMPORT_BYTES + 1) } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
          req.destroy();
        },
      );
      req.on("error", (err) => (req.destroyed ? undefined : reject(err)));
      req.write("name\n");
    });
    expect(status).toBe(413);
  });

  it("names a bad query field", async () => {
    const r = await post(`cluster=${clusterId}&from=hiddify`, "x", { authorization: `Bearer ${writeToken}` });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toMatch(/from must be one of marzban, remnawave, 3x-ui, csv/);
  });

  it("a dry run answers the report and writes nothing; rows refused answer 422", async () => {
    const dry = await post(`cluster=${clusterId}&from=3x-ui&dryRun=1`, fixture("x-ui.db"), { authorization: `Bearer ${writeToken}` });
    expect(dry.status).toBe(200);
    expect(await dry.json()).toMatchObject({ dryRun: true, imported: false, created: 3, errorCount: 0 });
    expect(await app.database.db.select().from(subscribers).where(eq(subscribers.clusterId, clusterId))).toEqual([]);
    const bad = await post(`cluster=${clusterId}&from=csv`, "name,uuid\nok,\nbad,xyz\n", { cookie: ownerCookie, "sec-fetch-site": "same-origin" });
    expect(bad.status).toBe(422);
    expect(await bad.json()).toMatchObject({ imported: false, errorCount: 1, errors: [{ ref: "line 3", field: "uuid" }] });
  });

  it("imports, audits once, and the old URLs answer byte-for-byte as /sub/<token>", async () => {
    const r = await post(`cluster=${clusterId}&from=3x-ui`, fixture("x-ui.db"), { authorization: `Bearer ${writeToken}` });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ imported: true, created: 3, legacyLinks: 3 });
    const r2 = await post(`cluster=${clusterId}&from=remnawave`, fixture("remnawave-users.json"), { cookie: ownerCookie, "sec-fetch-site": "same-origin" });
    expect(await r2.json()).toMatchObject({ imported: true, created: 3 });
    const audits = await app.database.db.select().from(auditLog).where(eq(auditLog.action, "subscriber.import"));
    expect(audits.map((a) => a.operatorName).sort()).toEqual(["http-owner", "token:importer"].sort());

    const [ivan] = await app.database.db.select().from(subscribers).where(eq(subscribers.name, "ivan"));
    for (const q of ["", "?format=json", "?format=clash", "?format=singbox"]) {
      for (const ua of ["v2rayNG/1.8", "Mozilla/5.0 (X11) Chrome/120", "clash-verge/1.0"]) {
        const old = await fetch(`${app.url}/sub/${XUI_SUB_IDS.ivan}${q}`, { headers: { "user-agent": ua } });
        const now = await fetch(`${app.url}/sub/${ivan!.token}${q}`, { headers: { "user-agent": ua } });
        expect(old.status).toBe(200);
        expect(await old.text()).toBe(await now.text());
        expect(old.headers.get("subscription-userinfo")).toBe(now.headers.get("subscription-userinfo"));
        expect(old.headers.get("content-type")).toBe(now.headers.get("content-type"));
      }
    }
    // Remnawave's root path: on its own host only.
    const [frank] = await app.database.db.select().from(subscribers).where(eq(subscribers.name, "frank"));
    const http = await import("node:http");
    const get = (host: string, p: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const u = new URL(app.url);
        http
          .get({ host: u.hostname, port: u.port, path: p, headers: { host } }, (res) => {
            let body = "";
            res.on("data", (c) => (body += c));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
          })
          .on("error", reject);
      });
    const viaOldHost = await get(REMNAWAVE_SUB_HOST, "/fRaNkShOrTuUiD01?format=json");
    expect(viaOldHost.status).toBe(200);
    expect(viaOldHost.body).toBe((await get(REMNAWAVE_SUB_HOST, `/sub/${frank!.token}?format=json`)).body);
    // On the panel's host the same path is the dashboard's (here: the test's 404 fallback).
    expect((await get("panel.example.test", "/fRaNkShOrTuUiD01?format=json")).status).toBe(404);
  });

  it("a custom prefix is served outside /sub/, and an app route prefix is refused", async () => {
    const csv = "name,sub_token\nnora,noraOldToken9\n";
    const r = await post(`cluster=${clusterId}&from=csv&prefix=/legacy/sub/`, csv, { authorization: `Bearer ${writeToken}` });
    expect(await r.json()).toMatchObject({ imported: true, legacyLinks: 1 });
    const [nora] = await app.database.db.select().from(subscribers).where(eq(subscribers.name, "nora"));
    const old = await fetch(`${app.url}/legacy/sub/noraOldToken9?format=json`);
    expect(old.status).toBe(200);
    expect(await old.text()).toBe(await (await fetch(`${app.url}/sub/${nora!.token}?format=json`)).text());
    expect((await fetch(`${app.url}/legacy/sub/unknownToken1?format=json`)).status).toBe(404);
    const refused = await post(`cluster=${clusterId}&from=csv&prefix=/api/`, csv, { authorization: `Bearer ${writeToken}` });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toMatch(/shadow the app's own \/api\/ routes/);
  });
});

describe("npm run import", () => {
  it("parses its arguments, naming what is missing", () => {
    expect(parseImportArgs(["--from", "csv", "f.csv", "--cluster", "c", "--token", "t"], {})).toMatchObject({ from: "csv", file: "f.csv", cluster: "c", dryRun: false, app: "http://127.0.0.1:3000" });
    expect(parseImportArgs(["--from", "nope", "f"], {})).toEqual({ error: "--from must be one of marzban, remnawave, 3x-ui, csv (got nope)" });
    expect(parseImportArgs(["--from", "csv", "f", "--cluster", "c"], {})).toMatchObject({ error: expect.stringMatching(/needs an API token/) });
    expect(parseImportArgs(["--from", "csv", "f", "--cluster", "c", "--data-dir", "d", "--token", "t"], {})).toMatchObject({ error: expect.stringMatching(/do not go together/) });
  });

  it("imports through the running app with an API token and prints the report", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "rb-import-cli-"));
    const file = path.join(dir, "users.csv");
    writeFileSync(file, "name,uuid\ncli-user,0f0e0d0c-0b0a-4909-8807-060504030201\n");
    const run = promisify(execFile);
    const { stdout } = await run(process.execPath, ["--import", "tsx", path.join(root, "scripts/import.ts"), "--from", "csv", file, "--cluster", clusterId, "--app", app.url, "--token", writeToken], { cwd: root });
    expect(JSON.parse(stdout)).toMatchObject({ imported: true, created: 1 });
    const again = await run(process.execPath, ["--import", "tsx", path.join(root, "scripts/import.ts"), "--from", "csv", file, "--cluster", clusterId, "--app", app.url, "--token", writeToken], { cwd: root }).catch((e: { code: number; stdout: string }) => e);
    expect((again as { code: number }).code).toBe(1);
    expect(JSON.parse((again as { stdout: string }).stdout)).toMatchObject({ imported: false, conflicts: 2 });
  }, 60_000);

  it("imports into a stopped install's data dir, and refuses one an app has open", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "rb-import-datadir-"));
    const database = await openDatabase({ dataDir });
    const [c] = await database.db.insert(clusters).values({ name: "Stopped" }).returning();
    await database.close();
    const run = promisify(execFile);
    const args = [path.join(root, "scripts/import.ts"), "--from", "3x-ui", path.join(root, "server/import/fixtures/x-ui.db"), "--cluster", c!.id, "--data-dir", dataDir];
    const { stdout } = await run(process.execPath, ["--import", "tsx", ...args], { cwd: root });
    expect(JSON.parse(stdout)).toMatchObject({ imported: true, created: 3, legacyLinks: 3 });
    const reopened = await openDatabase({ dataDir });
    try {
      expect((await reopened.db.select().from(subscribers)).map((s) => s.name).sort()).toEqual(["ivan", "judy", "kate"]);
      // While open (here: by this test), the script refuses rather than open it twice.
      const busy = await run(process.execPath, ["--import", "tsx", ...args], { cwd: root }).catch((e: { code: number; stderr: string }) => e);
      expect((busy as { code: number }).code).toBe(1);
      expect((busy as { stderr: string }).stderr).toMatch(/an app has .* open/);
    } finally {
      await reopened.close();
    }
  }, 60_000);
});
