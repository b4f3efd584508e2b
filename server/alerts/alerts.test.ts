/**
 * Alerts end to end inside the server, against a real database and a local HTTP receiver on
 * 127.0.0.1: events come from the real state changes (agent reports through the report route,
 * the traffic fold, the panic check), go through the outbox and the worker.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { eq, sql } from "drizzle-orm";
import { TRPCError } from "@trpc/server";
import { alertDeliveries, alertEvents, alertTargets, auditLog, clusters, inbounds, routes, servers, subscriberAlertState, subscribers } from "@/db/schema";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { adminAndViewer } from "@/server/api/testing";
import { hashAgentToken } from "@/server/auth/tokens";
import { createAlertTarget, listAlertTargets, sendTestAlert } from "./targets";
import { TestReportIntake } from "@/server/dataplane/report-testing";
import { recomputeServer } from "@/server/monitoring/status";
import { agentReport } from "@/server/monitoring/testing";
import { MASKED } from "@/server/secrets";
import { NO_ANSWER_REASON, verifySignature } from "./delivery";
import { evaluateRoutePanic } from "./outbox";
import { checkSubscriberBlocks } from "@/server/usage/block-alerts";
import { AlertWorker } from "./worker";
import { publishChange } from "@/server/bus";

// Every receiver here is on 127.0.0.1: the lab switch (refusals without it: private-targets.test.ts).
vi.stubEnv("ROUTEBOARD_ALERTS_ALLOW_PRIVATE", "1");
afterAll(() => {
  vi.unstubAllEnvs();
});

interface Received {
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
}

/** A local receiver: records every request; `answer` decides each reply (or never replies). */
async function receiver() {
  const got: Received[] = [];
  let answer: (r: Received, res: ServerResponse) => void = (_r, res) => res.end("ok");
  const open = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      const r = { path: req.url ?? "", headers: req.headers, body };
      got.push(r);
      open.add(res);
      res.on("close", () => open.delete(res));
      answer(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    got,
    base: `http://127.0.0.1:${port}`,
    setAnswer(fn: typeof answer) {
      answer = fn;
    },
    async close() {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const SECRET = "webhook-secret-0123456789";
const BOT = "123456789:AAEtestTOKENtestTOKENtestTOKEN12";

describe.each(testDbKinds())("alerts (%s)", (kind) => {
  let t: TestDatabase;
  let rx: Awaited<ReturnType<typeof receiver>>;
  let clusterId: string;
  let routeId: string;
  const serverIds: string[] = [];
  const tokens: string[] = [];
  // Starts at the real time: the traffic fold and the router stamp events with Date.now().
  let clock = Date.now();
  const now = () => clock;
  let intake: TestReportIntake;
  /** Each report one report interval after the one before: the rate limit lets every one in. */
  const REPORT_INTERVAL_S = 60;
  const reportAs = (token: string, over: Parameters<typeof agentReport>[0] = {}) =>
    intake.send(`Bearer ${token}`, JSON.stringify(agentReport(over)), (clock += REPORT_INTERVAL_S * 1000));
  const worker = (over: Partial<ConstructorParameters<typeof AlertWorker>[0]> = {}) =>
    new AlertWorker({ db: t.db, telegramApiUrl: rx.base, allowPrivate: true, now, retry: { baseDelayMs: 1000, maxDelayMs: 60_000, maxAttempts: 4, jitter: 0 }, timeoutMs: 1000, ...over });
  const report = (i: number, over: Parameters<typeof agentReport>[0] = {}) => reportAs(tokens[i]!, over);
  const eventsOf = async (type: string) => (await t.db.select().from(alertEvents).where(eq(alertEvents.type, type))).length;

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    rx = await receiver();
    const [c] = await t.db.insert(clusters).values({ name: "Europe", reportIntervalS: REPORT_INTERVAL_S, probeConfig: { enabled: false } }).returning();
    clusterId = c!.id;
    const [r] = await t.db.insert(routes).values({ clusterId, name: "🇩🇪 Germany" }).returning();
    routeId = r!.id;
    for (let i = 0; i < 2; i++) {
      const token = `alert-tok-${i}-${randomUUID()}`;
      const [s] = await t.db.insert(servers).values({ clusterId, name: `fra-${i + 1}`, address: `10.0.0.${i + 1}`, agentTokenHash: hashAgentToken(token) }).returning();
      serverIds.push(s!.id);
      tokens.push(token);
      await t.db.insert(inbounds).values({ clusterId, serverId: s!.id, routeId, name: `in-${i}`, port: 443 });
    }
    intake = await TestReportIntake.start(t, clock);
  });
  afterAll(async () => {
    await intake?.close();
    await rx?.close();
    await t?.dispose();
  });
  beforeEach(() => {
    rx.got.length = 0;
    rx.setAnswer((_r, res) => res.end("ok"));
  });
  afterEach(async () => {
    // Each test starts with no targets and no pending deliveries.
    await t.db.delete(alertTargets);
    await t.db.delete(alertEvents);
  });

  it("a new server failing from the start, and its first success, alert nobody; its first outage after that does", async () => {
    await createAlertTarget(t.db, null, { name: "setup hook", kind: "webhook", clusterId, url: `${rx.base}/setup`, secret: SECRET, events: ["server.down", "server.up"], enabled: true });
    const token = `alert-new-${randomUUID()}`;
    await t.db.insert(servers).values({ clusterId, name: "fra-new", address: "10.0.0.9", agentTokenHash: hashAgentToken(token) });
    const send = (over: Parameters<typeof agentReport>[0] = {}) => reportAs(token, over);
    expect((await send({ listenerAlive: false })).body).toMatchObject({ status: "unavailable" }); // pending → unavailable, never up
    expect((await send()).body).toMatchObject({ status: "healthy" }); // first success
    expect(await t.db.select().from(alertEvents)).toHaveLength(0);
    expect((await send({ listenerAlive: false })).body).toMatchObject({ status: "unavailable" });
    expect(await eventsOf("server.down")).toBe(1);
  });

  it("a webhook receives a signed server down event, triggered by the agent's report, then server up", async () => {
    const target = await createAlertTarget(t.db, null, { name: "ops hook", kind: "webhook", clusterId, url: `${rx.base}/hook`, secret: SECRET, events: ["server.down", "server.up"], enabled: true });
    const other = await createAlertTarget(t.db, null, { name: "subscribers only", kind: "webhook", clusterId: null, url: `${rx.base}/other`, secret: SECRET, events: ["subscriber.expired"], enabled: true });
    expect((await report(0)).body).toMatchObject({ status: "healthy" }); // pending → healthy: no alert
    expect(await t.db.select().from(alertEvents)).toHaveLength(0);

    const down = await report(0, { listenerAlive: false });
    expect(down.body).toMatchObject({ status: "unavailable" });
    // The event is in the outbox with a delivery for the subscribed target only.
    const deliveries = await t.db.select().from(alertDeliveries);
    expect(deliveries.map((d) => d.targetId)).toEqual([target!.id]);
    // Still down (another report saying so) is no new event.
    await report(0, { listenerAlive: false, serviceRunning: false });
    expect(await eventsOf("server.down")).toBe(1);

    const w = worker();
    expect((await w.runOnce()).map((o) => o.ok)).toEqual([true]);
    expect(rx.got).toHaveLength(1);
    const got = rx.got[0]!;
    expect(got.path).toBe("/hook");
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers["x-routeboard-event"]).toBe("server.down");
    expect(got.headers["x-routeboard-signature"]).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(verifySignature(SECRET, got.body, got.headers["x-routeboard-signature"] as string)).toBe(true);
    const body = JSON.parse(got.body);
    expect(Object.keys(body)).toEqual(["id", "type", "occurredAt", "cluster", "data"]);
    expect(body).toMatchObject({ type: "server.down", cluster: { id: clusterId, name: "Europe" }, data: { server: { id: serverIds[0], name: "fra-1", address: "10.0.0.1" }, from: "healthy", to: "unavailable" } });
    expect(body.data.reason).toMatch(/traffic listener is down/);

    await report(0);
    await w.runOnce();
    expect(rx.got.map((r) => r.headers["x-routeboard-event"])).toEqual(["server.down", "server.up"]);
    expect(rx.got.every((r) => r.path === "/hook")).toBe(true);
    const [view] = (await listAlertTargets(t.db)).filter((x) => x.id === target!.id);
    expect(view).toMatchObject({ state: "ok", pending: 0, secret: MASKED });
    expect(view!.recent.map((d) => [d.type, d.state])).toEqual([["server.up", "delivered"], ["server.down", "delivered"]]);
    expect((await listAlertTargets(t.db)).find((x) => x.id === other!.id)).toMatchObject({ state: "new", pending: 0 });
  });

  it("a status change rolled back leaves no event (the outbox is written in its transaction)", async () => {
    await report(1);
    await createAlertTarget(t.db, null, { name: "rollback hook", kind: "webhook", clusterId: null, url: `${rx.base}/hook`, secret: SECRET, events: ["server.down"], enabled: true });
    await t.db.update(servers).set({ enabled: true }).where(eq(servers.id, serverIds[1]!));
    await expect(
      t.db.transaction(async (tx) => {
        await tx.execute(sql`update server_metrics set listener_alive = false where server_id = ${serverIds[1]!}`);
        const r = await recomputeServer(tx, serverIds[1]!, clock);
        expect(r).toMatchObject({ status: "unavailable", changed: true });
        expect((await tx.select().from(alertEvents)).map((e) => e.type)).toEqual(["server.down"]);
        throw new Error("crash before commit");
      }),
    ).rejects.toThrow("crash before commit");
    expect(await t.db.select().from(alertEvents)).toHaveLength(0);
    expect(await t.db.select().from(alertDeliveries)).toHaveLength(0);
  });

  it("retries after 500s with backoff, then succeeds; the receiver sees the same event id each time", async () => {
    const target = await createAlertTarget(t.db, null, { name: "flaky hook", kind: "webhook", clusterId: null, url: `${rx.base}/flaky`, secret: SECRET, events: ["server.down"], enabled: true });
    let calls = 0;
    rx.setAnswer((_r, res) => {
      calls++;
      res.statusCode = calls <= 2 ? 500 : 204;
      if (calls <= 2) res.statusMessage = "Database at 10.1.2.3 said";
      res.end(calls <= 2 ? "boom: secret internal page" : "");
    });
    await report(1, { serviceRunning: false });
    const w = worker();
    const first = await w.runOnce();
    // The status code and its standard name only: neither the body nor the receiver's reason phrase.
    expect(first).toEqual([expect.objectContaining({ ok: false, error: "HTTP 500 Internal Server Error" })]);
    expect((await listAlertTargets(t.db))[0]).toMatchObject({ id: target!.id, state: "retrying", pending: 1, lastError: "HTTP 500 Internal Server Error" });
    expect(JSON.stringify(await t.db.select().from(alertDeliveries))).not.toMatch(/boom|10\.1\.2\.3/);
    expect(await w.runOnce()).toEqual([]); // not due yet (1 s backoff)
    clock += 1000;
    expect((await w.runOnce()).map((o) => o.ok)).toEqual([false]);
    clock += 1500;
    expect(await w.runOnce()).toEqual([]); // second backoff is 2 s
    clock += 500;
    expect((await w.runOnce()).map((o) => o.ok)).toEqual([true]);
    expect(rx.got).toHaveLength(3);
    expect(new Set(rx.got.map((r) => JSON.parse(r.body).id)).size).toBe(1);
    const [d] = await t.db.select().from(alertDeliveries);
    expect(d).toMatchObject({ state: "delivered", attempts: 3 });
    expect((await listAlertTargets(t.db))[0]).toMatchObject({ state: "ok", pending: 0 });
    await report(1); // back up, for the next tests
  });

  it("a receiver that never answers is retried, then the delivery fails and the target shows failing", async () => {
    await createAlertTarget(t.db, null, { name: "silent hook", kind: "webhook", clusterId: null, url: `${rx.base}/silent`, secret: SECRET, events: ["server.down"], enabled: true });
    rx.setAnswer(() => {}); // reads the request, never replies
    await report(1, { serviceRunning: false });
    const w = worker({ timeoutMs: 200, retry: { baseDelayMs: 100, maxDelayMs: 1000, maxAttempts: 3, jitter: 0.2 } });
    const outcomes = [];
    for (let k = 0; k < 6; k++) {
      outcomes.push(...(await w.runOnce()));
      clock += 1000;
    }
    expect(outcomes.map((o) => [o.ok, o.error, o.failed ?? false])).toEqual([
      [false, NO_ANSWER_REASON, false],
      [false, NO_ANSWER_REASON, false],
      [false, NO_ANSWER_REASON, true],
    ]);
    // Each attempt is one request of the same delivery. The 200 ms is the worker's own bound:
    // on a busy machine an attempt can time out before its body reaches the receiver, so the
    // receiver counts up to three, not exactly three (the attempts are counted above and below).
    expect(rx.got.length).toBeGreaterThanOrEqual(1);
    expect(rx.got.length).toBeLessThanOrEqual(3);
    expect(new Set(rx.got.map((r) => JSON.parse(r.body).id)).size).toBe(1);
    const [d] = await t.db.select().from(alertDeliveries);
    expect(d).toMatchObject({ state: "failed", attempts: 3, lastError: NO_ANSWER_REASON });
    expect((await listAlertTargets(t.db))[0]).toMatchObject({ state: "failing", pending: 0, lastError: NO_ANSWER_REASON });
    expect((await listAlertTargets(t.db))[0]!.lastFailureAt).toBeInstanceOf(Date);

    // A closed port: the same words as the silent open one (errors do not tell open ports from
    // closed ones), and still no exception out of the worker.
    rx.setAnswer((_r, res) => res.end("ok"));
    const closed = await receiver();
    await closed.close();
    await createAlertTarget(t.db, null, { name: "closed port", kind: "webhook", clusterId: null, url: `${closed.base}/x`, secret: SECRET, events: ["server.up"], enabled: true });
    await report(1);
    const [refused] = await w.runOnce();
    expect(refused).toMatchObject({ ok: false, failed: false });
    expect(refused!.error).toBe(NO_ANSWER_REASON);
  });

  it("two workers side by side send each delivery once (claims are leased, FOR UPDATE SKIP LOCKED)", async () => {
    const target = await createAlertTarget(t.db, null, { name: "busy hook", kind: "webhook", clusterId: null, url: `${rx.base}/busy`, secret: SECRET, events: ["server.down"], enabled: true });
    for (let k = 0; k < 30; k++) await sendTestAlert(t.db, null, target!.id, clock);
    const [a, b] = await Promise.all([worker().runOnce(), worker().runOnce()]);
    expect(a.length + b.length).toBe(30);
    expect(rx.got).toHaveLength(30);
    expect(new Set(rx.got.map((r) => JSON.parse(r.body).id)).size).toBe(30);
    expect(await worker().runOnce()).toEqual([]);
  });

  it("Telegram: a rejected agent config reaches the (local) Bot API as sendMessage with a readable text, once per error", async () => {
    const target = await createAlertTarget(t.db, null, { name: "ops chat", kind: "telegram", clusterId, botToken: BOT, chatId: "-1001234567890", events: ["agent.config_rejected"], enabled: true });
    rx.setAnswer((_r, res) => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ ok: true, result: { message_id: 1 } }));
    });
    await report(0, { configError: "xray: port 443 already in use" });
    await report(0, { configError: "xray: port 443 already in use" });
    expect(await eventsOf("agent.config_rejected")).toBe(1);
    expect((await worker().runOnce()).map((o) => o.ok)).toEqual([true]);
    expect(rx.got).toHaveLength(1);
    expect(rx.got[0]!.path).toBe(`/bot${BOT}/sendMessage`);
    const body = JSON.parse(rx.got[0]!.body);
    expect(body).toEqual({ chat_id: "-1001234567890", text: expect.any(String), disable_web_page_preview: true });
    expect(body.text).toMatch(/^⚠️ The agent of fra-1 in Europe rejected its config: xray: port 443 already in use\n/);
    await report(0, { configError: null });

    // Telegram saying ok:false is a failure with its description; the token never shows in errors.
    rx.setAnswer((_r, res) => {
      res.statusCode = 400;
      res.end(JSON.stringify({ ok: false, description: "Bad Request: chat not found" }));
    });
    await sendTestAlert(t.db, null, target!.id, clock);
    const [o] = await worker().runOnce();
    expect(o).toMatchObject({ ok: false, failed: true });
    expect(o!.error).toContain("chat not found");
    expect(o!.error).not.toContain(BOT.split(":")[1]);
    const [view] = await listAlertTargets(t.db);
    expect(view).toMatchObject({ state: "failing", botToken: MASKED, chatId: "-1001234567890" });
  });

  it("route in panic and recovered: after a baseline, on the route's availability", async () => {
    await createAlertTarget(t.db, null, { name: "routes hook", kind: "webhook", clusterId: null, url: `${rx.base}/routes`, secret: SECRET, events: ["route.panic", "route.recovered"], enabled: true });
    await report(0);
    await report(1);
    expect(await evaluateRoutePanic(t.db, clock)).toEqual([]); // baseline (or unchanged)
    await report(0, { listenerAlive: false });
    expect(await evaluateRoutePanic(t.db, clock)).toEqual([]); // fra-2 still serves the route
    await report(1, { serviceRunning: false });
    const panic = await evaluateRoutePanic(t.db, clock);
    expect(panic).toEqual([{ type: "route.panic", clusterId, data: { route: { id: routeId, name: "🇩🇪 Germany" }, inbounds: 2, availableInbounds: 0 } }]);
    expect(await evaluateRoutePanic(t.db, clock)).toEqual([]);
    await report(1);
    expect((await evaluateRoutePanic(t.db, clock)).map((e) => e.type)).toEqual(["route.recovered"]);
    await report(0);
    await worker().runOnce();
    expect(rx.got.map((r) => r.headers["x-routeboard-event"])).toEqual(["route.panic", "route.recovered"]);
  });

  it("subscriber limited through the traffic fold, expired through the periodic check, each once", async () => {
    await createAlertTarget(t.db, null, { name: "subs hook", kind: "webhook", clusterId: null, url: `${rx.base}/subs`, secret: SECRET, events: ["subscriber.limited", "subscriber.expired"], enabled: true });
    const [limited] = await t.db.insert(subscribers).values({ clusterId, name: "lim", token: `tok-lim-${randomUUID()}`, trafficLimitBytes: 1000 }).returning();
    const [expiring] = await t.db.insert(subscribers).values({ clusterId, name: "exp", token: `tok-exp-${randomUUID()}`, expiresAt: new Date(Date.now() - 1000) }).returning();
    // Traffic comes in fra-1's reports; the batcher's own fold job folds it (intake.fold joins a
    // fold its timers started, so no second fold runs beside it).
    const traffic = async (seq: number, bytes: number) => {
      expect((await report(0, { instance: "alerts-agent", seq, users: [{ email: limited!.id, up: bytes, down: bytes }] })).httpStatus).toBe(200);
      await intake.fold();
    };
    await traffic(1, 300);
    expect(await eventsOf("subscriber.limited")).toBe(0);
    await traffic(2, 300);
    expect(await eventsOf("subscriber.limited")).toBe(1);
    await traffic(3, 10);
    // Scoped to the subscribers an edit named: the expired one waits for the full check.
    expect(await checkSubscriberBlocks(t.db, Date.now(), [limited!.id])).toEqual([]);
    expect((await checkSubscriberBlocks(t.db, Date.now())).map((e) => e.type)).toEqual(["subscriber.expired"]);
    expect(await checkSubscriberBlocks(t.db, Date.now())).toEqual([]);
    expect(await eventsOf("subscriber.limited")).toBe(1);
    clock = Math.max(clock, Date.now()); // the fold stamps its events with the real time
    await worker().runOnce();
    const bodies = rx.got.map((r) => JSON.parse(r.body));
    // Sorted by type so the check does not depend on the order of the two events.
    bodies.sort((a, b) => String(a.type).localeCompare(String(b.type)));
    expect(bodies.map((b) => [b.type, b.data.subscriber.name])).toEqual([
      ["subscriber.expired", "exp"],
      ["subscriber.limited", "lim"],
    ]);
    expect(bodies[1].data).toMatchObject({ usedBytes: 1200, limitBytes: 1000 });

    // The clock stepping back before the expiry, then forward again: no second "expired".
    expect(await checkSubscriberBlocks(t.db, expiring!.expiresAt!.getTime() - 60_000)).toEqual([]);
    expect(await checkSubscriberBlocks(t.db, Date.now())).toEqual([]);
    // A usage reset lifts the block (the check notices); crossing the limit again is a new event.
    await t.db.update(subscribers).set({ trafficUpBytes: 0, trafficDownBytes: 0, trafficUsedBytes: 0 }).where(eq(subscribers.id, limited!.id));
    expect(await checkSubscriberBlocks(t.db, Date.now())).toEqual([]);
    expect(await t.db.select().from(subscriberAlertState).where(eq(subscriberAlertState.subscriberId, limited!.id))).toEqual([]);
    await traffic(4, 600);
    expect(await eventsOf("subscriber.limited")).toBe(2);
  });

  it("the state checks look at every subscriber first, then only at those a 'subscribers' event named; an event naming none checks all again", async () => {
    const scopes: Array<readonly string[] | null> = [];
    const w = worker({ watchMs: 3_600_000, stateChecks: [async (_db, _now, ids) => (scopes.push(ids), [])] });
    w.start();
    try {
      await vi.waitFor(() => expect(scopes).toEqual([null]));
      const id = randomUUID();
      publishChange("subscribers", clusterId, [id]);
      await vi.waitFor(() => expect(scopes).toEqual([null, [id]]));
      publishChange("subscribers", clusterId);
      await vi.waitFor(() => expect(scopes).toEqual([null, [id], null]));
    } finally {
      await w.stop();
    }
  });

  it("the router: field-named 400s, secrets masked, viewers refused, Send test delivered and audited", async () => {
    const { admin, viewer } = await adminAndViewer(t.db);
    const base = { name: "hook", kind: "webhook" as const, clusterId: null, url: `${rx.base}/test`, secret: SECRET, events: ["server.down"] };
    const fieldOf = async (p: Promise<unknown>) => {
      try {
        await p;
      } catch (err) {
        const cause = (err as TRPCError).cause as { issues?: Array<{ path: PropertyKey[] }> } | undefined;
        return [(err as TRPCError).code, cause?.issues?.[0]?.path.join(".")];
      }
      return ["no error"];
    };
    expect(await fieldOf(admin.alerts.create({ ...base, url: "ftp://127.0.0.1/x" }))).toEqual(["BAD_REQUEST", "url"]);
    expect(await fieldOf(admin.alerts.create({ ...base, url: "javascript:alert(1)" }))).toEqual(["BAD_REQUEST", "url"]);
    expect(await fieldOf(admin.alerts.create({ ...base, secret: undefined }))).toEqual(["BAD_REQUEST", "secret"]);
    expect(await fieldOf(admin.alerts.create({ ...base, secret: "short" }))).toEqual(["BAD_REQUEST", "secret"]);
    expect(await fieldOf(admin.alerts.create({ ...base, events: ["server.exploded"] }))).toEqual(["BAD_REQUEST", "events"]);
    expect(await fieldOf(admin.alerts.create({ ...base, events: [] }))).toEqual(["BAD_REQUEST", "events"]);
    expect(await fieldOf(admin.alerts.create({ name: "tg", kind: "telegram", clusterId: null, botToken: BOT, chatId: "ops chat", events: ["server.down"] }))).toEqual(["BAD_REQUEST", "chatId"]);
    expect(await fieldOf(admin.alerts.create({ name: "tg", kind: "telegram", clusterId: null, botToken: "nope", chatId: "@ops_team", events: ["server.down"] }))).toEqual(["BAD_REQUEST", "botToken"]);
    expect(await fieldOf(admin.alerts.create({ ...base, clusterId: randomUUID() }))).toEqual(["BAD_REQUEST", "clusterId"]);
    expect(await t.db.select().from(alertTargets)).toHaveLength(0);
    expect(await fieldOf(viewer.alerts.list())).toEqual(["FORBIDDEN", undefined]);

    const created = await admin.alerts.create(base);
    expect(created).toMatchObject({ secret: MASKED });
    expect(await fieldOf(admin.alerts.create({ ...base, name: "HOOK" }))).toEqual(["CONFLICT", "name"]);
    // Editing with the mask keeps the stored secret; the audit log never holds it.
    await admin.alerts.update({ ...base, targetId: created!.id, secret: MASKED, name: "hook 2" });
    const [stored] = await t.db.select().from(alertTargets);
    expect(stored).toMatchObject({ name: "hook 2", secret: SECRET });
    const audits = (await t.db.select().from(auditLog).where(eq(auditLog.entityType, "alert_target"))).filter((a) => a.operatorName === "ada");
    expect(audits.map((a) => a.action)).toEqual(["alert_target.create", "alert_target.update"]);
    expect(JSON.stringify(audits)).not.toContain(SECRET);

    await admin.alerts.sendTest({ targetId: created!.id });
    clock = Math.max(clock, Date.now());
    await worker().runOnce();
    expect(rx.got).toHaveLength(1);
    expect(JSON.parse(rx.got[0]!.body)).toMatchObject({ type: "test", cluster: null, data: { target: { name: "hook 2" } } });
    expect(verifySignature(SECRET, rx.got[0]!.body, rx.got[0]!.headers["x-routeboard-signature"] as string)).toBe(true);
    expect((await admin.alerts.list())[0]).toMatchObject({ state: "ok", secret: MASKED });
    await admin.alerts.delete({ targetId: created!.id });
    expect(await admin.alerts.list()).toEqual([]);
  });
});
