/** POST /api/agent/heartbeat over HTTP on a real database (PGlite; PostgreSQL with TEST_DATABASE_URL). */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { eq } from "drizzle-orm";
import { testDbKinds, type TestDatabase } from "@/db/testing";
import { clusters, serverHealth, servers } from "@/db/schema";
import { hashAgentToken } from "@/server/auth/tokens";
import { serveAgentRoutes, type AgentRoutesServer } from "./agent-http-testing";
import { agentHeartbeatHandler, heartbeatBatcher, HEARTBEAT_BURST } from "./heartbeat-http";

describe.each(testDbKinds())("agent heartbeats over HTTP (%s)", (kind) => {
  let app: AgentRoutesServer | undefined;
  let t: TestDatabase;
  let base: string;
  let serverId: string;
  const token = `tok-${randomUUID()}`;
  const post = (auth: string | null, method = "POST") =>
    fetch(`${base}/api/agent/heartbeat`, { method, headers: auth ? { authorization: auth } : {} });
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
