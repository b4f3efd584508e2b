/**
 * The README's "API tokens" examples, run as written: every ```sh block of that section,
 * in order, through bash with curl and jq against a real app listener. Only the `export`
 * lines (the reader's own address, token and cluster) are replaced by this app's.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { auditLog, clusters, operators, subscribers } from "@/db/schema";
import { createApiToken } from "@/server/accounts/api-tokens";
import { GIB } from "@/core/validation";
import { startTestApp, type TestApp } from "./http-testing";

process.env.DATA_DIR ??= mkdtempSync(path.join(os.tmpdir(), "rb-readme-"));

/** The shell of the README's API tokens section, without its `export` lines. */
function readmeExamples(readme: string): string {
  const start = readme.indexOf("\n## API tokens\n");
  const end = readme.indexOf("\n## ", start + 1);
  expect(start, "README has an API tokens section").toBeGreaterThan(0);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  expect(blocks.length).toBeGreaterThanOrEqual(4);
  return blocks
    .join("\n")
    .split("\n")
    .filter((line) => !line.startsWith("export "))
    .join("\n");
}

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ devtools: false });
  await app.cookie("owner");
}, 60_000);
afterAll(async () => app?.close());

it("the README's curl examples create a subscriber with its link, extend its expiry and read its usage", async () => {
  const db = app.database.db;
  const [owner] = await db.select().from(operators).where(eq(operators.username, "http-owner"));
  const [cluster] = await db.insert(clusters).values({ name: "Shop" }).returning();
  const { token } = await createApiToken(db, { operatorId: owner!.id, username: owner!.username }, { name: "readme-bot", scopes: ["read", "subscribers:write"] });
  const script = readmeExamples(readFileSync(path.join(process.cwd(), "README.md"), "utf8"));

  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(
      "bash",
      ["-c", `set -euo pipefail\n${script}`],
      { env: { NODE_ENV: "test", PATH: process.env.PATH, ROUTEBOARD: app.url, TOKEN: token, CLUSTER: cluster!.id }, timeout: 30_000, encoding: "utf8" },
      (err, out, errOut) => (err ? reject(new Error(`${err.message}\n${errOut}\n${out}`)) : resolve(out)),
    );
  });
  const lines = stdout.trim().split("\n");

  const [alice] = await db.select().from(subscribers).where(eq(subscribers.clusterId, cluster!.id));
  expect(alice).toMatchObject({ name: "alice", trafficLimitBytes: 50 * GIB, expiresAt: new Date("2030-01-31T23:59:59.000Z") });
  // 1: the link; 2: the update's answer; 3: the usage.
  expect(lines[0]).toBe(`${app.url}/sub/${alice!.token}`);
  expect(JSON.parse(lines[1]!)).toEqual({ ok: true });
  expect(JSON.parse(lines[2]!)).toEqual({
    name: "alice",
    trafficUsedBytes: 0,
    trafficUpBytes: 0,
    trafficDownBytes: 0,
    trafficLimitBytes: 50 * GIB,
    expiresAt: "2030-01-31T23:59:59.000Z",
    online: false,
    lastSeenAt: null,
  });
  expect(lines).toHaveLength(3);
  // The subscription link works, and both writes are the token's in the audit log.
  expect((await fetch(lines[0]!)).status).toBe(200);
  const audit = await db.select().from(auditLog).where(eq(auditLog.clusterId, cluster!.id));
  expect(audit.map((a) => [a.operatorName, a.action])).toEqual([
    ["token:readme-bot", "subscriber.create"],
    ["token:readme-bot", "subscriber.update"],
  ]);
}, 60_000);
