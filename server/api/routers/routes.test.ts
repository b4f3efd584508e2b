/** The routes router against a real database. */
import { describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { auditLog, inbounds } from "@/db/schema";
import { testDbKinds, type TestDatabase } from "@/db/testing";
import { failure, inboundNamed, routeNamed, tableSnapshot, seededSuite, type Caller } from "@/server/api/testing";
import { type ChangeEvent } from "@/server/bus";

describe.each(testDbKinds())("routes router on %s", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  let admin: Caller;
  const events: ChangeEvent[] = [];
  const snapshot = () => tableSnapshot(t.db);
  seededSuite(kind, (s) => ({ t, clusterId, admin } = s), events);

  describe("routes", () => {
    it("creates a route whose pool moves an inbound away from another route, at position max+1", async () => {
      const berlin = await inboundNamed(t.db, clusterId, "🇩🇪 Berlin");
      const dallasAlt = await inboundNamed(t.db, clusterId, "🇺🇸 Dallas alt");
      const germany = await routeNamed(t.db, clusterId, "🇩🇪 Germany");
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
      expect((await inboundNamed(t.db, clusterId, "🇩🇪 Berlin")).routeId).toBe(r.id);
      expect((await inboundNamed(t.db, clusterId, "🇺🇸 Dallas alt")).routeId).toBe(r.id);
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
      const f = await failure(admin.routes.create({ clusterId, name: "🇺🇸 usa", inboundIds: [(await inboundNamed(t.db, clusterId, "🇩🇪 Frankfurt")).id] }));
      expect(f.code).toBe("CONFLICT");
      expect(f.message).toBe('A route named "🇺🇸 usa" already exists in this cluster');
      expect(f.fieldErrors.name).toBe(f.message);
      expect(await snapshot()).toEqual(before);
    });

    it("edits and deletes a route; deleting unassigns its inbounds and drops their fallback mark", async () => {
      const usa = (await routeNamed(t.db, clusterId, "🇺🇸 USA"))!;
      const updated = await admin.routes.update({ routeId: usa.id, name: "🇺🇸 United States", flag: "US", algorithm: "round-robin" });
      expect(updated).toMatchObject({ name: "🇺🇸 United States", algorithm: "round-robin", version: usa.version + 1 });
      const ny = await inboundNamed(t.db, clusterId, "🇺🇸 New York");
      await admin.inbounds.setFallback({ inboundId: ny.id, isFallback: true });
      const res = await admin.routes.delete({ routeId: usa.id });
      expect(res.unassigned).toBe(3);
      const after = await inboundNamed(t.db, clusterId, "🇺🇸 New York");
      expect(after).toMatchObject({ routeId: null, isFallback: false });
      expect(await routeNamed(t.db, clusterId, "🇺🇸 United States")).toBeUndefined();
      const audit = await t.db.select().from(auditLog).where(eq(auditLog.action, "route.delete"));
      expect(audit[0]!.before).toMatchObject({ name: "🇺🇸 United States" });
    });

    it("keeps the line-name choice: default inbound, set by create or update, kept when an update leaves it out, refused on its field when unknown", async () => {
      const made = await admin.routes.create({ clusterId, name: "Line names", inboundIds: [] });
      expect(made.lineName).toBe("inbound");
      const set = await admin.routes.update({ routeId: made.id, name: "Line names", lineName: "route" });
      expect(set.lineName).toBe("route");
      // An older client's update without the field does not reset it.
      expect((await admin.routes.update({ routeId: made.id, name: "Line names 2" })).lineName).toBe("route");
      const before = await snapshot();
      const bad = await failure(admin.routes.update({ routeId: made.id, name: "Line names 2", lineName: "server" as "route" }));
      expect(bad.code).toBe("BAD_REQUEST");
      expect(bad.fieldErrors).toEqual({ lineName: "Line name must be the inbound's (inbound) or the route's (route)" });
      const badCreate = await failure(admin.routes.create({ clusterId, name: "Other", lineName: "" as "route" }));
      expect(badCreate.fieldErrors).toEqual({ lineName: "Line name must be the inbound's (inbound) or the route's (route)" });
      expect(await snapshot()).toEqual(before);
      const audit = await admin.audit.list({ clusterId });
      expect(audit.items.find((i) => i.action === "route.update" && (i.after as { lineName?: string } | null)?.lineName === "route")).toBeTruthy();
    });

    it("refuses a pool with an inbound of another cluster and writes nothing", async () => {
      const other = await admin.clusters.createDemo({ name: "Other demo" });
      const foreign = await inboundNamed(t.db, other.id, "🇩🇪 Berlin");
      const before = await snapshot();
      const f = await failure(admin.routes.create({ clusterId, name: "Sneaky", inboundIds: [foreign.id] }));
      expect(f.code).toBe("NOT_FOUND");
      expect(await snapshot()).toEqual(before);
    });
  });
});
