/**
 * Issue 21, point 6: probe fields that choose what the prober sends (method, headers,
 * payload) or reads back (headerMatch, bodyContains) are set by an admin signed in, never by
 * an API token, even one with topology:write whose creator is an admin. The refusal is a
 * FORBIDDEN naming the field, and changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { auditLog, clusters, operators, servers } from "@/db/schema";
import { openTestDatabase, type TestDatabase } from "@/db/testing";
import { createCaller } from "@/server/api/root";
import { adminAndViewer, failure, operatorContext } from "@/server/api/testing";

describe("probe request and response fields need a signed-in admin (pglite)", () => {
  let t: TestDatabase;
  let admin: Awaited<ReturnType<typeof adminAndViewer>>["admin"];
  let bot: ReturnType<typeof createCaller>;
  let clusterId: string;
  let serverId: string;

  beforeAll(async () => {
    t = await openTestDatabase("pglite");
    ({ admin } = await adminAndViewer(t.db));
    const [ada] = await t.db.select().from(operators).where(eq(operators.username, "ada"));
    // What createContext makes of a good bearer token created by an admin.
    bot = createCaller({ ...operatorContext(t.db, ada!.id, "token:ci-bot", "admin"), apiToken: { id: "00000000-0000-4000-8000-000000000001", name: "ci-bot", scopes: ["read", "topology:write"] } });
    const c = await bot.clusters.create({ name: "Tokens" });
    clusterId = c.id;
    // The token may still add a server at a loopback address (topology:write).
    const s = await bot.servers.create({ clusterId, name: "local", address: "127.0.0.1" });
    serverId = s.id;
  });
  afterAll(async () => {
    await t?.dispose();
  });

  const stored = async () => (await t.db.select({ p: clusters.probeConfig }).from(clusters).where(eq(clusters.id, clusterId)))[0]!.p;
  const audits = async () => (await t.db.select().from(auditLog).where(eq(auditLog.clusterId, clusterId))).length;
  const http = { protocol: "http" as const, path: "/health" };

  it("a token setting any of them gets FORBIDDEN naming the field, and nothing changes", async () => {
    const before = [await stored(), await audits()];
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ headers: { "X-Api-Key": "k" } }, "config.headers"],
      [{ method: "POST" }, "config.method"],
      [{ method: "HEAD" }, "config.method"],
      [{ payload: "{}" }, "config.payload"],
      [{ headerMatch: { "x-backend": "ready" } }, "config.headerMatch"],
      [{ bodyContains: "admin" }, "config.bodyContains"],
    ];
    for (const [extra, field] of cases) {
      const f = await failure(bot.monitoring.setProbeConfig({ clusterId, config: { ...http, ...extra } as never }));
      expect([field, f.code, Object.keys(f.fieldErrors)]).toEqual([field, "FORBIDDEN", [field]]);
      expect(f.message).toMatch(new RegExp(`^${field.replace(".", "\\.")}: .*need an admin signed in to the dashboard; API tokens cannot set them`));
    }
    for (const [extra, field] of cases) {
      const f = await failure(bot.monitoring.setServerProbeOverride({ serverId, override: extra as never }));
      const name = field.replace("config.", "override.");
      expect([name, f.code, Object.keys(f.fieldErrors)]).toEqual([name, "FORBIDDEN", [name]]);
    }
    expect([await stored(), await audits()]).toEqual(before);
    expect((await t.db.select({ o: servers.probeOverride }).from(servers).where(eq(servers.id, serverId)))[0]!.o).toBeNull();
  });

  it("a token may still set a plain HTTP probe (GET, path, status codes, timing)", async () => {
    await bot.monitoring.setProbeConfig({ clusterId, config: { ...http, method: "GET", statusCodes: "200-204", intervalS: 10 } as never });
    expect(await stored()).toMatchObject({ protocol: "http", method: "GET", path: "/health", statusCodes: "200-204", intervalS: 10 });
    await bot.monitoring.setServerProbeOverride({ serverId, override: { intervalS: 20 } });
  });

  it("an admin signed in sets them; a token may keep them as stored but not change them", async () => {
    const full = { ...http, method: "POST" as const, headers: { "X-Api-Key": "k1" }, payload: "{}", headerMatch: { "x-backend": "ready" }, bodyContains: "UP" };
    await admin.monitoring.setProbeConfig({ clusterId, config: full as never });
    // Re-saving what it read, with another interval: the admin's fields stay.
    const { config } = await bot.monitoring.getProbeConfig({ clusterId });
    await bot.monitoring.setProbeConfig({ clusterId, config: { ...config, intervalS: 15, headers: { "X-Api-Key": "k1" } } });
    expect(await stored()).toMatchObject({ ...full, intervalS: 15 });
    const f = await failure(bot.monitoring.setProbeConfig({ clusterId, config: { ...config, headers: { "X-Api-Key": "k2" } } }));
    expect([f.code, Object.keys(f.fieldErrors)]).toEqual(["FORBIDDEN", ["config.headers"]]);
    const g = await failure(bot.monitoring.setProbeConfig({ clusterId, config: { ...config, bodyContains: "DOWN" } }));
    expect([g.code, Object.keys(g.fieldErrors)]).toEqual(["FORBIDDEN", ["config.bodyContains"]]);
    await admin.monitoring.setServerProbeOverride({ serverId, override: { headers: { Cookie: "sid=1" }, method: "HEAD" } });
    await bot.monitoring.setServerProbeOverride({ serverId, override: { headers: { Cookie: "sid=1" }, method: "HEAD", intervalS: 30 } });
    expect((await t.db.select({ o: servers.probeOverride }).from(servers).where(eq(servers.id, serverId)))[0]!.o).toEqual({ headers: { Cookie: "sid=1" }, method: "HEAD", intervalS: 30 });
  });
});
