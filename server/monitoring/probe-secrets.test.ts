import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TRPCError } from "@trpc/server";
import { sql } from "drizzle-orm";
import { servers } from "@/db/schema";
import { seedDemoCluster } from "@/server/demo/seed";
import { openTestDatabase, type TestDatabase } from "@/db/testing";
import { adminAndViewer } from "@/server/api/testing";
import { MASKED } from "@/server/secrets";

/** Finding 9 of issue 11: probe header values are credentials. */
describe("probe header secrets", () => {
  let t: TestDatabase;
  let admin: Awaited<ReturnType<typeof adminAndViewer>>["admin"];
  let viewer: Awaited<ReturnType<typeof adminAndViewer>>["viewer"];
  let clusterId: string;
  let serverId: string;
  const SECRET = "Bearer s3cr3t-probe-token";
  const config = { protocol: "http" as const, path: "/health", headers: { authorization: SECRET, "X-Trace": "plain-but-masked" } };

  beforeAll(async () => {
    t = await openTestDatabase("pglite");
    ({ admin, viewer } = await adminAndViewer(t.db));
    clusterId = await seedDemoCluster(t.db, "Demo");
    serverId = (await t.db.select({ id: servers.id }).from(servers).limit(1))[0]!.id;
    await admin.monitoring.setProbeConfig({ clusterId, config });
    await admin.monitoring.setServerProbeOverride({ serverId, override: { headers: { Cookie: "sid=override-secret" } } });
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it("viewers see header names with masked values in getProbeConfig and health", async () => {
    const pc = await viewer.monitoring.getProbeConfig({ clusterId });
    expect(pc.config.headers).toEqual({ authorization: MASKED, "X-Trace": MASKED });
    expect(pc.overrides.find((o) => o.serverId === serverId)?.override?.headers).toEqual({ Cookie: MASKED });
    const h = await viewer.monitoring.health({ clusterId });
    expect(h.cluster.probeConfig.headers).toEqual({ authorization: MASKED, "X-Trace": MASKED });
    expect(h.servers.find((s) => s.id === serverId)?.override?.headers).toEqual({ Cookie: MASKED });
    expect(JSON.stringify([pc, h])).not.toMatch(/s3cr3t|override-secret/);
  });

  it("viewers cannot save a config they loaded masked", async () => {
    const pc = await viewer.monitoring.getProbeConfig({ clusterId });
    await expect(viewer.monitoring.setProbeConfig({ clusterId, config: pc.config })).rejects.toMatchObject({ code: "FORBIDDEN" } satisfies Partial<TRPCError>);
    await expect(viewer.monitoring.setServerProbeOverride({ serverId, override: { headers: { Cookie: MASKED } } })).rejects.toMatchObject({ code: "FORBIDDEN" });
  });

  it("admins see the real values, and saving what they loaded keeps them", async () => {
    const pc = await admin.monitoring.getProbeConfig({ clusterId });
    expect(pc.config.headers).toEqual(config.headers);
    const h = await admin.monitoring.health({ clusterId });
    expect(h.cluster.probeConfig.headers).toEqual(config.headers);
    expect(h.servers.find((s) => s.id === serverId)?.override?.headers).toEqual({ Cookie: "sid=override-secret" });
    await admin.monitoring.setProbeConfig({ clusterId, config: h.cluster.probeConfig });
    expect((await admin.monitoring.getProbeConfig({ clusterId })).config.headers).toEqual(config.headers);
  });

  it("the audit log never holds the values, for anyone", async () => {
    for (const who of [admin, viewer]) {
      const { items } = await who.audit.list({ clusterId, limit: 200 });
      const probe = items.filter((i) => i.action.startsWith("probe."));
      expect(probe.length).toBeGreaterThanOrEqual(3);
      expect(JSON.stringify(items)).not.toMatch(/s3cr3t|override-secret/);
      expect(probe.find((i) => i.action === "probe.config")?.after).toMatchObject({ headers: { authorization: MASKED, "X-Trace": MASKED } });
    }
    // Masked when recorded: the rows themselves hold no secret.
    const raw = await t.db.execute(sql`select before::text as b, after::text as a from audit_log`);
    expect(JSON.stringify(raw)).not.toMatch(/s3cr3t|override-secret/);
  });
});
