import { describe, expect, it } from "vitest";
import { computeWarnings, type WarningInput } from "./warnings";

type Mutable = { servers: Array<WarningInput["servers"][number]>; inbounds: Array<WarningInput["inbounds"][number]>; routes: Array<WarningInput["routes"][number]> };

function topo(): Mutable {
  return {
    servers: [
      { id: "s1", name: "ny-1", status: "healthy" },
      { id: "s2", name: "dal-1", status: "healthy" },
      { id: "s3", name: "fra-1", status: "probe-failing" },
    ],
    inbounds: [
      { id: "i1", name: "🇺🇸 New York", serverId: "s1", routeId: "usa" },
      { id: "i2", name: "🇺🇸 Dallas", serverId: "s2", routeId: "usa" },
      { id: "i3", name: "🇩🇪 Frankfurt", serverId: "s3", routeId: "de" },
      { id: "i4", name: "🇩🇪 Frankfurt TLS", serverId: "s3", routeId: "de" },
    ],
    routes: [
      { id: "usa", name: "🇺🇸 USA" },
      { id: "de", name: "🇩🇪 Germany" },
      { id: "jp", name: "🇯🇵 Japan" },
    ],
  };
}

const kinds = (t: WarningInput) => computeWarnings(t).map((w) => w.id);

