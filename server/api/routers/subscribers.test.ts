/** The subscribers router against a real database. */
import { describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { TRPCError } from "@trpc/server";
import { auditLog, subscribers } from "@/db/schema";
import { testDbKinds, type TestDatabase } from "@/db/testing";
import { seededSuite, type Caller } from "@/server/api/testing";
import { type ChangeEvent } from "@/server/bus";
import { trojanPassword } from "@/core/credentials";

describe.each(testDbKinds())("subscribers router on %s", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  let admin: Caller;
  let viewer: Caller;
  const events: ChangeEvent[] = [];
  seededSuite(kind, (s) => ({ t, clusterId, admin, viewer } = s), events);

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
    const [beforeRotation] = await t.db.select().from(subscribers).where(eq(subscribers.id, s.id));
    const { token } = await admin.subscribers.rotateToken({ subscriberId: s.id });
    expect(token).not.toBe(s.token);
    const [row] = await t.db.select().from(subscribers).where(eq(subscribers.id, s.id));
    expect(row).toMatchObject({ name: "Zoe", enabled: false, token, expiresAt: null, trafficLimitBytes: null });
    // The key goes with the link: a leaked link's credentials (UUID, and the Trojan/SS secrets
    // derived from it) stop connecting too.
    expect(row!.vlessUuid).not.toBe(beforeRotation!.vlessUuid);
    expect(trojanPassword(row!.vlessUuid)).not.toBe(trojanPassword(beforeRotation!.vlessUuid));
    await admin.subscribers.delete({ subscriberId: s.id });
    expect(await t.db.select().from(subscribers).where(eq(subscribers.id, s.id))).toEqual([]);
    const actions = (await t.db.select().from(auditLog).where(eq(auditLog.entityId, s.id))).map((a) => a.action).sort();
    expect(actions).toEqual(["subscriber.create", "subscriber.delete", "subscriber.disable", "subscriber.rotate-token", "subscriber.update"]);
  });

  it("viewers list without tokens and cannot write", async () => {
    await admin.subscribers.create({ clusterId, name: "Vera", expiresAt: null, trafficLimitGb: null });
    expect((await viewer.subscribers.list({ clusterId }))[0]!.token).toBeNull();
    await expect(viewer.subscribers.create({ clusterId, name: "v" })).rejects.toMatchObject({ code: "FORBIDDEN" });
  });

  it("says NOT_FOUND for a missing cluster or subscriber and announces nothing", async () => {
    events.length = 0;
    const missing = "00000000-0000-4000-8000-000000000000";
    const a = await admin.subscribers.create({ clusterId: missing, name: "x" }).catch((e: unknown) => e);
    expect(a).toBeInstanceOf(TRPCError);
    expect(a).toMatchObject({ code: "NOT_FOUND", message: "No such cluster" });
    await expect(admin.subscribers.delete({ subscriberId: missing })).rejects.toMatchObject({ code: "NOT_FOUND", message: "This subscriber no longer exists" });
    expect(events.filter((e) => e.kind === "subscribers")).toEqual([]);
  });
});
