/**
 * Issue 21, point 10: webhook URLs carry secrets in their path (Slack's) or query, and the
 * audit log is open to viewers. The log keeps scheme and host only: masked when recorded,
 * and again when read, for rows written before.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { auditLog, clusters } from "@/db/schema";
import { openTestDatabase, type TestDatabase } from "@/db/testing";
import { adminAndViewer } from "@/server/api/testing";
import { MASKED, maskUrl } from "@/server/secrets";

const SLACK = "https://hooks.slack.com/services/T0SECRET/B0SECRET/xoxSecretPart123";

describe("maskUrl", () => {
  it("keeps scheme, host and port; masks path, query, fragment and credentials", () => {
    expect(maskUrl(SLACK)).toBe(`https://hooks.slack.com/${MASKED}`);
    expect(maskUrl("https://example.com:8443/?key=abc")).toBe(`https://example.com:8443/${MASKED}`);
    expect(maskUrl("https://user:pw@example.com/")).toBe(`https://example.com/${MASKED}`);
    expect(maskUrl("https://example.com")).toBe("https://example.com/");
    expect(maskUrl("https://example.com/#frag")).toBe(`https://example.com/${MASKED}`);
    expect(maskUrl("not a url /secret")).toBe(MASKED);
  });
});

describe("webhook URLs in the audit log (pglite)", () => {
  let t: TestDatabase;
  let admin: Awaited<ReturnType<typeof adminAndViewer>>["admin"];
  let viewer: Awaited<ReturnType<typeof adminAndViewer>>["viewer"];
  let clusterId: string;

  beforeAll(async () => {
    t = await openTestDatabase("pglite");
    ({ admin, viewer } = await adminAndViewer(t.db));
    const [c] = await t.db.insert(clusters).values({ name: "Audited" }).returning();
    clusterId = c!.id;
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it("create, edit and delete record scheme and host only; nobody reads the secret path", async () => {
    const base = { name: "slack", kind: "webhook" as const, clusterId, secret: "webhook-secret-0123456789", events: ["server.down"] };
    const created = await admin.alerts.create({ ...base, url: SLACK });
    await admin.alerts.update({ ...base, targetId: created!.id, url: `${SLACK}?token=AlsoSecret` });
    await admin.alerts.delete({ targetId: created!.id });
    // Not even the database holds it.
    const rows = await t.db.select().from(auditLog).where(eq(auditLog.entityType, "alert_target"));
    expect(rows.map((r) => r.action)).toEqual(["alert_target.create", "alert_target.update", "alert_target.delete"]);
    expect(JSON.stringify(rows)).not.toMatch(/SECRET|Secret|services/);
    for (const who of [viewer, admin]) {
      const { items } = await who.audit.list({ clusterId, limit: 50 });
      const mine = items.filter((i) => i.entityType === "alert_target");
      expect(mine).toHaveLength(3);
      expect(JSON.stringify(mine)).not.toMatch(/SECRET|Secret|services/);
      expect(mine.find((i) => i.action === "alert_target.create")!.after).toMatchObject({ url: `https://hooks.slack.com/${MASKED}` });
    }
  });

  it("a row recorded before masking is masked when read", async () => {
    await t.db.insert(auditLog).values({ clusterId, operatorName: "old", action: "alert_target.create", entityType: "alert_target", summary: "old row", after: { kind: "webhook", url: SLACK } });
    const { items } = await viewer.audit.list({ clusterId, limit: 50 });
    expect(items.find((i) => i.summary === "old row")!.after).toEqual({ kind: "webhook", url: `https://hooks.slack.com/${MASKED}` });
  });
});
