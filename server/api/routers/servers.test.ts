/** The servers router against a real database. */
import { describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { auditLog, inbounds, serverHealth, servers } from "@/db/schema";
import { hashAgentToken } from "@/server/auth/tokens";
import { testDbKinds, type TestDatabase } from "@/db/testing";
import { failure, tableSnapshot, seededSuite, type Caller } from "@/server/api/testing";
import { type ChangeEvent } from "@/server/bus";

describe.each(testDbKinds())("servers router on %s", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  let admin: Caller;
  let viewer: Caller;
  const events: ChangeEvent[] = [];
  const snapshot = () => tableSnapshot(t.db);
  seededSuite(kind, (s) => ({ t, clusterId, admin, viewer } = s), events);

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
      // Each call starts when it is awaited: started together, a refusal that came before its
      // turn was an unhandled rejection.
      const bad = [
        () => admin.servers.create({ clusterId, name: "ok", address: "bad host" }),
        () => admin.servers.create({ clusterId, name: "ok", address: "1.2.3.4", coefficient: 100.1 }),
        () => admin.servers.update({ serverId: dal!.id, name: "x\u0000y", address: "1.2.3.4", role: "node", coefficient: 1, capacityMbps: null }),
        () => admin.inbounds.create({ serverId: dal!.id, name: "ok", port: 65536, sni: "a.com" }),
        () => admin.inbounds.create({ serverId: dal!.id, name: "", port: 443, sni: "a.com" }),
        () => admin.routes.create({ clusterId, name: "x".repeat(10_000) }),
        () => admin.routes.create({ clusterId, name: "ok", flag: "XX" }),
        () => admin.subscribers.create({ clusterId, name: "evil\u202Egnp.exe" }),
        () => admin.subscribers.create({ clusterId, name: "ok", trafficLimitGb: -5 }),
      ];
      for (const call of bad) {
        const f = await failure(call());
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
});
