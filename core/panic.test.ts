import { describe, expect, it } from "vitest";
import { isRouteInPanic, routePanic } from "./panic";

const statuses = (m: Record<string, string>) => (id: string) => m[id];
const members = (...serverIds: string[]) => serverIds.map((serverId) => ({ serverId }));

describe("isRouteInPanic", () => {
  it("an empty route is a placeholder, never in panic", () => {
    expect(isRouteInPanic([], () => false)).toBe(false);
  });
  it("is in panic only when no inbound is on an available server", () => {
    expect(isRouteInPanic(members("a", "b"), (id) => id === "b")).toBe(false);
    expect(isRouteInPanic(members("a", "b"), () => false)).toBe(true);
  });
});

describe("routePanic", () => {
  it("no inbounds: not in panic", () => {
    expect(routePanic([], () => "unavailable")).toBeNull();
  });

  it("one available server is enough, even if it only holds the fallback", () => {
    // The fallback takes the route's users when the rest is down: no panic.
    const m = [{ serverId: "a" }, { serverId: "b", isFallback: true }];
    expect(routePanic(m, statuses({ a: "unavailable", b: "healthy" }))).toBeNull();
  });

  it("every server down", () => {
    const p = routePanic(members("a", "b", "b"), statuses({ a: "unavailable", b: "probe-failing" }));
    expect(p).toMatchObject({ down: 2, disabled: 0, pending: 0, serving: true, why: "every server down" });
    expect(p?.reason).toBe("Panic: no available inbound — every server down");
    expect(p?.consequence).toMatch(/any inbound of an enabled server/);
  });

  it("a single server down is named as the only one", () => {
    expect(routePanic(members("a", "a"), statuses({ a: "no-data" }))?.why).toBe("its only server is down");
  });

  it("every server disabled: users get no line for it", () => {
    const p = routePanic(members("a", "b"), statuses({ a: "disabled", b: "disabled" }));
    expect(p).toMatchObject({ disabled: 2, serving: false, why: "every server disabled" });
    expect(p?.consequence).toMatch(/no line/);
  });

  it("some disabled, the rest down: counts each kind, and still serves from the enabled ones", () => {
    const p = routePanic(members("a", "b", "c", "d"), statuses({ a: "disabled", b: "unreachable", c: "unavailable", d: "pending" }));
    expect(p).toMatchObject({ down: 2, disabled: 1, pending: 1, serving: true });
    expect(p?.why).toBe("2 servers down, 1 disabled, 1 waiting for a first check");
  });

  it("servers not checked yet are unavailable too (DESIGN §3)", () => {
    expect(routePanic(members("a", "b"), statuses({ a: "pending", b: "pending" }))?.why).toBe("every server is waiting for its first check");
  });

  it("an unknown server counts as down, as the balancer treats a server without metrics", () => {
    expect(routePanic(members("gone"), statuses({}))?.why).toBe("its only server is down");
  });

  it("does not depend on load: a route with zero users is in panic the same way", () => {
    // The rule reads statuses only; users and traffic never enter it.
    const withUsers = members("a").map((m) => ({ ...m, users: 0 }));
    expect(routePanic(withUsers, statuses({ a: "unavailable" }))).not.toBeNull();
    expect(routePanic(withUsers, statuses({ a: "healthy" }))).toBeNull();
  });
});

describe("an inbound its server does not serve (issue 25)", () => {
  const unserved = (serverId: string) => ({ serverId, unavailable: "Reality needs Xray-core" });

  it("does not keep a route out of panic, even on a healthy server", () => {
    expect(isRouteInPanic([unserved("a")], () => true)).toBe(true);
    expect(isRouteInPanic([unserved("a"), { serverId: "b" }], () => true)).toBe(false);
  });

  it("a healthy server whose only inbound is not served: no line, and the route says why", () => {
    const p = routePanic([unserved("a")], statuses({ a: "healthy" }));
    expect(p).toMatchObject({ unserved: 1, down: 0, serving: false, why: "its only inbound is not served by its server" });
    expect(p?.consequence).toMatch(/no line for this route until one is served again/);
  });

  it("mixed with a down server: panic picks only the inbound that is served", () => {
    const p = routePanic([unserved("a"), { serverId: "b" }], statuses({ a: "healthy", b: "unavailable" }));
    expect(p).toMatchObject({ unserved: 1, down: 1, serving: true, why: "1 inbound not served, 1 server down" });
  });

  it("comes back: served again, the route is out of panic", () => {
    expect(routePanic([{ serverId: "a", unavailable: null }], statuses({ a: "healthy" }))).toBeNull();
  });
});
