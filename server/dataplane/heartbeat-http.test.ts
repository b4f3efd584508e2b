/** POST /api/agent/heartbeat over HTTP on a real database (PGlite; PostgreSQL with TEST_DATABASE_URL). */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { eq } from "drizzle-orm";
import { testDbKinds, type TestDatabase } from "@/db/testing";
import { alertEvents, clusters, operators, serverHealth, serverMetrics, servers, subscribers } from "@/db/schema";
import { createApiToken } from "@/server/accounts/api-tokens";
import { createSession, SESSION_COOKIE } from "@/server/auth/sessions";
import { MAX_HEARTBEAT_BODY_BYTES } from "@/core/agent-wire";
import { hashAgentToken } from "@/server/auth/tokens";
import { serveAgentRoutes, type AgentRoutesServer } from "./agent-http-testing";
import { agentHeartbeatHandler, heartbeatBatcher, HEARTBEAT_BURST } from "./heartbeat-http";

describe.each(testDbKinds())("agent heartbeats over HTTP (%s)", (kind) => {
  let app: AgentRoutesServer | undefined;
  let t: TestDatabase;
  let base: string;
  let serverId: string;
  const token = `tok-${randomUUID()}`;
  const post = (auth: string | null, method = "POST", body?: string) =>
    fetch(`${base}/api/agent/heartbeat`, { method, headers: { ...(auth ? { authorization: auth } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}) }, body });
  const health = async () => (await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, serverId)))[0];

  beforeAll(async () => {
    app = await serveAgentRoutes(kind, { "/api/agent/heartbeat": agentHeartbeatHandler });
    ({ t, base } = app);
    const [c] = await t.db.insert(clusters).values({ name: `hb-${kind}` }).returning();
    const [s] = await t.db.insert(servers).values({ clusterId: c!.id, name: "s", address: "127.0.0.1", agentTokenHash: hashAgentToken(token) }).returning();
    serverId = s!.id;
  });
  afterAll(async () => {
    await app?.close();
  });

  it("refuses other verbs and strangers, storing nothing", async () => {
    expect((await post(`Bearer ${token}`, "GET")).status).toBe(405);
    expect((await post(null)).status).toBe(401);
    expect((await post("Bearer nope")).status).toBe(401);
    await heartbeatBatcher().flush();
    expect((await health())?.heartbeatAt ?? null).toBeNull();
  });

  it("a load in the body is stored with the heartbeat once the server has reported; a bad or oversized body is refused naming the field, storing nothing", async () => {
    // A server of its own: its own rate-limit bucket and rows.
    const own = `tok-${randomUUID()}`;
    const [c] = await t.db.insert(clusters).values({ name: `hb-load-${kind}` }).returning();
    const [s] = await t.db.insert(servers).values({ clusterId: c!.id, name: "s", address: "127.0.0.1", agentTokenHash: hashAgentToken(own) }).returning();
    const id = s!.id;
    const metrics = async () => (await t.db.select().from(serverMetrics).where(eq(serverMetrics.serverId, id)))[0];
    const beatAt = async () => (await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, id)))[0]!.heartbeatAt!.getTime();
    // No report yet: the heartbeat counts, its load has no row to go to.
    const load = (usersOnline: number, rxBps: number) => JSON.stringify({ load: { usersOnline, rxBps, txBps: 1e6 } });
    expect((await post(`Bearer ${own}`, "POST", load(10, 5e6))).status).toBe(204);
    await heartbeatBatcher().flush();
    expect(await metrics()).toBeUndefined();
    const reportedAt = new Date(Date.now() - 5_000);
    await t.db.insert(serverMetrics).values({ serverId: id, reportedAt, listenerAlive: true, serviceRunning: true, usersOnline: 50, rxBps: 1e6, txBps: 1e6, cpu: 1, memory: 1, peakBps: 1e6 });
    const before = Date.now();
    expect((await post(`Bearer ${own}`, "POST", load(40, 80e6))).status).toBe(204);
    await heartbeatBatcher().flush();
    const m = await metrics();
    expect(m).toMatchObject({ loadUsers: 40, loadBps: 80e6, peakBps: 80e6, usersOnline: 50, rxBps: 1e6 });
    expect(m!.loadAt!.getTime()).toBeGreaterThanOrEqual(before - 1);
    const beat = await beatAt();

    const refused: Array<[string, number, RegExp]> = [
      [JSON.stringify({ load: { usersOnline: -1, rxBps: 1, txBps: 1 } }), 400, /load\.usersOnline/],
      [JSON.stringify({ load: { usersOnline: 1.5, rxBps: 1, txBps: 1 } }), 400, /load\.usersOnline/],
      [JSON.stringify({ load: { usersOnline: 1, rxBps: "fast", txBps: 1 } }), 400, /load\.rxBps/],
      [JSON.stringify({ load: { usersOnline: 1, rxBps: 1 } }), 400, /load\.txBps/],
      [JSON.stringify({ load: { usersOnline: 1, rxBps: 1, txBps: 1, cpu: 3 } }), 400, /cpu/],
      [JSON.stringify({ alive: true }), 400, /alive/],
      ["{not json", 400, /not valid JSON/],
      [JSON.stringify({ load: { usersOnline: 1, rxBps: 1, txBps: 1 }, pad: "x".repeat(MAX_HEARTBEAT_BODY_BYTES) }), 413, /at most 1024 bytes/],
    ];
    for (const [body, status, message] of refused) {
      const r = await post(`Bearer ${own}`, "POST", body);
      expect(r.status, body.slice(0, 80)).toBe(status);
      expect(((await r.json()) as { error: string }).error).toMatch(message);
    }
    await heartbeatBatcher().flush();
    expect(await beatAt()).toBe(beat);
    expect(await metrics()).toMatchObject({ loadUsers: 40, loadBps: 80e6 });
  });

  it("a load beyond the server's report capacity is stored as the capacity and alerts once per report interval; only an agent token reaches the route, and only its own server's row", async () => {
    const [c] = await t.db.insert(clusters).values({ name: `hb-edge-${kind}` }).returning();
    const make = async (name: string, reportCapacityMbps: number) => {
      const token = `tok-${randomUUID()}`;
      const [s] = await t.db.insert(servers).values({ clusterId: c!.id, name, address: "127.0.0.1", agentTokenHash: hashAgentToken(token), reportCapacityMbps }).returning();
      await t.db.insert(serverMetrics).values({ serverId: s!.id, reportedAt: new Date(), listenerAlive: true, serviceRunning: true, usersOnline: 1, rxBps: 1, txBps: 1, cpu: 1, memory: 1 });
      return { id: s!.id, token };
    };
    const small = await make("small", 100);
    const other = await make("other", 100);
    const row = async (id: string) => (await t.db.select().from(serverMetrics).where(eq(serverMetrics.serverId, id)))[0]!;
    const load = (rxBps: number, txBps = 1e6) => JSON.stringify({ load: { usersOnline: 10, rxBps, txBps } });

    // An agent token of a 100 Mbit/s server claiming more: stored as what its link carries.
    expect((await post(`Bearer ${small.token}`, "POST", load(1e6, 2e12))).status).toBe(204);
    await heartbeatBatcher().flush();
    expect((await row(small.id)).loadBps).toBe(100e6);
    expect((await post(`Bearer ${small.token}`, "POST", load(100e6 + 1, 5e6))).status).toBe(204);
    await heartbeatBatcher().flush();
    expect((await row(small.id)).loadBps).toBe(100e6);
    // The operator hears of it as of a report's rate: once per report interval, naming the field and the claim.
    const alerts = async (id: string) =>
      (await t.db.select().from(alertEvents).where(eq(alertEvents.type, "server.report_implausible"))).filter((e) => (e.data as { server: { id: string } }).server.id === id);
    const raised = await alerts(small.id);
    expect(raised).toHaveLength(1);
    expect(raised[0]!.data).toMatchObject({ server: { id: small.id, name: "small" }, capacityMbps: 100, field: "load.txBps", rateBps: 2e12 });
    expect(raised[0]!.clusterId).toBe(c!.id);
    // Below the capacity it is stored as it came; it lands on the token's own server, never another's.
    expect((await post(`Bearer ${small.token}`, "POST", load(60e6))).status).toBe(204);
    await heartbeatBatcher().flush();
    expect((await row(small.id)).loadBps).toBe(60e6);
    expect((await row(other.id)).loadAt).toBeNull();

    // Credentials of every other kind are not an agent's: 401, nothing stored.
    const [op] = await t.db.insert(operators).values({ username: `viewer-${kind}-${randomUUID().slice(0, 8)}`, passwordHash: "x", role: "viewer" }).returning();
    const session = await createSession(t.db, op!.id, "vitest");
    const api = await createApiToken(t.db, { operatorId: op!.id, username: op!.username }, { name: "hb", scopes: ["read"] });
    const [sub] = await t.db.insert(subscribers).values({ clusterId: c!.id, name: "alice", token: `sub-${randomUUID()}` }).returning();
    const strangers: Array<Record<string, string>> = [
      { authorization: `Bearer ${api.token}` },
      { authorization: `Bearer ${sub!.token}` },
      { cookie: `${SESSION_COOKIE}=${session.token}` },
      { authorization: `Bearer ${session.token}` },
    ];
    for (const headers of strangers) {
      const r = await fetch(`${base}/api/agent/heartbeat`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: load(50e6) });
      expect(r.status, JSON.stringify(Object.keys(headers))).toBe(401);
    }
    await heartbeatBatcher().flush();
    expect((await row(other.id)).loadAt).toBeNull();
    expect((await row(small.id)).loadBps).toBe(60e6);
    expect(await alerts(other.id)).toHaveLength(0);
    expect(await alerts(small.id)).toHaveLength(1);
  });

  it("204 and the time is stored with the next flush; past the burst 429 with Retry-After", async () => {
    const before = Date.now();
    const r = await post(`Bearer ${token}`);
    expect(r.status).toBe(204);
    await heartbeatBatcher().flush();
    const h = await health();
    expect(h!.heartbeatAt!.getTime()).toBeGreaterThanOrEqual(before - 1);
    // The bucket refills at 2 a second: the clock stands still so a slow machine cannot refill it.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    try {
      const answers: number[] = [];
      for (let i = 0; i < HEARTBEAT_BURST; i++) answers.push((await post(`Bearer ${token}`)).status);
      expect(answers.filter((s) => s === 429).length).toBeLessThanOrEqual(1);
      const limited = await post(`Bearer ${token}`);
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      vi.setSystemTime(Date.now() + 1000);
      expect((await post(`Bearer ${token}`)).status).toBe(204);
    } finally {
      vi.useRealTimers();
    }
  });
});
