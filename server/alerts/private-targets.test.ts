/**
 * Webhook targets on this machine or a private network (issue 21, point 5), with
 * ROUTEBOARD_ALERTS_ALLOW_PRIVATE unset as in production: refused on save naming `url` in
 * every form the issue delivered to, and refused at delivery when a saved name resolves to
 * 127.0.0.1 (DNS rebinding), with a fixed stored error and nothing reaching the receiver.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { alertDeliveries, alertTargets } from "@/db/schema";
import { openTestDatabase, type TestDatabase } from "@/db/testing";
import { adminAndViewer, failure } from "@/server/api/testing";
import { createAlertTarget, listAlertTargets, sendTestAlert } from "./targets";
import { env } from "@/server/env";
import { PRIVATE_ADDRESS_REASON, type LookupFn } from "./address-guard";
import { AlertWorker } from "./worker";

const SECRET = "webhook-secret-0123456789";

describe("webhook targets on private addresses (pglite, ROUTEBOARD_ALERTS_ALLOW_PRIVATE unset)", () => {
  let t: TestDatabase;
  let rx: Server;
  let port: number;
  let hits = 0;
  let admin: Awaited<ReturnType<typeof adminAndViewer>>["admin"];

  beforeAll(async () => {
    t = await openTestDatabase("pglite");
    ({ admin } = await adminAndViewer(t.db));
    rx = createServer((req, res) => {
      hits++;
      req.resume();
      res.end("ok");
    });
    await new Promise<void>((resolve) => rx.listen(0, "127.0.0.1", resolve));
    port = (rx.address() as AddressInfo).port;
  });
  afterAll(async () => {
    rx?.closeAllConnections();
    await new Promise<void>((resolve) => (rx ? rx.close(() => resolve()) : resolve()));
    await t?.dispose();
  });

  it("the switch is off by default", () => {
    expect(env().ROUTEBOARD_ALERTS_ALLOW_PRIVATE).toBe(false);
  });

  it("every loopback form the issue delivered to is refused on create and on edit, naming url; nothing is saved", async () => {
    const base = { name: "hook", kind: "webhook" as const, clusterId: null, secret: SECRET, events: ["server.down"] };
    const forms = ["127.0.0.1", "localhost", "[::1]", "0.0.0.0", "2130706433", "0x7f000001", "127.1", "0177.0.0.1", "[::ffff:127.0.0.1]", "169.254.169.254", "192.168.0.10", "[fd00::1]"];
    for (const host of forms) {
      const f = await failure(admin.alerts.create({ ...base, url: `http://${host}:${port}/hook` }));
      expect([host, f.code, Object.keys(f.fieldErrors)]).toEqual([host, "BAD_REQUEST", ["url"]]);
      expect(f.message).toMatch(/must not point at this machine or a private network/);
    }
    expect(await t.db.select().from(alertTargets)).toHaveLength(0);

    const ok = await admin.alerts.create({ ...base, url: "https://hooks.example.test/services/T0/B0/secret" });
    const f = await failure(admin.alerts.update({ ...base, targetId: ok!.id, url: "http://0x7f000001/hook" }));
    expect([f.code, Object.keys(f.fieldErrors)]).toEqual(["BAD_REQUEST", ["url"]]);
    const [stored] = await t.db.select().from(alertTargets);
    expect(stored!.url).toBe("https://hooks.example.test/services/T0/B0/secret");
    await admin.alerts.delete({ targetId: ok!.id });
  });

  it("at delivery, a saved name that now resolves to 127.0.0.1 is refused: fixed stored error, nothing received", async () => {
    // Public-looking on save; the resolver answers 127.0.0.1 when the worker sends.
    const target = await createAlertTarget(t.db, null, { name: "rebound", kind: "webhook", clusterId: null, url: `http://hooks.rebind.test:${port}/hook`, secret: SECRET, events: ["server.down"], enabled: true });
    const rebinding: LookupFn = (_name, options, cb) => (options.all ? cb(null, [{ address: "127.0.0.1", family: 4 }]) : cb(null, "127.0.0.1", 4));
    // A row saved before the guard existed, naming `localhost`.
    const [old] = await t.db.insert(alertTargets).values({ name: "old local", kind: "webhook", url: `http://localhost:${port}/hook`, secret: SECRET, events: ["server.down"] }).returning();
    await sendTestAlert(t.db, null, target!.id);
    await sendTestAlert(t.db, null, old!.id);
    const outcomes = await new AlertWorker({ db: t.db, telegramApiUrl: "http://127.0.0.1:9", lookup: rebinding, timeoutMs: 2000 }).runOnce();
    expect(outcomes.map((o) => [o.ok, o.error])).toEqual([
      [false, PRIVATE_ADDRESS_REASON],
      [false, PRIVATE_ADDRESS_REASON],
    ]);
    expect(hits).toBe(0);
    const views = await listAlertTargets(t.db);
    expect(views.map((v) => [v.name, v.state, v.lastError])).toEqual([
      ["old local", "failing", PRIVATE_ADDRESS_REASON],
      ["rebound", "failing", PRIVATE_ADDRESS_REASON],
    ]);
    expect((await t.db.select().from(alertDeliveries).where(eq(alertDeliveries.targetId, target!.id)))[0]).toMatchObject({ state: "failed", lastError: PRIVATE_ADDRESS_REASON });

    // The lab switch lets the same targets through.
    await sendTestAlert(t.db, null, target!.id);
    await sendTestAlert(t.db, null, old!.id);
    const lab = await new AlertWorker({ db: t.db, telegramApiUrl: "http://127.0.0.1:9", lookup: rebinding, allowPrivate: true, timeoutMs: 2000 }).runOnce();
    expect(lab.map((o) => o.ok)).toEqual([true, true]);
    expect(hits).toBe(2);
  });
});
