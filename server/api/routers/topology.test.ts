import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { TRPCError } from "@trpc/server";
import { inbounds, operators, routes } from "@/db/schema";
import { seedDemoCluster } from "@/server/demo/seed";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { createCaller } from "@/server/api/root";
import type { Context } from "@/server/api/trpc";
import { adminAndViewer, operatorContext } from "@/server/api/testing";
import { onChange, type ChangeEvent } from "@/server/bus";

async function trpcCode(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return err instanceof TRPCError ? err.code : `not a TRPCError: ${String(err)}`;
  }
  return "no error";
}

describe.each(testDbKinds())("topology procedures on %s", (kind) => {
  let t: TestDatabase;
  let clusterId: string;
  let admin: ReturnType<typeof createCaller>;
  let viewer: ReturnType<typeof createCaller>;

  const ctxFor = (operatorId: string, username: string, role: "owner" | "admin" | "viewer"): Context => operatorContext(t.db, operatorId, username, role);

  const byName = async (name: string) => {
    const topo = await admin.topology.get({ clusterId });
    const ib = topo.inbounds.find((i) => i.name === name);
    if (!ib) throw new Error(`no inbound ${name}`);
    return { topo, ib, routeOf: (routeName: string) => topo.routes.find((r) => r.name === routeName)!.id };
  };

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    ({ admin, viewer } = await adminAndViewer(t.db));
    clusterId = await seedDemoCluster(t.db, "Demo");
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it("returns warnings and users per inbound with the topology", async () => {
    const topo = await admin.topology.get({ clusterId });
    const unassigned = topo.warnings.find((w) => w.kind === "unassigned");
    expect(unassigned?.message).toBe("2 inbounds are not in any route — clients can't see them");
    expect(topo.inbounds.every((i) => i.users === 0)).toBe(true);
  });

  it("moves an inbound to another route, bumps its version and announces the change", async () => {
    const { ib, routeOf } = await byName("🇺🇸 Dallas");
    const events: ChangeEvent[] = [];
    const off = onChange((e) => events.push(e));
    const res = await admin.topology.moveInbound({ inboundId: ib.id, toRouteId: routeOf("🇯🇵 Japan"), expectedVersion: ib.version });
    off();
    expect(res.version).toBe(ib.version + 1);
    const [row] = await t.db.select().from(inbounds).where(eq(inbounds.id, ib.id));
    expect(row!.routeId).toBe(routeOf("🇯🇵 Japan"));
    expect(events).toContainEqual(expect.objectContaining({ kind: "topology", clusterId }));
  });

  it("refuses a move made on a stale version with CONFLICT and changes nothing", async () => {
    const { ib, routeOf } = await byName("🇺🇸 New York");
    const code = await trpcCode(
      admin.topology.moveInbound({ inboundId: ib.id, toRouteId: routeOf("🇩🇪 Germany"), expectedVersion: ib.version - 1 }),
    );
    expect(code).toBe("CONFLICT");
    const [row] = await t.db.select().from(inbounds).where(eq(inbounds.id, ib.id));
    expect(row!.routeId).toBe(routeOf("🇺🇸 USA"));
    expect(row!.version).toBe(ib.version);
  });

  it("refuses a viewer with FORBIDDEN, for moves and reorders", async () => {
    const { ib, topo } = await byName("🇺🇸 New York");
    expect(await trpcCode(viewer.topology.moveInbound({ inboundId: ib.id, toRouteId: null, expectedVersion: ib.version }))).toBe("FORBIDDEN");
    expect(await trpcCode(viewer.topology.reorderRoutes({ clusterId, orderedRouteIds: topo.routes.map((r) => r.id).reverse() }))).toBe("FORBIDDEN");
    const [row] = await t.db.select().from(inbounds).where(eq(inbounds.id, ib.id));
    expect(row!.routeId).not.toBeNull();
    // ...but a viewer sees everything.
    expect((await viewer.topology.get({ clusterId })).inbounds.length).toBe(topo.inbounds.length);
  });

  it("moving to null unassigns, and the unassigned warning names it", async () => {
    const { ib } = await byName("🇺🇸 New York TLS");
    await admin.topology.moveInbound({ inboundId: ib.id, toRouteId: null, expectedVersion: ib.version });
    const [row] = await t.db.select().from(inbounds).where(eq(inbounds.id, ib.id));
    expect(row!.routeId).toBeNull();
    const topo = await admin.topology.get({ clusterId });
    const w = topo.warnings.find((x) => x.kind === "unassigned");
    expect(w?.kind === "unassigned" && w.inbounds.map((i) => i.name)).toContain("🇺🇸 New York TLS");
  });

  it("says NOT_FOUND for an inbound or route that does not exist", async () => {
    const { ib } = await byName("🇩🇪 Berlin");
    const missing = "00000000-0000-4000-8000-000000000000";
    expect(await trpcCode(admin.topology.moveInbound({ inboundId: missing, toRouteId: null, expectedVersion: 1 }))).toBe("NOT_FOUND");
    expect(await trpcCode(admin.topology.moveInbound({ inboundId: ib.id, toRouteId: missing, expectedVersion: ib.version }))).toBe("NOT_FOUND");
  });

  it("reorders routes persistently, and refuses a stale list with CONFLICT", async () => {
    const { topo } = await byName("🇩🇪 Berlin");
    const reversed = topo.routes.map((r) => r.id).reverse();
    await admin.topology.reorderRoutes({ clusterId, orderedRouteIds: reversed });
    const after = await admin.topology.get({ clusterId });
    expect(after.routes.map((r) => r.id)).toEqual(reversed);
    expect(await trpcCode(admin.topology.reorderRoutes({ clusterId, orderedRouteIds: reversed.slice(1) }))).toBe("CONFLICT");
    // A cluster that does not exist (found by the fuzz suite: its audit entry was a 500).
    expect(await trpcCode(admin.topology.reorderRoutes({ clusterId: "6f1c6c1e-6c2a-4d8e-9d8c-0a1b2c3d4e5f", orderedRouteIds: [] }))).toBe("NOT_FOUND");
    const rows = await t.db.select().from(routes).where(eq(routes.clusterId, clusterId));
    expect(rows.length).toBe(reversed.length);
  });

  it("streams a change event to subscribers of the same cluster only", async () => {
    const ac = new AbortController();
    const [a] = await t.db.select().from(operators).where(eq(operators.username, "ada"));
    const caller = createCaller(ctxFor(a!.id, "ada", "admin"), { signal: ac.signal });
    const iterable = await caller.topology.onChange({ clusterId });
    const it = (iterable as AsyncIterable<{ kinds: string[] }>)[Symbol.asyncIterator]();
    const next = it.next();
    const { publishChange } = await import("@/server/bus");
    publishChange("topology", "11111111-1111-4111-8111-111111111111"); // another cluster: ignored
    publishChange("subscribers", clusterId); // not a diagram change: ignored
    publishChange("health", clusterId);
    const first = await next;
    expect(first.value).toMatchObject({ kinds: ["health"] });
    ac.abort();
    await it.return?.();
  });

  it("builds a synthetic cluster of the requested size", async () => {
    const c = await admin.tooling.createSynthetic({ name: "Synthetic", servers: 30, inboundsPerServer: 4, routes: 10 });
    const topo = await admin.topology.get({ clusterId: c.id });
    expect(topo.servers.length).toBe(30);
    expect(topo.inbounds.length).toBe(120);
    expect(topo.routes.length).toBe(10);
    expect(await trpcCode(viewer.tooling.createSynthetic({ name: "Nope", servers: 1, inboundsPerServer: 1, routes: 1 }))).toBe("FORBIDDEN");
  });
});
