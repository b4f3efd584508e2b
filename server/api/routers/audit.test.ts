/** The audit router against a real database. */
import { describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { servers } from "@/db/schema";
import { testDbKinds, type TestDatabase } from "@/db/testing";
import { seededSuite, type Caller } from "@/server/api/testing";
import { type ChangeEvent } from "@/server/bus";

describe.each(testDbKinds())("audit router on %s", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  let admin: Caller;
  let viewer: Caller;
  const events: ChangeEvent[] = [];
  seededSuite(kind, (s) => ({ t, clusterId, admin, viewer } = s), events);

  describe("audit", () => {
    it("lists a cluster's entries newest first, paged, with who, before and after", async () => {
      await admin.clusters.create({ name: "Fresh" });
      const [rtm] = await t.db.select().from(servers).where(eq(servers.name, "nl-rtm-1"));
      await admin.servers.update({ serverId: rtm!.id, name: "nl-rtm-2", address: "rtm.example.com", role: "node", coefficient: 0.5, capacityMbps: null });
      await admin.routes.create({ clusterId, name: "🇫🇷 France", flag: "FR" });
      await admin.subscribers.create({ clusterId, name: "Audited" });
      await admin.subscribers.create({ clusterId, name: "Audited too" });
      await admin.routes.create({ clusterId, name: "🇪🇸 Spain", flag: "ES" });
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
