/** The inbounds router (and the default route of a first inbound) against a real database. */
import { describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { clusters, inbounds, routes, servers } from "@/db/schema";
import { createInbound, DEFAULT_ROUTE_NAME } from "@/server/topology/inbounds";
import { testDbKinds, type TestDatabase } from "@/db/testing";
import { failure, inboundNamed, tableSnapshot, seededSuite, type Caller } from "@/server/api/testing";
import { type ChangeEvent } from "@/server/bus";

describe.each(testDbKinds())("inbounds router on %s", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  let admin: Caller;
  const events: ChangeEvent[] = [];
  const snapshot = () => tableSnapshot(t.db);
  seededSuite(kind, (s) => ({ t, clusterId, admin } = s), events);

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

  describe("inbounds", () => {
    it("creates and edits VMess, Trojan and Shadowsocks inbounds; a refused combination names its field", async () => {
      const fra = await inboundNamed(t.db, clusterId, "🇩🇪 Frankfurt");
      const tls = { security: "tls" as const, sni: "cdn.example.net", tlsCertificateFile: "/etc/ssl/cdn.crt", tlsKeyFile: "/etc/ssl/cdn.key" };
      const vmess = await admin.inbounds.create({ serverId: fra.serverId, name: "VMess ws", port: 2083, protocol: "vmess", transport: "ws", path: "/ws", host: "front.example.com", serviceName: "ignored", ...tls });
      expect(vmess.inbound).toMatchObject({ protocol: "vmess", transport: "ws", path: "/ws", host: "front.example.com", serviceName: null, ssMethod: null });
      // Switching to gRPC keeps no stale path or host.
      const grpc = await admin.inbounds.update({ inboundId: vmess.inbound.id, name: "VMess gRPC", port: 2083, protocol: "vmess", transport: "grpc", serviceName: "tun", path: "/ws", ...tls });
      expect(grpc).toMatchObject({ transport: "grpc", serviceName: "tun", path: null, host: null });

      const refused = await failure(admin.inbounds.create({ serverId: fra.serverId, name: "Trojan plain", port: 2084, protocol: "trojan", security: "none" }));
      expect(refused.code).toBe("BAD_REQUEST");
      expect(refused.fieldErrors).toEqual({ security: "Trojan needs TLS or Reality" });

      const ss = await admin.inbounds.create({ serverId: fra.serverId, name: "SS", port: 8388, protocol: "shadowsocks", ssMethod: "2022-blake3-aes-256-gcm", security: "none" });
      const [row] = await t.db.select().from(inbounds).where(eq(inbounds.id, ss.inbound.id));
      expect(Buffer.from(row!.ssServerKey!, "base64")).toHaveLength(32);
      // The server key stays while the key length does, and is made anew when it changes.
      await admin.inbounds.update({ inboundId: ss.inbound.id, name: "SS renamed", port: 8388, protocol: "shadowsocks", ssMethod: "2022-blake3-aes-256-gcm", security: "none" });
      const [kept] = await t.db.select().from(inbounds).where(eq(inbounds.id, ss.inbound.id));
      expect(kept!.ssServerKey).toBe(row!.ssServerKey);
      await admin.inbounds.update({ inboundId: ss.inbound.id, name: "SS renamed", port: 8388, protocol: "shadowsocks", ssMethod: "2022-blake3-aes-128-gcm", security: "none" });
      const [shorter] = await t.db.select().from(inbounds).where(eq(inbounds.id, ss.inbound.id));
      expect(Buffer.from(shorter!.ssServerKey!, "base64")).toHaveLength(16);
      await admin.inbounds.update({ inboundId: ss.inbound.id, name: "SS renamed", port: 8388, protocol: "shadowsocks", ssMethod: "aes-128-gcm", security: "none" });
      const [aead] = await t.db.select().from(inbounds).where(eq(inbounds.id, ss.inbound.id));
      expect(aead!.ssServerKey).toBeNull();
    });

    it("refuses a second fallback in one route with a clear message", async () => {
      const fra = await inboundNamed(t.db, clusterId, "🇩🇪 Frankfurt");
      const fraTls = await inboundNamed(t.db, clusterId, "🇩🇪 Frankfurt TLS");
      await admin.inbounds.setFallback({ inboundId: fra.id, isFallback: true });
      const f = await failure(admin.inbounds.setFallback({ inboundId: fraTls.id, isFallback: true }));
      expect(f.code).toBe("CONFLICT");
      expect(f.message).toBe("Route 🇩🇪 Germany already has a fallback (🇩🇪 Frankfurt): a route can have only one. Unmark it first.");
      expect((await inboundNamed(t.db, clusterId, "🇩🇪 Frankfurt TLS")).isFallback).toBe(false);
      // Unmarking the first makes room.
      await admin.inbounds.setFallback({ inboundId: fra.id, isFallback: false });
      await admin.inbounds.setFallback({ inboundId: fraTls.id, isFallback: true });
      expect((await inboundNamed(t.db, clusterId, "🇩🇪 Frankfurt TLS")).isFallback).toBe(true);
    });

    it("refuses to mark an unassigned inbound as fallback", async () => {
      const test = await inboundNamed(t.db, clusterId, "🇩🇪 Frankfurt test");
      const f = await failure(admin.inbounds.setFallback({ inboundId: test.id, isFallback: true }));
      expect(f.code).toBe("BAD_REQUEST");
      expect(f.message).toMatch(/not in a route/);
    });

    it("says which server a duplicate port is used on, on the port field (create and edit)", async () => {
      const fra = await inboundNamed(t.db, clusterId, "🇩🇪 Frankfurt");
      const before = await snapshot();
      const f = await failure(admin.inbounds.create({ serverId: fra.serverId, name: "Another", port: 443, sni: "www.samsung.com" }));
      expect(f.code).toBe("CONFLICT");
      expect(f.fieldErrors.port).toBe("Port 443 is already used on de-fra-1 (by 🇩🇪 Frankfurt)");
      expect(await snapshot()).toEqual(before);
      const test = await inboundNamed(t.db, clusterId, "🇩🇪 Frankfurt test");
      const g = await failure(admin.inbounds.update({ inboundId: test.id, name: test.name, port: 8443, security: "reality", sni: "www.samsung.com" }));
      expect(g.fieldErrors.port).toMatch(/^Port 8443 is already used on de-fra-1/);
    });

    it("edits and deletes an inbound, switching to Reality generates keys", async () => {
      const fra = await inboundNamed(t.db, clusterId, "🇩🇪 Frankfurt test");
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
      const ny = await inboundNamed(t.db, clusterId, "🇺🇸 New York");
      const f = await failure(admin.inbounds.create({ serverId: ny.serverId, name: "x", port: 1234, security: "tls", sni: null }));
      expect(f.code).toBe("BAD_REQUEST");
      expect(f.fieldErrors.sni).toBe("TLS needs the server name (SNI): your certificate's domain");
      const r = await failure(admin.inbounds.create({ serverId: ny.serverId, name: "x", port: 1234, security: "reality", sni: null }));
      expect(r.fieldErrors.sni).toBe("Reality needs a masquerade SNI: the site the inbound looks like");
    });

    it("refuses an SNI with security none, on create and on edit, and changes nothing", async () => {
      const ny = await inboundNamed(t.db, clusterId, "🇺🇸 New York");
      const before = await snapshot();
      const f = await failure(admin.inbounds.create({ serverId: ny.serverId, name: "Plain SNI", port: 2346, security: "none", sni: "vpn.example.com" }));
      expect(f.code).toBe("BAD_REQUEST");
      expect(f.fieldErrors).toEqual({ sni: "Security none sends no SNI: leave the server name empty, or choose TLS or Reality" });
      const e = await failure(admin.inbounds.update({ inboundId: ny.id, name: ny.name, port: ny.port, security: "none", sni: "www.microsoft.com" }));
      expect(e.fieldErrors.sni).toMatch(/^Security none sends no SNI/);
      expect(await snapshot()).toEqual(before);
    });

    it("refuses a link SNI that is not one of the Reality server names (Reality refuses any other), on save", async () => {
      const ny = await inboundNamed(t.db, clusterId, "🇺🇸 New York");
      const before = await snapshot();
      const fields = { name: "Mismatch", port: 2345, security: "reality" as const, sni: "www.samsung.com", realityServerNames: ["www.microsoft.com", "microsoft.com"] };
      const f = await failure(admin.inbounds.create({ serverId: ny.serverId, ...fields }));
      expect(f.code).toBe("BAD_REQUEST");
      expect(f.fieldErrors.sni).toBe("The link SNI www.samsung.com must be one of the accepted SNIs (www.microsoft.com, microsoft.com): Reality refuses any other");
      const g = await failure(admin.inbounds.update({ inboundId: ny.id, ...fields, port: ny.port }));
      expect(g.fieldErrors.sni).toMatch(/must be one of the accepted SNIs/);
      expect(await snapshot()).toEqual(before);
      // One of the names, or no names at all (then they are the SNI): accepted.
      const ok = await admin.inbounds.create({ serverId: ny.serverId, ...fields, sni: "microsoft.com" });
      expect(ok.inbound.sni).toBe("microsoft.com");
      await admin.inbounds.create({ serverId: ny.serverId, ...fields, port: 2346, realityServerNames: [] });
      // Short ids: even-length hex only (Xray hex-decodes them), on their field.
      const h = await failure(admin.inbounds.create({ serverId: ny.serverId, ...fields, port: 2347, sni: "microsoft.com", realityShortIds: ["abc"] }));
      expect(h.fieldErrors["realityShortIds.0"]).toMatch(/even number/);
    });
  });
});
