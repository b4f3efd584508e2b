import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { eq, inArray } from "drizzle-orm";
import { TRPCError } from "@trpc/server";
import { inbounds, operators, serverHealth, serverMetrics, servers } from "@/db/schema";
import { LOAD_CURRENT_MS } from "@/core/heartbeat";
import { seedDemoCluster } from "@/server/demo/seed";
import { openTestDatabase, type TestDatabase } from "@/db/testing";
import { createCaller } from "@/server/api/root";
import type { Context } from "@/server/api/trpc";
import { failure, operatorContext } from "@/server/api/testing";
import { fleetPlanSchema } from "@/scripts/fleet/plan";
import { TestReportIntake } from "@/server/dataplane/report-testing";

describe("monitoring procedures (pglite)", () => {
  let t: TestDatabase;
  let admin: ReturnType<typeof createCaller>;
  let viewer: ReturnType<typeof createCaller>;
  let clusterId: string;

  const ctxFor = (operatorId: string, role: "owner" | "viewer"): Context => operatorContext(t.db, operatorId, role, role);

  beforeAll(async () => {
    t = await openTestDatabase("pglite");
    const [o] = await t.db.insert(operators).values({ username: "owner", passwordHash: "x", role: "owner" }).returning();
    const [v] = await t.db.insert(operators).values({ username: "viewer", passwordHash: "x", role: "viewer" }).returning();
    admin = createCaller(ctxFor(o!.id, "owner"));
    viewer = createCaller(ctxFor(v!.id, "viewer"));
    clusterId = await seedDemoCluster(t.db, "Demo");
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it("history: the chosen range bounds the window; an unknown range is refused on its field", async () => {
    for (const [range, hours] of [["1h", 1], ["6h", 6], ["24h", 24], ["7d", 168]] as const) {
      const h = await viewer.monitoring.history({ clusterId, range });
      // The first slot starts at most one slot after the window's start (slots are aligned).
      expect(h.to - h.from).toBeLessThanOrEqual(hours * 3_600_000);
      expect(h.to - h.from).toBeGreaterThan(hours * 3_600_000 - h.stepMs);
      expect(h.servers.flatMap((s) => s.points).every((p) => p.t >= h.from - h.stepMs && p.t <= h.to)).toBe(true);
    }
    const d = await viewer.monitoring.history({ clusterId });
    expect(d.to - d.from).toBeGreaterThan(24 * 3_600_000 - d.stepMs);
    for (const range of ["30d", "", "1H"]) {
      const f = await failure(viewer.monitoring.history({ clusterId, range: range as "1h" }));
      expect(f.code).toBe("BAD_REQUEST");
      expect(f.fieldErrors).toEqual({ range: "Range must be one of 1h, 6h, 24h, 7d" });
    }
  });

  it("rotateAgentTokens moves every server and inbound to distinct local ports with working tokens", async () => {
    const r = await admin.tooling.rotateAgentTokens({ clusterId });
    const plan = fleetPlanSchema.parse(r.plan);
    expect(plan.servers).toHaveLength(6);
    const ports = plan.servers.flatMap((s) => s.inboundPorts);
    expect(new Set(ports).size).toBe(ports.length);
    expect(ports.every((p) => p >= 1024)).toBe(true);
    const rows = await t.db.select().from(servers).where(eq(servers.clusterId, clusterId));
    expect(rows.every((s) => s.address === "127.0.0.1")).toBe(true);
    const ib = await t.db.select().from(inbounds).where(eq(inbounds.clusterId, clusterId));
    expect(ib.map((i) => i.port).sort()).toEqual([...ports].sort());
    const intake = await TestReportIntake.start(t);
    try {
      const ok = await intake.send(`Bearer ${plan.servers[0]!.token}`, JSON.stringify({ listenerAlive: true, serviceRunning: true, usersOnline: 1, rxBps: 1, txBps: 1, cpu: 1, memory: 1, neighbours: [] }));
      expect(ok.httpStatus).toBe(200);
      // a second rotation invalidates the old token
      await admin.tooling.rotateAgentTokens({ clusterId });
      expect((await intake.send(`Bearer ${plan.servers[0]!.token}`, "{}")).httpStatus).toBe(401);
    } finally {
      await intake.close();
    }
  });

  it("enrolFleet creates then reuses sim servers; health lists them", async () => {
    const a = await admin.tooling.enrolFleet({ clusterName: "Fleet test", servers: 3 });
    expect(fleetPlanSchema.parse(a.plan).servers.map((s) => s.name)).toEqual(["sim-01", "sim-02", "sim-03"]);
    const b = await admin.tooling.enrolFleet({ clusterId: a.clusterId, servers: 4, inboundsPerServer: 2 });
    expect(b.plan.servers).toHaveLength(4);
    expect(b.plan.servers[0]!.serverId).toBe(a.plan.servers[0]!.serverId);
    expect(b.plan.servers.every((s) => s.inboundPorts.length === 2)).toBe(true);
    const h = await viewer.monitoring.health({ clusterId: a.clusterId });
    expect(h.servers.map((s) => [s.name, s.status, s.label])).toEqual([
      ["sim-01", "pending", "Waiting for first check"],
      ["sim-02", "pending", "Waiting for first check"],
      ["sim-03", "pending", "Waiting for first check"],
      ["sim-04", "pending", "Waiting for first check"],
    ]);
    expect(await viewer.tooling.assignmentCounts({ clusterId: a.clusterId })).toEqual({});
  });

  it("health gives each server's link capacity as the operator set it (null: learned from reports)", async () => {
    const rows = await t.db.select().from(servers).where(eq(servers.clusterId, clusterId));
    const [first] = rows;
    await t.db.update(servers).set({ capacityMbps: 750 }).where(eq(servers.id, first!.id));
    const h = await viewer.monitoring.health({ clusterId });
    expect(h.servers.find((s) => s.id === first!.id)?.capacityMbps).toBe(750);
    for (const r of rows.slice(1)) expect(h.servers.find((s) => s.id === r.id)?.capacityMbps).toBe(r.capacityMbps);
    await t.db.update(servers).set({ capacityMbps: first!.capacityMbps }).where(eq(servers.id, first!.id));
  });

  it("health gives each server's last load from heartbeats, current while loads still arrived around its last report (null: never sent one)", async () => {
    const rows = await t.db.select().from(servers).where(eq(servers.clusterId, clusterId));
    const [a, b] = rows;
    const at = Date.UTC(2031, 5, 1);
    const metrics = (serverId: string, loadAt: number | null) => ({
      serverId, reportedAt: new Date(at), listenerAlive: true, serviceRunning: true, usersOnline: 300, rxBps: 1e6, txBps: 1e6, cpu: 1, memory: 1,
      loadAt: loadAt === null ? null : new Date(loadAt), loadUsers: loadAt === null ? null : 40, loadBps: loadAt === null ? null : 80e6,
    });
    const saved = await t.db.select().from(serverMetrics).where(inArray(serverMetrics.serverId, [a!.id, b!.id]));
    await t.db.delete(serverMetrics).where(inArray(serverMetrics.serverId, [a!.id, b!.id]));
    await t.db.insert(serverMetrics).values([metrics(a!.id, at - LOAD_CURRENT_MS), metrics(b!.id, at - LOAD_CURRENT_MS - 1)]);
    try {
      const h = await viewer.monitoring.health({ clusterId });
      expect(h.servers.find((s) => s.id === a!.id)?.report?.load).toEqual({ at: new Date(at - LOAD_CURRENT_MS), usersOnline: 40, trafficBps: 80e6, current: true });
      expect(h.servers.find((s) => s.id === b!.id)?.report?.load).toMatchObject({ current: false });
      await t.db.update(serverMetrics).set({ loadAt: null, loadUsers: null, loadBps: null }).where(eq(serverMetrics.serverId, a!.id));
      expect((await viewer.monitoring.health({ clusterId })).servers.find((s) => s.id === a!.id)?.report?.load).toBeNull();
    } finally {
      await t.db.delete(serverMetrics).where(inArray(serverMetrics.serverId, [a!.id, b!.id]));
      if (saved.length > 0) await t.db.insert(serverMetrics).values(saved);
    }
  });

  it("health gives each server's heartbeats as of its answer: phase, silence and a confirmed loss (never: an agent without them)", async () => {
    const rows = await t.db.select().from(servers).where(eq(servers.clusterId, clusterId));
    const [a, b, c] = rows;
    const now = Date.UTC(2031, 5, 1);
    const saved = await t.db.select().from(serverHealth).where(inArray(serverHealth.serverId, [a!.id, b!.id, c!.id]));
    expect(saved).toHaveLength(3);
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(now);
      await t.db.update(serverHealth).set({ heartbeatAt: new Date(now - 1_000), heartbeatLostAt: null }).where(eq(serverHealth.serverId, a!.id));
      await t.db.update(serverHealth).set({ heartbeatAt: new Date(now - 9_000), heartbeatLostAt: new Date(now - 1_000) }).where(eq(serverHealth.serverId, b!.id));
      await t.db.update(serverHealth).set({ heartbeatAt: null, heartbeatLostAt: null }).where(eq(serverHealth.serverId, c!.id));
      const h = await viewer.monitoring.health({ clusterId });
      const of = (id: string) => h.servers.find((s) => s.id === id)?.heartbeat;
      expect(of(a!.id)).toEqual({ at: new Date(now - 1_000), phase: "alive", silenceMs: 1_000, lost: false });
      expect(of(b!.id)).toEqual({ at: new Date(now - 9_000), phase: "suspect", silenceMs: 9_000, lost: true });
      expect(of(c!.id)).toEqual({ at: null, phase: "never", silenceMs: null, lost: false });
      // A heartbeat after the confirmed loss clears it.
      await t.db.update(serverHealth).set({ heartbeatAt: new Date(now - 500) }).where(eq(serverHealth.serverId, b!.id));
      expect((await viewer.monitoring.health({ clusterId })).servers.find((s) => s.id === b!.id)?.heartbeat).toMatchObject({ phase: "alive", lost: false });
    } finally {
      vi.useRealTimers();
      for (const row of saved) await t.db.update(serverHealth).set({ heartbeatAt: row.heartbeatAt, heartbeatLostAt: row.heartbeatLostAt }).where(eq(serverHealth.serverId, row.serverId));
    }
  });

  it("probe config: validated, audited, viewers refused; overrides and report interval", async () => {
    await expect(viewer.monitoring.setProbeConfig({ clusterId, config: {} })).rejects.toThrow(TRPCError);
    await expect(admin.monitoring.setProbeConfig({ clusterId, config: { intervalS: 0 } })).rejects.toThrow(/intervalS|≥|too small/i);
    const r = await admin.monitoring.setProbeConfig({ clusterId, config: { protocol: "http", path: "/health", intervalS: 2, enabled: false } });
    expect(r.config).toMatchObject({ protocol: "http", intervalS: 2, timeoutS: 30, statusCodes: "200-399" });
    const got = await viewer.monitoring.getProbeConfig({ clusterId });
    expect(got.config.path).toBe("/health");
    const h = await admin.monitoring.health({ clusterId });
    expect(h.warnings.map((w) => w.kind)).toContain("probes-disabled");
    const sid = got.overrides[0]!.serverId;
    await admin.monitoring.setServerProbeOverride({ serverId: sid, override: { port: 9999, enabled: true } });
    const h2 = await admin.monitoring.health({ clusterId });
    expect(h2.servers.find((s) => s.id === sid)).toMatchObject({ probeTarget: 9999, probesEnabled: true, override: { port: 9999, enabled: true } });
    await admin.monitoring.setServerProbeOverride({ serverId: sid, override: {} });
    expect((await viewer.monitoring.getProbeConfig({ clusterId })).overrides.find((o) => o.serverId === sid)!.override).toBeNull();
    await admin.monitoring.setReportInterval({ clusterId, seconds: 5 });
    expect((await admin.monitoring.health({ clusterId })).cluster.reportIntervalS).toBe(5);
    await expect(admin.monitoring.setReportInterval({ clusterId, seconds: 0 })).rejects.toThrow(/between 1 and 3600/);
  });
});
