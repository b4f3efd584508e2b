/** The management routers (routes, servers, inbounds, subscribers, audit) against a real database. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { count, eq } from "drizzle-orm";
import { TRPCError } from "@trpc/server";
import { auditLog, clusters, inbounds, routes, serverHealth, servers, subscribers } from "@/db/schema";
import { seedDemoCluster } from "@/server/demo/seed";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { createCaller } from "@/server/api/root";
import { adminAndViewer } from "@/server/api/testing";
import { onChange, type ChangeEvent } from "@/server/bus";
import { createInbound, DEFAULT_ROUTE_NAME } from "@/server/domain/inbounds";
import { hashAgentToken } from "@/server/domain/tokens";

async function failure(p: Promise<unknown>): Promise<{ code: string; message: string; fieldErrors: Record<string, string> }> {
  try {
    await p;
  } catch (err) {
    if (!(err instanceof TRPCError)) return { code: `not a TRPCError: ${String(err)}`, message: "", fieldErrors: {} };
    const cause = err.cause as { issues?: Array<{ path: PropertyKey[]; message: string }> } | undefined;
    return {
      code: err.code,
      message: err.message,
      fieldErrors: Object.fromEntries((cause?.issues ?? []).map((i) => [i.path.join("."), i.message])),
    };
  }
  return { code: "no error", message: "", fieldErrors: {} };
}

describe.each(testDbKinds())("management routers on %s", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  let admin: ReturnType<typeof createCaller>;
  let viewer: ReturnType<typeof createCaller>;
  const events: ChangeEvent[] = [];
  let stop: () => void;

  const snapshot = async () => {
    const n = async (table: typeof routes | typeof servers | typeof inbounds | typeof subscribers) =>
      (await t.db.select({ n: count() }).from(table))[0]!.n;
    const rows = await t.db.select().from(inbounds);
    return {
      routes: await n(routes),
      servers: await n(servers),
      inbounds: await n(inbounds),
      subscribers: await n(subscribers),
      audit: (await t.db.select({ n: count() }).from(auditLog))[0]!.n,
      inboundState: rows.map((r) => `${r.id}:${r.routeId}:${r.port}:${r.name}:${r.isFallback}`).sort(),
    };
  };

  const inboundNamed = async (cid: string, name: string) => {
    const [row] = await t.db.select().from(inbounds).where(eq(inbounds.clusterId, cid)).then((rs) => rs.filter((r) => r.name === name));
    if (!row) throw new Error(`no inbound ${name}`);
    return row;
  };
  const routeNamed = async (cid: string, name: string) => {
    const rows = await t.db.select().from(routes).where(eq(routes.clusterId, cid));
    return rows.find((r) => r.name === name);
  };

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    ({ admin, viewer } = await adminAndViewer(t.db));
    clusterId = await seedDemoCluster(t.db, "Demo");
    stop = onChange((e) => events.push(e));
  });
  afterAll(async () => {
    stop?.();
    await t?.dispose();
  });

  describe("default route", () => {
    it("puts the first inbound of a cluster with no route in an automatically created default route", async () => {
      const c = await admin.clusters.create({ name: "Fresh" });
      const s = await admin.servers.create({ clusterId: c.id, name: "solo", address: "203.0.113.9" });
      const first = await admin.inbounds.create({ serverId: s.id, name: "🇫🇮 Helsinki", port: 443, security: "reality", sni: "www.microsoft.com" });
      expect(first.defaultRoute?.name).toBe(DEFAULT_ROUTE_NAME);
      expect(first.inbound.routeId).toBe(first.defaultRoute!.id);
      expect(first.inbound.realityPublicKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(first.inbound.realityShortId).toMatch(/^[0-9a-f]{16}$/);
      expect(first.inbound).not.toHaveProperty("realityPrivateKey");
      // The second inbound is not auto-assigned: that is the operator's choice.
      const second = await admin.inbounds.create({ serverId: s.id, name: "🇫🇮 Helsinki TLS", port: 8443, security: "tls", sni: "cdn.example.net", tlsCertificateFile: "/etc/ssl/cdn.crt", tlsKeyFile: "/etc/ssl/cdn.key" });
      expect(second.defaultRoute).toBeNull();
      expect(second.inbound.routeId).toBeNull();
      expect(second.inbound.realityPublicKey).toBeNull();
      const topo = await admin.topology.get({ clusterId: c.id });
      expect(topo.routes.map((r) => r.name)).toEqual([DEFAULT_ROUTE_NAME]);
    });

    it("does not create a default route when the cluster already has a route", async () => {
      const c = await admin.clusters.create({ name: "Planned" });
      await admin.routes.create({ clusterId: c.id, name: "🇺🇸 USA", flag: "US" });
      const s = await admin.servers.create({ clusterId: c.id, name: "us-1", address: "us-1.example.com" });
      const r = await admin.inbounds.create({ serverId: s.id, name: "🇺🇸 NY", port: 443, sni: "www.apple.com" });
      expect(r.defaultRoute).toBeNull();
      expect(r.inbound.routeId).toBeNull();
    });

    it("puts a new inbound straight into a chosen route of the same cluster, and refuses another cluster's route by field", async () => {
      const c = await admin.clusters.create({ name: "Routed" });
      const route = await admin.routes.create({ clusterId: c.id, name: "France", flag: "FR" });
      const s = await admin.servers.create({ clusterId: c.id, name: "fr-1", address: "fr-1.example.com" });
      const r = await admin.inbounds.create({ serverId: s.id, routeId: route.id, name: "🇫🇷 Paris", port: 443, sni: "www.apple.com" });
      expect(r.defaultRoute).toBeNull();
      expect(r.inbound.routeId).toBe(route.id);
      const other = await admin.clusters.create({ name: "Elsewhere" });
      const foreign = await admin.routes.create({ clusterId: other.id, name: "Spain", flag: "ES" });
      const err = await admin.inbounds.create({ serverId: s.id, routeId: foreign.id, name: "🇪🇸 Madrid", port: 8443, sni: "www.apple.com" }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "BAD_REQUEST", message: "The route must be in the same cluster as the server" });
      expect((err as { cause?: { issues?: Array<{ path: string[] }> } }).cause?.issues?.[0]?.path).toEqual(["routeId"]);
      const gone = await admin.inbounds.create({ serverId: s.id, routeId: "00000000-0000-4000-8000-000000000000", name: "x", port: 8444, sni: "www.apple.com" }).catch((e: unknown) => e);
      expect(gone).toMatchObject({ code: "BAD_REQUEST", message: "This route no longer exists" });
      // Nothing was created by the refused calls.
      const topo = await admin.topology.get({ clusterId: c.id });
      expect(topo.inbounds.map((i) => i.name)).toEqual(["🇫🇷 Paris"]);
    });

    it("createInbound works inside a caller's transaction and rolls back with it", async () => {
      const [c] = await t.db.insert(clusters).values({ name: "Rollback" }).returning();
      const [s] = await t.db.insert(servers).values({ clusterId: c!.id, name: "rb-1", address: "192.0.2.1", agentTokenHash: "rb-1-hash" }).returning();
      await expect(
        t.db.transaction(async (tx) => {
          await createInbound(tx, null, { serverId: s!.id, name: "x", port: 443, security: "none", sni: null });
          throw new Error("abort");
        }),
      ).rejects.toThrow("abort");
      expect(await t.db.select().from(routes).where(eq(routes.clusterId, c!.id))).toEqual([]);
      expect(await t.db.select().from(inbounds).where(eq(inbounds.clusterId, c!.id))).toEqual([]);
    });
  });

  describe("routes", () => {
    it("creates a route whose pool moves an inbound away from another route, at position max+1", async () => {
      const berlin = await inboundNamed(clusterId, "🇩🇪 Berlin");
      const dallasAlt = await inboundNamed(clusterId, "🇺🇸 Dallas alt");
      const germany = await routeNamed(clusterId, "🇩🇪 Germany");
      expect(berlin.routeId).toBe(germany!.id);
      events.length = 0;
      const r = await admin.routes.create({
        clusterId,
        name: "  🇪🇺 Europe  ",
        flag: "de",
        algorithm: "round-robin",
        inboundIds: [berlin.id, dallasAlt.id],
      });
      expect(r).toMatchObject({ name: "🇪🇺 Europe", flag: "DE", algorithm: "round-robin", position: 4 });
      expect((await inboundNamed(clusterId, "🇩🇪 Berlin")).routeId).toBe(r.id);
      expect((await inboundNamed(clusterId, "🇺🇸 Dallas alt")).routeId).toBe(r.id);
      expect(events.some((e) => e.kind === "topology" && e.clusterId === clusterId)).toBe(true);
      const audit = await admin.audit.list({ clusterId });
      const actions = audit.items.map((i) => i.action);
      expect(actions).toContain("route.create");
      expect(audit.items.find((i) => i.summary === "Moved 🇩🇪 Berlin from 🇩🇪 Germany to 🇪🇺 Europe")).toBeTruthy();
    });

    it("creates an empty route", async () => {
      const r = await admin.routes.create({ clusterId, name: "🇫🇷 France", flag: "FR" });
      expect(r.algorithm).toBe("least-traffic");
      expect(await t.db.select().from(inbounds).where(eq(inbounds.routeId, r.id))).toEqual([]);
    });

    it("refuses a duplicate route name (case-insensitive) with CONFLICT and a clear message on the name field", async () => {
      const before = await snapshot();
      const f = await failure(admin.routes.create({ clusterId, name: "🇺🇸 usa", inboundIds: [(await inboundNamed(clusterId, "🇩🇪 Frankfurt")).id] }));
      expect(f.code).toBe("CONFLICT");
      expect(f.message).toBe('A route named "🇺🇸 usa" already exists in this cluster');
      expect(f.fieldErrors.name).toBe(f.message);
      expect(await snapshot()).toEqual(before);
    });

    it("edits and deletes a route; deleting unassigns its inbounds and drops their fallback mark", async () => {
      const usa = (await routeNamed(clusterId, "🇺🇸 USA"))!;
      const updated = await admin.routes.update({ routeId: usa.id, name: "🇺🇸 United States", flag: "US", algorithm: "round-robin" });
      expect(updated).toMatchObject({ name: "🇺🇸 United States", algorithm: "round-robin", version: usa.version + 1 });
      const ny = await inboundNamed(clusterId, "🇺🇸 New York");
      await admin.inbounds.setFallback({ inboundId: ny.id, isFallback: true });
      const res = await admin.routes.delete({ routeId: usa.id });
      expect(res.unassigned).toBe(3);
      const after = await inboundNamed(clusterId, "🇺🇸 New York");
      expect(after).toMatchObject({ routeId: null, isFallback: false });
      expect(await routeNamed(clusterId, "🇺🇸 United States")).toBeUndefined();
      const audit = await t.db.select().from(auditLog).where(eq(auditLog.action, "route.delete"));
      expect(audit[0]!.before).toMatchObject({ name: "🇺🇸 United States" });
    });

    it("refuses a pool with an inbound of another cluster and writes nothing", async () => {
      const other = await admin.clusters.createDemo({ name: "Other demo" });
      const foreign = await inboundNamed(other.id, "🇩🇪 Berlin");
      const before = await snapshot();
      const f = await failure(admin.routes.create({ clusterId, name: "Sneaky", inboundIds: [foreign.id] }));
      expect(f.code).toBe("NOT_FOUND");
      expect(await snapshot()).toEqual(before);
    });
  });

  describe("inbounds", () => {
    it("refuses a second fallback in one route with a clear message", async () => {
      const fra = await inboundNamed(clusterId, "🇩🇪 Frankfurt");
      const fraTls = await inboundNamed(clusterId, "🇩🇪 Frankfurt TLS");
      await admin.inbounds.setFallback({ inboundId: fra.id, isFallback: true });
      const f = await failure(admin.inbounds.setFallback({ inboundId: fraTls.id, isFallback: true }));
      expect(f.code).toBe("CONFLICT");
      expect(f.message).toBe("Route 🇩🇪 Germany already has a fallback (🇩🇪 Frankfurt): a route can have only one. Unmark it first.");
      expect((await inboundNamed(clusterId, "🇩🇪 Frankfurt TLS")).isFallback).toBe(false);
      // Unmarking the first makes room.
      await admin.inbounds.setFallback({ inboundId: fra.id, isFallback: false });
      await admin.inbounds.setFallback({ inboundId: fraTls.id, isFallback: true });
      expect((await inboundNamed(clusterId, "🇩🇪 Frankfurt TLS")).isFallback).toBe(true);
    });

    it("refuses to mark an unassigned inbound as fallback", async () => {
      const test = await inboundNamed(clusterId, "🇩🇪 Frankfurt test");
      const f = await failure(admin.inbounds.setFallback({ inboundId: test.id, isFallback: true }));
      expect(f.code).toBe("BAD_REQUEST");
      expect(f.message).toMatch(/not in a route/);
    });

    it("says which server a duplicate port is used on, on the port field (create and edit)", async () => {
      const fra = await inboundNamed(clusterId, "🇩🇪 Frankfurt");
      const before = await snapshot();
      const f = await failure(admin.inbounds.create({ serverId: fra.serverId, name: "Another", port: 443, sni: "www.samsung.com" }));
      expect(f.code).toBe("CONFLICT");
      expect(f.fieldErrors.port).toBe("Port 443 is already used on de-fra-1 (by 🇩🇪 Frankfurt)");
      expect(await snapshot()).toEqual(before);
      const test = await inboundNamed(clusterId, "🇩🇪 Frankfurt test");
      const g = await failure(admin.inbounds.update({ inboundId: test.id, name: test.name, port: 8443, security: "reality", sni: "www.samsung.com" }));
      expect(g.fieldErrors.port).toMatch(/^Port 8443 is already used on de-fra-1/);
    });

    it("edits and deletes an inbound, switching to Reality generates keys", async () => {
      const fra = await inboundNamed(clusterId, "🇩🇪 Frankfurt test");
      const s = await admin.servers.create({ clusterId, name: "fi-hel-1", address: "hel.example.com" });
      const created = await admin.inbounds.create({ serverId: s.id, name: "🇫🇮 Plain", port: 80, security: "none", sni: null });
      expect(created.inbound.realityPublicKey).toBeNull();
      const edited = await admin.inbounds.update({ inboundId: created.inbound.id, name: "🇫🇮 Helsinki", port: 443, security: "reality", sni: "www.microsoft.com" });
      expect(edited.realityPublicKey).toBeTruthy();
      expect(edited.port).toBe(443);
      await admin.inbounds.delete({ inboundId: fra.id });
      expect(await t.db.select().from(inbounds).where(eq(inbounds.id, fra.id))).toEqual([]);
    });

    it("needs an SNI for Reality and TLS", async () => {
      const ny = await inboundNamed(clusterId, "🇺🇸 New York");
      const f = await failure(admin.inbounds.create({ serverId: ny.serverId, name: "x", port: 1234, security: "tls", sni: null }));
      expect(f.code).toBe("BAD_REQUEST");
      expect(f.fieldErrors.sni).toBe("Reality and TLS need a masquerade SNI");
    });
  });

  describe("servers", () => {
    it("adds a server with a one-time agent token (only its hash stored) and a pending health row", async () => {
      const r = await admin.servers.create({ clusterId, name: "jp-tyo-1", address: "2001:db8::10", role: "both", coefficient: 2, capacityMbps: 1000, enabled: true });
      expect(r.agentToken).toMatch(/^rba_/);
      const [row] = await t.db.select().from(servers).where(eq(servers.id, r.id));
      expect(row!.agentTokenHash).toBe(hashAgentToken(r.agentToken));
      expect(JSON.stringify(row)).not.toContain(r.agentToken);
      const [health] = await t.db.select().from(serverHealth).where(eq(serverHealth.serverId, r.id));
      expect(health!.status).toBe("pending");
      const list = await admin.servers.list({ clusterId });
      expect(list.find((s) => s.id === r.id)).toMatchObject({ name: "jp-tyo-1", coefficient: 2, capacityMbps: 1000, status: "pending", inbounds: [] });
      expect(JSON.stringify(list)).not.toContain("realityPrivateKey");
      const rotated = await admin.servers.rotateToken({ serverId: r.id });
      expect(rotated.agentToken).not.toBe(r.agentToken);
      const [after] = await t.db.select().from(servers).where(eq(servers.id, r.id));
      expect(after!.agentTokenHash).toBe(hashAgentToken(rotated.agentToken));
      const audit = await t.db.select().from(auditLog).where(eq(auditLog.entityId, r.id));
      expect(JSON.stringify(audit)).not.toContain(r.agentToken);
      expect(audit.map((a) => a.action).sort()).toEqual(["server.create", "server.rotate-token"]);
    });

    it("refuses to delete a server while it has inbounds, and deletes both when confirmed", async () => {
      const [ams] = await t.db.select().from(servers).where(eq(servers.name, "nl-ams-1"));
      const f = await failure(admin.servers.delete({ serverId: ams!.id }));
      expect(f.code).toBe("PRECONDITION_FAILED");
      expect(f.message).toBe("nl-ams-1 still has 2 inbounds (🇳🇱 Amsterdam, 🇳🇱 Amsterdam TLS): delete them first, or confirm deleting them with the server");
      expect(await t.db.select().from(servers).where(eq(servers.id, ams!.id))).toHaveLength(1);
      const r = await admin.servers.delete({ serverId: ams!.id, deleteInbounds: true });
      expect(r.deletedInbounds).toBe(2);
      expect(await t.db.select().from(servers).where(eq(servers.id, ams!.id))).toEqual([]);
      expect(await t.db.select().from(inbounds).where(eq(inbounds.serverId, ams!.id))).toEqual([]);
      const [entry] = await t.db.select().from(auditLog).where(eq(auditLog.entityId, ams!.id));
      expect(entry).toMatchObject({ action: "server.delete", operatorName: "ada" });
    });

    it("edits, disables and enables a server, refusing a duplicate name", async () => {
      const [rtm] = await t.db.select().from(servers).where(eq(servers.name, "nl-rtm-1"));
      await admin.servers.update({ serverId: rtm!.id, name: "nl-rtm-2", address: "rtm.example.com", role: "node", coefficient: 0.5, capacityMbps: null });
      const f = await failure(admin.servers.update({ serverId: rtm!.id, name: "US-NYC-1", address: "rtm.example.com", role: "node", coefficient: 1, capacityMbps: null }));
      expect(f.code).toBe("CONFLICT");
      expect(f.fieldErrors.name).toBe('A server named "US-NYC-1" already exists in this cluster');
      await admin.servers.setEnabled({ serverId: rtm!.id, enabled: false });
      expect((await admin.servers.list({ clusterId })).find((s) => s.id === rtm!.id)).toMatchObject({ name: "nl-rtm-2", enabled: false, status: "disabled", coefficient: 0.5 });
      await admin.servers.setEnabled({ serverId: rtm!.id, enabled: true });
    });

    it("a request that fails validation changes nothing", async () => {
      const [dal] = await t.db.select().from(servers).where(eq(servers.name, "us-dal-1"));
      const before = await snapshot();
      const bad = [
        admin.servers.create({ clusterId, name: "ok", address: "bad host" }),
        admin.servers.create({ clusterId, name: "ok", address: "1.2.3.4", coefficient: 100.1 }),
        admin.servers.update({ serverId: dal!.id, name: "x\u0000y", address: "1.2.3.4", role: "node", coefficient: 1, capacityMbps: null }),
        admin.inbounds.create({ serverId: dal!.id, name: "ok", port: 65536, sni: "a.com" }),
        admin.inbounds.create({ serverId: dal!.id, name: "", port: 443, sni: "a.com" }),
        admin.routes.create({ clusterId, name: "x".repeat(10_000) }),
        admin.routes.create({ clusterId, name: "ok", flag: "XX" }),
        admin.subscribers.create({ clusterId, name: "evil\u202Egnp.exe" }),
        admin.subscribers.create({ clusterId, name: "ok", trafficLimitGb: -5 }),
      ];
      for (const p of bad) {
        const f = await failure(p);
        expect(f.code).toBe("BAD_REQUEST");
        expect(Object.keys(f.fieldErrors).length).toBeGreaterThan(0);
      }
      expect(await snapshot()).toEqual(before);
    });

    it("viewers can read but not write", async () => {
      expect((await viewer.servers.list({ clusterId })).length).toBeGreaterThan(0);
      expect((await failure(viewer.servers.create({ clusterId, name: "v", address: "1.2.3.4" }))).code).toBe("FORBIDDEN");
      expect((await failure(viewer.routes.create({ clusterId, name: "v" }))).code).toBe("FORBIDDEN");
      expect((await failure(viewer.subscribers.create({ clusterId, name: "v" }))).code).toBe("FORBIDDEN");
      expect((await viewer.subscribers.list({ clusterId }))[0]!.token).toBeNull();
    });
  });

  describe("subscribers", () => {
    it("creates, searches, edits, disables, rotates and deletes, each audited", async () => {
      events.length = 0;
      const s = await admin.subscribers.create({ clusterId, name: "Zoë 🇺🇦", expiresAt: new Date("2031-01-01T00:00:00Z"), trafficLimitGb: 50 });
      expect(events.some((e) => e.kind === "subscribers" && e.clusterId === clusterId)).toBe(true);
      const found = await admin.subscribers.list({ clusterId, search: "zoë" });
      expect(found).toHaveLength(1);
      expect(found[0]).toMatchObject({ name: "Zoë 🇺🇦", token: s.token, enabled: true, trafficLimitBytes: 50 * 1024 ** 3, expired: false });
      expect(await admin.subscribers.list({ clusterId, search: "%" })).toHaveLength(0);
      await admin.subscribers.update({ subscriberId: s.id, name: "Zoe", expiresAt: null, trafficLimitGb: null });
      await admin.subscribers.setEnabled({ subscriberId: s.id, enabled: false });
      const { token } = await admin.subscribers.rotateToken({ subscriberId: s.id });
      expect(token).not.toBe(s.token);
      const [row] = await t.db.select().from(subscribers).where(eq(subscribers.id, s.id));
      expect(row).toMatchObject({ name: "Zoe", enabled: false, token, expiresAt: null, trafficLimitBytes: null });
      await admin.subscribers.delete({ subscriberId: s.id });
      expect(await t.db.select().from(subscribers).where(eq(subscribers.id, s.id))).toEqual([]);
      const actions = (await t.db.select().from(auditLog).where(eq(auditLog.entityId, s.id))).map((a) => a.action).sort();
      expect(actions).toEqual(["subscriber.create", "subscriber.delete", "subscriber.disable", "subscriber.rotate-token", "subscriber.update"]);
    });
  });

  describe("audit", () => {
    it("lists a cluster's entries newest first, paged, with who, before and after", async () => {
      const page1 = await admin.audit.list({ clusterId, limit: 3 });
      expect(page1.items).toHaveLength(3);
      expect(page1.nextCursor).toBe(page1.items[2]!.id);
      const ids = page1.items.map((i) => i.id);
      expect([...ids].sort((a, b) => b - a)).toEqual(ids);
      const page2 = await viewer.audit.list({ clusterId, limit: 3, cursor: page1.nextCursor });
      expect(page2.items[0]!.id).toBeLessThan(page1.items[2]!.id);
      const all = await admin.audit.list({ clusterId, limit: 200 });
      const edit = all.items.find((i) => i.action === "server.update")!;
      expect(edit.operatorName).toBe("ada");
      expect(edit.before).toMatchObject({ name: "nl-rtm-1" });
      expect(edit.after).toMatchObject({ name: "nl-rtm-2" });
      // Another cluster's entries are not mixed in.
      expect(all.items.every((i) => !i.summary.includes("Fresh"))).toBe(true);
    });
  });
});
