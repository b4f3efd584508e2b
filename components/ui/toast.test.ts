import { describe, expect, it } from "vitest";
import { findName, hasWriteToast, procedurePath, subjectId, writeToast } from "./toast-messages";
import { createToastStore, MAX_TOASTS } from "./toast-store";
import { moveToastText, undoToastText } from "../diagram/move-messages";

describe("procedurePath", () => {
  it("reads tRPC's mutation keys", () => {
    expect(procedurePath([["servers", "setEnabled"]])).toBe("servers.setEnabled");
    expect(procedurePath([["prefix"], ["routes", "create"]])).toBe("routes.create");
    expect(procedurePath(undefined)).toBeNull();
    expect(procedurePath(["x", 1])).toBeNull();
  });
});

describe("writeToast", () => {
  it("names the thing from the input when it carries a name", () => {
    expect(writeToast("routes.create", { name: "Germany" }, { ok: true }, null)).toEqual({ kind: "success", text: "Route Germany created" });
    expect(subjectId("routes.update", { routeId: "r1", name: "Germany" })).toBeNull();
  });

  it("names it from the looked-up name when the input has only an id", () => {
    expect(subjectId("servers.setEnabled", { serverId: "s1", enabled: false })).toBe("s1");
    expect(writeToast("servers.setEnabled", { serverId: "s1", enabled: false }, { ok: true }, "de-fra-1")?.text).toBe("Server de-fra-1 disabled");
    expect(writeToast("servers.setEnabled", { serverId: "s1", enabled: true }, { ok: true }, "de-fra-1")?.text).toBe("Server de-fra-1 enabled");
  });

  it("falls back to a plain noun when the name is unknown", () => {
    expect(writeToast("servers.delete", { serverId: "s1" }, { ok: true }, null)?.text).toBe("Server deleted");
    expect(writeToast("subscribers.resetUsage", { subscriberId: "u" }, { ok: true }, null)?.text).toBe("Usage of the subscriber reset to zero");
    expect(writeToast("inbounds.delete", { inboundId: "i1" }, { ok: false, message: "gone" }, null)).toEqual({ kind: "error", text: "Could not delete inbound: gone" });
  });

  it("failures carry the server's message and name what failed", () => {
    expect(writeToast("subscribers.setEnabled", { subscriberId: "u", enabled: true }, { ok: false, message: "This subscriber no longer exists" }, "alice")).toEqual({
      kind: "error",
      text: "Could not enable subscriber alice: This subscriber no longer exists",
    });
    expect(writeToast("topology.reorderRoutes", {}, { ok: false, message: "The list of routes changed meanwhile" }, null)?.text).toBe(
      "Could not reorder the routes: The list of routes changed meanwhile",
    );
  });

  it("covers the dashboard's writes and leaves sign-in, sign-out and the moves alone", () => {
    for (const p of ["routes.create", "routes.update", "routes.delete", "servers.create", "servers.update", "servers.setEnabled", "servers.delete", "inbounds.create", "inbounds.update", "inbounds.delete", "subscribers.create", "subscribers.delete", "operators.setRole", "apiTokens.revoke", "alerts.create"]) {
      expect(hasWriteToast(p), p).toBe(true);
    }
    for (const p of ["auth.login", "auth.logout", "auth.setup", "topology.moveInbound", "tooling.createSynthetic", "nope"]) expect(hasWriteToast(p), p).toBe(false);
    expect(writeToast("auth.login", {}, { ok: true }, null)).toBeNull();
  });
});

describe("bulk subscriber changes", () => {
  it("say what was done to how many, as the server counted", () => {
    const bulk = (action: Record<string, unknown>, affected: unknown) => writeToast("subscribers.bulk", { clusterId: "c", action }, { ok: true, data: { affected } }, null)?.text;
    expect(bulk({ kind: "disable" }, 3)).toBe("Disabled 3 subscribers");
    expect(bulk({ kind: "enable" }, 1)).toBe("Enabled 1 subscriber");
    expect(bulk({ kind: "extend", days: 30 }, 2)).toBe("Extended 2 subscribers by 30 days");
    expect(bulk({ kind: "resetUsage" }, 0)).toBe("Reset the usage of 0 subscribers");
    expect(bulk({ kind: "delete" }, 5)).toBe("Deleted 5 subscribers");
    expect(bulk({ kind: "delete" }, undefined)).toBe("Deleted 0 subscribers");
    expect(writeToast("subscribers.bulk", { action: { kind: "delete" } }, { ok: false, message: "The selection changed" }, null)?.text).toBe(
      "Could not change the selected subscribers: The selection changed",
    );
  });
});

describe("findName", () => {
  const topology = { servers: [{ id: "s1", name: "de-fra-1" }], inbounds: [{ id: "i1", name: "Frankfurt", serverId: "s1" }], routes: [] };
  it("finds a name anywhere in cached data, or a username", () => {
    expect(findName([undefined, topology], "i1")).toBe("Frankfurt");
    expect(findName([[{ id: "o1", username: "bob" }]], "o1")).toBe("bob");
    expect(findName([topology], "missing")).toBeNull();
  });
  it("stops at the depth limit and survives cycles", () => {
    const cyclic: Record<string, unknown> = { id: "x" };
    cyclic.self = cyclic;
    expect(findName([cyclic], "y")).toBeNull();
    expect(findName([{ a: { b: { id: "deep", name: "n" } } }], "deep", 1)).toBeNull();
    expect(findName([{ a: { b: { id: "deep", name: "n" } } }], "deep")).toBe("n");
  });
});

describe("toast store", () => {
  it("keeps at most a few toasts, dropping the oldest", () => {
    const store = createToastStore();
    const ids = Array.from({ length: MAX_TOASTS + 2 }, (_, i) => store.getState().push({ kind: "success", text: `t${i}` }));
    expect(store.getState().toasts.map((t) => t.id)).toEqual(ids.slice(-MAX_TOASTS));
  });
  it("dismisses and updates by id; an undo's answer replaces its action", () => {
    const store = createToastStore();
    const a = store.getState().push({ kind: "success", text: "moved", action: { label: "Undo", onClick: () => {} } });
    const b = store.getState().push({ kind: "success", text: "other" });
    store.getState().update(a, { kind: "error", text: "Could not undo", action: undefined });
    expect(store.getState().toasts[0]).toEqual({ id: a, kind: "error", text: "Could not undo", action: undefined });
    store.getState().dismiss(b);
    expect(store.getState().toasts.map((t) => t.id)).toEqual([a]);
    store.getState().update(999, { text: "ignored" });
    expect(store.getState().toasts).toHaveLength(1);
  });
});

describe("move toasts", () => {
  it("say where the inbound went and what Undo did", () => {
    expect(moveToastText("Frankfurt", "Germany", "Unassigned")).toBe("Saved: Frankfurt moved from Germany to Unassigned.");
    expect(undoToastText("Frankfurt", "Germany", null)).toBe("Undone: Frankfurt is back in Germany.");
    expect(undoToastText("Frankfurt", "Germany", "Someone else changed this inbound")).toBe("Could not undo the move of Frankfurt: Someone else changed this inbound");
  });
});