describe("computeWarnings", () => {
  it("says nothing about a healthy, redundant route and nothing about an empty route", () => {
    const t = topo();
    t.inbounds = t.inbounds.filter((i) => i.routeId === "usa");
    expect(computeWarnings(t)).toEqual([]);
  });

  it("names an inbound its server does not serve, after the unassigned ones; served again, the warning goes (issue 25)", () => {
    const t = topo();
    t.inbounds = t.inbounds.filter((i) => i.routeId === "usa");
    t.inbounds.push({ id: "i5", name: "🇺🇸 Dallas alt", serverId: "s2", routeId: null });
    t.inbounds[0] = { ...t.inbounds[0]!, unavailable: "Reality needs Xray-core" };
    expect(kinds(t)).toEqual(["unassigned", "inbound-unavailable:i1"]);
    expect(computeWarnings(t)[1]).toEqual({
      kind: "inbound-unavailable",
      id: "inbound-unavailable:i1",
      inboundId: "i1",
      inboundName: "🇺🇸 New York",
      reason: "Reality needs Xray-core",
      message: "🇺🇸 New York on ny-1 is not served: Reality needs Xray-core — no subscriber is given it",
    });
    t.inbounds[0] = { ...t.inbounds[0]!, unavailable: null };
    expect(kinds(t)).toEqual(["unassigned"]);
  });

  it("a route whose every inbound is unserved or on a down server has no available inbound, and says which", () => {
    const t = topo();
    t.inbounds = [{ id: "i1", name: "🇺🇸 New York", serverId: "s1", routeId: "usa", unavailable: "port 443 does not accept connections (ECONNREFUSED)" }, t.inbounds[2]!];
    t.inbounds[1] = { ...t.inbounds[1]!, routeId: "usa" };
    const w = computeWarnings(t).find((x) => x.kind === "no-available");
    expect(w?.message).toBe("🇺🇸 USA has no available inbound — none is both on a healthy server and served by it");
  });

  it("names every unassigned inbound, with singular and plural messages", () => {
    const t = topo();
    t.inbounds.push({ id: "i5", name: "🇺🇸 Dallas alt", serverId: "s2", routeId: null });
    const [w] = computeWarnings(t);
    expect(w).toMatchObject({ kind: "unassigned", message: "1 inbound is not in any route — clients can't see it" });
    t.inbounds.push({ id: "i6", name: "🇩🇪 Frankfurt test", serverId: "s3", routeId: null });
    const [w2] = computeWarnings(t);
    expect(w2?.message).toBe("2 inbounds are not in any route — clients can't see them");
    expect(w2?.kind === "unassigned" && w2.inbounds.map((i) => i.name)).toEqual(["🇺🇸 Dallas alt", "🇩🇪 Frankfurt test"]);
  });

  it("treats an inbound of a route that is gone as unassigned", () => {
    const t = topo();
    t.inbounds.push({ id: "i7", name: "ghost", serverId: "s1", routeId: "deleted" });
    expect(kinds(t)[0]).toBe("unassigned");
  });

  it("warns about a route with a single inbound (no failover)", () => {
    const t = topo();
    t.inbounds = t.inbounds.filter((i) => i.id !== "i2");
    expect(kinds(t)).toContain("single-inbound:usa");
    expect(computeWarnings(t).find((w) => w.id === "single-inbound:usa")?.message).toMatch(/no failover/);
  });

  it("warns about a route whose inbounds all sit on one server", () => {
    const w = computeWarnings(topo()).find((x) => x.kind === "single-server");
    expect(w).toMatchObject({ routeId: "de", serverName: "fra-1" });
  });

  it("warns about a route with no inbound on a healthy server, and stops once one is healthy", () => {
    const t = topo();
    expect(kinds(t)).toContain("no-available:de");
    t.servers = t.servers.map((s) => (s.id === "s3" ? { ...s, status: "healthy" } : s));
    expect(kinds(t)).not.toContain("no-available:de");
  });

  it("counts only healthy as available (pending, no-data, disabled are not)", () => {
    for (const status of ["pending", "no-data", "disabled", "unavailable", "unreachable", "probe-failing"]) {
      const t = topo();
      t.servers = t.servers.map((s) => ({ ...s, status }));
      expect(kinds(t)).toEqual(expect.arrayContaining(["no-available:usa", "no-available:de"]));
    }
  });

  it("disappears when its cause is fixed: assigning the last unassigned inbound", () => {
    const t = topo();
    t.inbounds.push({ id: "i5", name: "🇺🇸 Dallas alt", serverId: "s2", routeId: null });
    expect(kinds(t)).toContain("unassigned");
    t.inbounds = t.inbounds.map((i) => (i.id === "i5" ? { ...i, routeId: "usa" } : i));
    expect(kinds(t)).not.toContain("unassigned");
  });

  it("orders warnings by route order and is deterministic", () => {
    const t = topo();
    t.inbounds = t.inbounds.filter((i) => i.id !== "i2");
    t.inbounds.push({ id: "i5", name: "x", serverId: "s2", routeId: null });
    expect(kinds(t)).toEqual(["unassigned", "single-inbound:usa", "single-server:de", "no-available:de"]);
    expect(computeWarnings(t)).toEqual(computeWarnings(t));
  });

  it("adds the monitoring warnings: probes off for the cluster, and a fallback that is itself down", () => {
    const t = topo();
    expect(kinds(t).some((k) => k.startsWith("probes-disabled"))).toBe(false);
    const off = computeWarnings({ ...t, cluster: { probesEnabled: false } });
    expect(off.map((w) => w.id)).toContain("probes-disabled:cluster");
    const fb = { ...t, inbounds: t.inbounds.map((i) => (i.id === "i3" ? { ...i, isFallback: true } : i)) };
    fb.servers = fb.servers.map((s) => (s.id === "s3" ? { ...s, status: "probe-failing" } : s));
    const fallbackDown = computeWarnings(fb).find((w) => w.kind === "fallback-down");
    expect(fallbackDown?.message).toMatch(/fallback .* is itself down: Health probe failing/);
    fb.servers = fb.servers.map((s) => (s.id === "s3" ? { ...s, status: "healthy" } : s));
    expect(computeWarnings(fb).find((w) => w.kind === "fallback-down")).toBeUndefined();
  });

  it("names servers whose agent never reported (reportedAt null), not those never asked (absent) or disabled", () => {
    const t = topo();
    expect(kinds(t)).not.toContain("no-agent");
    const silent = { ...t, servers: t.servers.map((s, i) => ({ ...s, reportedAt: i === 0 ? new Date(0) : null })) };
    const w = computeWarnings(silent).find((x) => x.kind === "no-agent");
    expect(w?.message).toMatch(/^\d+ servers have never heard from their agent/);
    expect(w && "serverIds" in w ? w.serverIds : []).toEqual(t.servers.slice(1).map((s) => s.id));
    const oneLeft = { ...silent, servers: silent.servers.map((s, i) => (i > 1 ? { ...s, enabled: false } : s)) };
    expect(computeWarnings(oneLeft).find((x) => x.kind === "no-agent")?.message).toMatch(/has never heard from its agent — install the agent on it/);
    const allReported = { ...t, servers: t.servers.map((s) => ({ ...s, reportedAt: "2026-11-30T00:00:00Z" })) };
    expect(kinds(allReported)).not.toContain("no-agent");
  });
});
