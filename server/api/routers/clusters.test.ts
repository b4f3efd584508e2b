/** The clusters router against a real database: the allowed private destinations (issue 21, point 1). */
import { describe, expect, it } from "vitest";
import { and, eq } from "drizzle-orm";
import { auditLog, clusters, operators } from "@/db/schema";
import { testDbKinds, type TestDatabase } from "@/db/testing";
import { failure, operatorContext, seededSuite, type Caller } from "@/server/api/testing";
import { type ChangeEvent } from "@/server/bus";
import { buildClusterConfigs, configBody } from "@/server/dataplane/config";
import { agentConfigSchema } from "@/core/agent-wire";

describe.each(testDbKinds())("clusters router on %s", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  let admin: Caller;
  let viewer: Caller;
  const events: ChangeEvent[] = [];
  seededSuite(kind, (s) => ({ t, clusterId, admin, viewer } = s), events);

  const stored = async () => (await t.db.select({ list: clusters.allowedPrivateDestinations }).from(clusters).where(eq(clusters.id, clusterId)))[0]!.list;
  /** What every agent of the cluster is handed, parsed as an agent parses it. */
  const agentConfigs = async () => {
    const built = await buildClusterConfigs(t.db, clusterId);
    return [...built.byServer.values()].map((b) => agentConfigSchema.parse(JSON.parse(configBody(built, b))));
  };

  describe("setAllowedPrivateDestinations", () => {
    it("is empty by default, and agents get no exceptions", async () => {
      expect((await admin.clusters.get({ clusterId })).allowedPrivateDestinations).toEqual([]);
      const configs = await agentConfigs();
      expect(configs.length).toBeGreaterThan(0);
      for (const c of configs) expect(c.allowedPrivateDestinations).toBeUndefined();
    });

    it("stores exact destinations, audits, and hands agents a new config", async () => {
      const before = (await agentConfigs())[0]!.version;
      events.length = 0;
      const list = ["127.0.0.1:8080", " 10.0.0.0/24:5432 ", "fd00::7", "[fd00::/64]:443", "192.168.1.10"];
      const r = await admin.clusters.setAllowedPrivateDestinations({ clusterId, destinations: list });
      expect(r.destinations).toEqual(["127.0.0.1:8080", "10.0.0.0/24:5432", "fd00::7", "[fd00::/64]:443", "192.168.1.10"]);
      expect(await stored()).toEqual(r.destinations);
      expect((await viewer.clusters.get({ clusterId })).allowedPrivateDestinations).toEqual(r.destinations);
      expect(events).toContainEqual(expect.objectContaining({ kind: "settings", clusterId }));
      const configs = await agentConfigs();
      for (const c of configs) {
        expect(c.allowedPrivateDestinations).toEqual(r.destinations);
        expect(c.version).not.toBe(before);
      }
      const [audit] = await t.db
        .select()
        .from(auditLog)
        .where(and(eq(auditLog.entityId, clusterId), eq(auditLog.action, "cluster.allowedPrivateDestinations")));
      expect(audit).toMatchObject({ after: { allowedPrivateDestinations: r.destinations }, before: { allowedPrivateDestinations: [] } });
      expect(audit!.summary).toContain("127.0.0.1:8080");

      await admin.clusters.setAllowedPrivateDestinations({ clusterId, destinations: [] });
      expect(await stored()).toEqual([]);
      for (const c of await agentConfigs()) expect(c.allowedPrivateDestinations).toBeUndefined();
    });

    it("refuses bad entries naming the entry, and changes nothing", async () => {
      await admin.clusters.setAllowedPrivateDestinations({ clusterId, destinations: ["10.0.0.5"] });
      const cases: Array<[string[], string, RegExp]> = [
        [["10.0.0.5", "db.internal:5432"], "destinations.1", /db\.internal:5432.*not a host name/],
        [["10.0.0.5/8"], "destinations.0", /bits set past \/8.*10\.0\.0\.0\/8/],
        [["10.0.0.5:70000"], "destinations.0", /port must be a number from 1 to 65535/],
        [["0.0.0.0/0"], "destinations.0", /every address/],
        [["fd00::1:8080:"], "destinations.0", /not an IP address or a CIDR/],
        [["10.0.0.5", "10.0.0.5"], "destinations.1", /listed twice/],
        [["::ffff:10.0.0.1"], "destinations.0", /IPv4 address itself/],
      ];
      for (const [destinations, field, message] of cases) {
        const f = await failure(admin.clusters.setAllowedPrivateDestinations({ clusterId, destinations }));
        expect(f.code, destinations.join(" ")).toBe("BAD_REQUEST");
        expect(f.fieldErrors[field], destinations.join(" ")).toMatch(message);
      }
      expect((await failure(admin.clusters.setAllowedPrivateDestinations({ clusterId, destinations: Array.from({ length: 65 }, (_, i) => `10.0.0.${i}`) }))).fieldErrors.destinations).toMatch(/At most 64/);
      expect(await stored()).toEqual(["10.0.0.5"]);
    });

    it("is for admins signed in: viewers and API tokens are refused", async () => {
      expect((await failure(viewer.clusters.setAllowedPrivateDestinations({ clusterId, destinations: ["10.0.0.6"] }))).code).toBe("FORBIDDEN");
      const { createCaller } = await import("../root");
      const [ada] = await t.db.select().from(operators).where(eq(operators.username, "ada"));
      const ctx = operatorContext(t.db, ada!.id, "ada", "admin");
      const tokenCaller = createCaller({ ...ctx, apiToken: { id: "tok", name: "ci", scopes: ["read", "topology:write", "subscribers:write"] } } as never);
      const f = await failure(tokenCaller.clusters.setAllowedPrivateDestinations({ clusterId, destinations: ["10.0.0.6"] }));
      expect(f.code).toBe("FORBIDDEN");
      expect(f.message).toMatch(/not open to API tokens/);
      expect(await stored()).toEqual(["10.0.0.5"]);
    });
  });

  describe("setBranding", () => {
    const brand = () => t.db.select({ b: clusters.branding }).from(clusters).where(eq(clusters.id, clusterId)).then((r) => r[0]!.b);
    const good = { title: " Fast VPN ", logo: "https://cdn.example.com/l.png", supportUrl: "tg://resolve?domain=help", accentColor: "#aa0000", backgroundColor: "", showSubscriberName: false };

    it("has no brand by default, then stores one, audits it and tells the subscription service", async () => {
      expect((await viewer.clusters.get({ clusterId })).branding).toBeNull();
      events.length = 0;
      const r = await admin.clusters.setBranding({ clusterId, branding: good });
      expect(r.branding).toEqual({ ...good, title: "Fast VPN", backgroundColor: null });
      expect((await viewer.clusters.get({ clusterId })).branding).toEqual(r.branding);
      expect(events).toContainEqual(expect.objectContaining({ kind: "settings", clusterId }));
      const [audit] = await t.db.select().from(auditLog).where(and(eq(auditLog.entityId, clusterId), eq(auditLog.action, "cluster.branding")));
      expect(audit).toMatchObject({ before: { branding: null }, after: { branding: { title: "Fast VPN", accentColor: "#aa0000" } } });
      // An uploaded logo is audited as "an image", not its bytes.
      await admin.clusters.setBranding({ clusterId, branding: { ...good, logo: `data:image/png;base64,${"A".repeat(4000)}` } });
      const audits = await t.db.select().from(auditLog).where(and(eq(auditLog.entityId, clusterId), eq(auditLog.action, "cluster.branding")));
      expect(JSON.stringify(audits.at(-1)!.after)).not.toContain("AAAA");
    });

    it("refuses bad input naming the field, and changes nothing", async () => {
      await admin.clusters.setBranding({ clusterId, branding: good });
      const before = await brand();
      const cases: Array<[Record<string, unknown>, string, RegExp]> = [
        [{ accentColor: "red;}body{display:none" }, "branding.accentColor", /Accent colour must be a colour like #1e40af/],
        [{ logo: "javascript:alert(1)" }, "branding.logo", /https:\/\/ URL or an uploaded image/],
        [{ logo: "data:text/html;base64,PHNjcmlwdD4=" }, "branding.logo", /PNG, JPEG, GIF or WebP/],
        [{ supportUrl: "javascript:alert(1)" }, "branding.supportUrl", /https:\/\/, tg:\/\/ or mailto:/],
        [{ title: "x".repeat(65) }, "branding.title", /at most 64/],
      ];
      for (const [patch, field, message] of cases) {
        const f = await failure(admin.clusters.setBranding({ clusterId, branding: { ...good, ...patch } as never }));
        expect(f.code, field).toBe("BAD_REQUEST");
        expect(f.fieldErrors[field], field).toMatch(message);
      }
      expect(await brand()).toEqual(before);
    });

    it("is refused to viewers", async () => {
      const before = await brand();
      expect((await failure(viewer.clusters.setBranding({ clusterId, branding: { ...good, title: "Viewer's" } }))).code).toBe("FORBIDDEN");
      expect(await brand()).toEqual(before);
    });
  });
});
