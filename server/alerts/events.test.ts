import { describe, expect, it } from "vitest";
import { SERVER_STATUSES } from "@/core/status";
import { alertText, routePanicTransition, serverTransitionEvent, type RoutePanicState } from "./events";

describe("serverTransitionEvent", () => {
  it("down when entering a down status from one that is not, up when a down status becomes healthy", () => {
    for (const to of ["no-data", "unavailable", "probe-failing", "unreachable"]) {
      expect(serverTransitionEvent("healthy", to)).toBe("server.down");
      expect(serverTransitionEvent("pending", to)).toBe("server.down");
      expect(serverTransitionEvent(to, "healthy")).toBe("server.up");
    }
  });

  it("no event between two down statuses, for a first success, disabling or the same status", () => {
    expect(serverTransitionEvent("unavailable", "no-data")).toBeNull();
    expect(serverTransitionEvent("probe-failing", "unreachable")).toBeNull();
    expect(serverTransitionEvent("pending", "healthy")).toBeNull();
    expect(serverTransitionEvent("disabled", "healthy")).toBeNull();
    expect(serverTransitionEvent("probe-failing", "disabled")).toBeNull();
    expect(serverTransitionEvent("healthy", "disabled")).toBeNull();
    for (const s of SERVER_STATUSES) expect(serverTransitionEvent(s, s)).toBeNull();
  });

  it("nothing for a server that has never passed a check: failing from the start, or its first success", () => {
    for (const to of ["no-data", "unavailable", "probe-failing", "unreachable"]) {
      expect(serverTransitionEvent("pending", to, false)).toBeNull();
      expect(serverTransitionEvent(to, "healthy", false)).toBeNull();
    }
    expect(serverTransitionEvent("probe-failing", "healthy", true)).toBe("server.up");
  });

  it("a flapping server gets one event per status transition, alternating, never two downs in a row", () => {
    const seq = ["healthy", "probe-failing", "healthy", "probe-failing", "unavailable", "no-data", "healthy", "healthy"];
    const events = seq.slice(1).map((to, k) => serverTransitionEvent(seq[k]!, to)).filter(Boolean);
    expect(events).toEqual(["server.down", "server.up", "server.down", "server.up"]);
  });
});

describe("routePanicTransition", () => {
  it("a route seen for the first time is a baseline, in panic or not", () => {
    expect(routePanicTransition(null, true)).toEqual({ next: { inPanic: true, announced: false }, event: null });
    expect(routePanicTransition(null, false)).toEqual({ next: { inPanic: false, announced: false }, event: null });
  });

  it("panic and recovered on changes; recovered only after an announced panic; flapping alternates", () => {
    let s: RoutePanicState = { inPanic: false, announced: false };
    const events: Array<string | null> = [];
    for (const p of [true, true, false, false, true, false]) {
      const r = routePanicTransition(s, p);
      events.push(r.event);
      s = r.next;
    }
    expect(events).toEqual(["route.panic", null, "route.recovered", null, "route.panic", "route.recovered"]);
    // First seen in panic (baseline), then recovering: nothing was announced, nothing to recover.
    const base = routePanicTransition(null, true).next;
    expect(routePanicTransition(base, false).event).toBeNull();
  });
});

describe("alertText", () => {
  it("reads as a sentence naming the server, cluster and status", () => {
    const text = alertText({
      id: "e1",
      type: "server.down",
      occurredAt: "2026-11-30T18:00:00.000Z",
      cluster: { id: "c", name: "Europe" },
      data: { server: { id: "s", name: "fra-1" }, from: "healthy", to: "unavailable", reason: "The agent reports its traffic listener is down." },
    });
    expect(text).toBe("🔴 Server fra-1 in Europe is down: Server unavailable. The agent reports its traffic listener is down.\n2026-11-30T18:00:00.000Z");
    expect(alertText({ id: "e", type: "subscriber.limited", occurredAt: "t", cluster: null, data: { subscriber: { name: "bob" }, usedBytes: 10 * 1024 ** 3, limitBytes: 10 * 1024 ** 3 } })).toContain(
      "bob reached their traffic limit (10.0 GB of 10.0 GB)",
    );
  });

  it("an implausible report names what was wrong: one user's bytes (refused), or the server's rate (capped)", () => {
    const base = { id: "e", type: "server.report_implausible" as const, occurredAt: "t", cluster: { id: "c", name: "Europe" } };
    expect(alertText({ ...base, data: { server: { name: "fra-1" }, capacityMbps: 100, row: 1, bytes: 2 * 1024 ** 3, boundBytes: 1024 ** 3 } })).toContain(
      "reported more traffic for one user than the server's report capacity (100 Mbit/s) allows (2.0 GB, at most 1.0 GB)",
    );
    expect(alertText({ ...base, data: { server: { name: "fra-1" }, capacityMbps: 100, field: "rxBps", rateBps: 2e11 } })).toContain(
      "reported a rate (rxBps 200000 Mbit/s) above the server's report capacity (100 Mbit/s): stored as the capacity",
    );
    expect(alertText({ ...base, data: { server: { name: "fra-1" }, capacityMbps: 100, field: "load.txBps", rateBps: 2e11 } })).toContain(
      "reported a rate (load.txBps 200000 Mbit/s, in a heartbeat) above the server's report capacity (100 Mbit/s): stored as the capacity",
    );
  });
});
