/**
 * The import engine against a real database: each fixture imported, all or nothing, the dry
 * run writing nothing, clashes named, and an imported subscriber's old URL answered exactly as
 * /sub/<their token>.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { auditLog, clusters, legacyMarzbanSecrets, serverHealth, servers, subscriberLegacyLinks, subscribers } from "@/db/schema";
import { seedDemoCluster } from "@/server/demo/seed";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { publishChange } from "@/server/bus";
import { SubscriptionService } from "@/server/subscription/service";
import { rotateSubscriberToken } from "@/server/accounts/subscribers";
import { FIXTURE_UUIDS, MARZBAN_SECRET, REMNAWAVE_SUB_HOST, XUI_SUB_IDS } from "@/scripts/import-fixtures";
import { buildClusterConfigs } from "@/server/dataplane/config";
import { renderSubscription, type SubscriptionEntry } from "@/server/subscription/formats";
import { importSubscribers, type ImportOptions } from "./engine";
import { marzbanToken } from "./legacy";

const fixture = (name: string) => new Uint8Array(readFileSync(path.join(__dirname, "fixtures", name)));
const text = (s: string) => new Uint8Array(Buffer.from(s, "utf8"));

describe.each(testDbKinds())("import engine on %s", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  let otherClusterId: string;
  let service: SubscriptionService;
  const run = (o: Partial<ImportOptions> & Pick<ImportOptions, "source" | "bytes">) => importSubscribers(t.db, null, { clusterId, dryRun: false, ...o });
  const count = async () => (await t.db.select({ id: subscribers.id }).from(subscribers).where(eq(subscribers.clusterId, clusterId))).length;

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    clusterId = await seedDemoCluster(t.db, "Import");
    otherClusterId = await seedDemoCluster(t.db, "Other");
    for (const s of await t.db.select().from(servers)) await t.db.update(serverHealth).set({ status: "healthy" }).where(eq(serverHealth.serverId, s.id));
    service = new SubscriptionService(t.db);
    service.start();
  });
  afterAll(async () => {
    await service?.stop();
    await t?.dispose();
  });

  it("a dry run reports what would happen and writes nothing", async () => {
    const before = await count();
    const w = await run({ source: "marzban", bytes: fixture("marzban.sqlite3"), dryRun: true });
    expect(w.result).toMatchObject({ dryRun: true, imported: false, rows: 5, created: 5, legacyLinks: 5, conflicts: 0, errorCount: 0, warningCount: 1 });
    expect(w.changes).toEqual([]);
    expect(await count()).toBe(before);
  });

  it("one bad row: nothing is written, and the report names it", async () => {
    const before = await count();
    const csv = `name,uuid\nfine-one,\nbad-one,not-a-uuid\n`;
    const w = await run({ source: "csv", bytes: text(csv) });
    expect(w.result).toMatchObject({ imported: false, created: 0, errorCount: 1 });
    expect(w.result.errors[0]).toMatchObject({ ref: "line 3", field: "uuid" });
    expect(await count()).toBe(before);
  });

  it("imports Marzban's database: kept fields, one audit entry, one change for the cluster", async () => {
    const w = await run({ source: "marzban", bytes: fixture("marzban.sqlite3") });
    expect(w.result).toMatchObject({ imported: true, created: 5, errorCount: 0 });
    expect(w.changes).toEqual([{ kind: "subscribers", clusterId }]);
    const [anna] = await t.db.select().from(subscribers).where(eq(subscribers.name, "anna"));
    expect(anna).toMatchObject({
      vlessUuid: FIXTURE_UUIDS.anna,
      trojanPassword: "anna-Trojan-pass-7",
      enabled: true,
      trafficLimitBytes: 10 * 1024 ** 3,
      trafficUsedBytes: 1024 ** 3,
      trafficResetStrategy: "monthly",
      trafficResetDay: 15,
      note: "VIP, pays yearly",
    });
    // Agents get her own Trojan password; others' stay derived (no field: older agents parse them).
    const configs = await buildClusterConfigs(t.db, clusterId);
    expect(configs.users.find((u) => u.id === FIXTURE_UUIDS.anna)).toEqual({ id: FIXTURE_UUIDS.anna, email: anna!.id, password: "anna-Trojan-pass-7" });
    expect(Object.keys(configs.users.find((u) => u.id === FIXTURE_UUIDS.elena) ?? {})).toEqual([]); // expired: not in the config
    expect(configs.users.filter((u) => "password" in u)).toHaveLength(1);
    const [clara] = await t.db.select().from(subscribers).where(eq(subscribers.name, "clara"));
    expect(clara).toMatchObject({ holdDays: 30, expiresAt: null });
    const audits = await t.db.select().from(auditLog).where(eq(auditLog.action, "subscriber.import"));
    expect(audits).toHaveLength(1);
    expect(audits[0]!.summary).toBe("Imported 5 subscribers from marzban (5 old subscription URLs kept, 1 warnings)");
    expect(JSON.stringify(audits[0])).not.toContain(MARZBAN_SECRET);
    expect(await t.db.select().from(legacyMarzbanSecrets)).toHaveLength(1);
  });

  it("a second import of the same users names every clash and writes nothing", async () => {
    const w = await run({ source: "marzban", bytes: fixture("marzban-dump.sql") });
    expect(w.result).toMatchObject({ imported: false, conflicts: 16, errorCount: 16 });
    expect(w.result.errors.filter((e) => e.ref === "user anna").map((e) => e.field)).toEqual(["name", "UUID", "trojan password", "subscription URL"]);
  });

  it("any token Marzban signed for the user answers exactly as /sub/<token>; others and revoked ones do not", async () => {
    publishChange("subscribers", clusterId);
    const [anna] = await t.db.select().from(subscribers).where(eq(subscribers.name, "anna"));
    for (const at of [1_700_000_000, 1_750_000_000]) {
      const old = marzbanToken("anna", MARZBAN_SECRET, at);
      for (const format of [null, "json", "clash", "singbox"]) {
        const viaOld = await service.answerPath(null, `/sub/${old}`, old, format, { userAgent: "v2rayN/6.0" });
        const viaNew = await service.answer(anna!.token, format, { userAgent: "v2rayN/6.0" });
        expect(viaOld.status).toBe(200);
        expect(viaOld).toEqual(viaNew);
      }
    }
    // Trojan links carry the password she had, in every format.
    const trojanEntry: SubscriptionEntry = { routeId: "r", route: "R", inboundId: "i", inbound: "T", server: "s", address: "203.0.113.9", port: 443, security: "tls", sni: "t.example", realityPublicKey: null, realityShortId: null, protocol: "trojan" };
    for (const format of ["base64", "json", "clash", "singbox"] as const) {
      const body = renderSubscription(format, anna!.vlessUuid, [trojanEntry], anna!.trojanPassword);
      expect(format === "base64" ? Buffer.from(body, "base64").toString() : body).toContain("anna-Trojan-pass-7");
    }
    const forged = marzbanToken("anna", "not the secret", 1_700_000_000);
    expect((await service.answerPath(null, `/sub/${forged}`, forged, null)).status).toBe(404);
    // dmitri revoked his link on 2024-06-01: a token signed before then is refused, one after works.
    const before = marzbanToken("dmitri", MARZBAN_SECRET, Date.parse("2024-05-01T00:00:00Z") / 1000);
    const after = marzbanToken("dmitri", MARZBAN_SECRET, Date.parse("2024-07-01T00:00:00Z") / 1000);
    expect((await service.answerPath(null, `/sub/${before}`, before, "json")).status).toBe(404);
    expect((await service.answerPath(null, `/sub/${after}`, after, "json")).status).toBe(200);
    // Only under the prefix it was imported with.
    expect(service.mayServeLegacy(null, `/elsewhere/${after}`)).toBe(false);
  });

  it("imports 3x-ui's database and Remnawave's JSON: sub ids and short UUIDs keep answering", async () => {
    expect((await run({ source: "3x-ui", bytes: fixture("x-ui.db") })).result).toMatchObject({ imported: true, created: 3, legacyLinks: 3 });
    expect((await run({ source: "remnawave", bytes: fixture("remnawave-users.json") })).result).toMatchObject({ imported: true, created: 3, legacyLinks: 3 });
    publishChange("subscribers", clusterId);
    const [ivan] = await t.db.select().from(subscribers).where(eq(subscribers.name, "ivan"));
    expect((await service.answerPath(null, `/sub/${XUI_SUB_IDS.ivan}`, XUI_SUB_IDS.ivan, "json")).body).toBe((await service.answer(ivan!.token, "json")).body);
    // Remnawave's root path: on its old host only, never at the root of the panel's own host.
    const [frank] = await t.db.select().from(subscribers).where(eq(subscribers.name, "frank"));
    expect(service.mayServeLegacy(REMNAWAVE_SUB_HOST, "/fRaNkShOrTuUiD01")).toBe(true);
    expect(service.mayServeLegacy("panel.example.test", "/fRaNkShOrTuUiD01")).toBe(false);
    expect((await service.answerPath(REMNAWAVE_SUB_HOST, "/fRaNkShOrTuUiD01", "fRaNkShOrTuUiD01", "clash")).body).toBe((await service.answer(frank!.token, "clash")).body);
  });

  it("rotating a subscriber's key ends their old URLs and own Trojan password too", async () => {
    const [ivan] = await t.db.select().from(subscribers).where(eq(subscribers.name, "ivan"));
    expect(ivan!.trojanPassword).toBe("ivan-Trojan-8443");
    await rotateSubscriberToken(t.db, null, { subscriberId: ivan!.id });
    publishChange("subscribers", clusterId);
    expect((await service.answerPath(null, `/sub/${XUI_SUB_IDS.ivan}`, XUI_SUB_IDS.ivan, "json")).status).toBe(404);
    const [after] = await t.db.select().from(subscribers).where(eq(subscribers.id, ivan!.id));
    expect(after!.trojanPassword).toBeNull();
    expect(await t.db.select().from(subscriberLegacyLinks).where(eq(subscriberLegacyLinks.subscriberId, ivan!.id))).toEqual([]);
  });

  it("duplicates inside one file are named; a name taken in another cluster is not a clash; bad prefixes are refused", async () => {
    const csv = `name,uuid,sub_token\nx1,${FIXTURE_UUIDS.kate.replace("e5", "00")},tok1\nX1,,tok2\nx3,,tok1\nanna,,\n`;
    const w = await run({ source: "csv", bytes: text(csv), clusterId: otherClusterId });
    expect(w.result.errors.map((e) => [e.ref, e.field])).toEqual([
      ["line 3", "name"],
      ["line 4", "subscription URL"],
    ]);
    await expect(run({ source: "csv", bytes: text("name\na\n"), legacyPrefix: "/api/" })).rejects.toThrow(/shadow the app's own \/api\/ routes/);
    await expect(run({ source: "csv", bytes: text("name\na\n"), legacyPrefix: "/" })).rejects.toThrow(/needs the old subscription host/);
    await expect(run({ source: "csv", bytes: text("") })).rejects.toThrow(/empty/);
    await expect(run({ source: "csv", bytes: text("name\na\n"), clusterId: "00000000-0000-4000-8000-000000000000" })).rejects.toThrow(/No such cluster/);
    expect((await t.db.select().from(clusters)).length).toBe(2);
  });
});
