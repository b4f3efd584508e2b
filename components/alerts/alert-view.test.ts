import { describe, expect, it } from "vitest";
import { ALERT_EVENT_TYPES } from "@/core/alert-events";
import { DEFAULT_EVENTS, STATE_STYLE, deliveryText, eventLabel, randomSecret, showsLastError, targetSummary, when } from "./alert-view";

describe("STATE_STYLE", () => {
  it("names every state, a target that never sent anything in words", () => {
    expect(Object.keys(STATE_STYLE).sort()).toEqual(["failing", "new", "ok", "retrying"]);
    expect(STATE_STYLE.new.label).toBe("nothing sent yet");
    expect(STATE_STYLE.failing.label).toBe("failing");
    expect(STATE_STYLE.failing.cls).toContain("red");
    expect(STATE_STYLE.ok.cls).toContain("green");
  });
});

describe("DEFAULT_EVENTS", () => {
  it("are known event types", () => {
    for (const e of DEFAULT_EVENTS) expect(ALERT_EVENT_TYPES).toContain(e);
  });
});

describe("when", () => {
  it("shows a dash for never and the locale's text for a moment", () => {
    expect(when(null)).toBe("—");
    const d = new Date("2026-03-04T05:06:07Z");
    expect(when(d)).toBe(d.toLocaleString());
  });
  it("accepts a date that arrived as a string", () => {
    expect(when("2026-03-04T05:06:07Z" as unknown as Date)).toBe(new Date("2026-03-04T05:06:07Z").toLocaleString());
  });
});

describe("randomSecret", () => {
  it("is 48 hex digits and differs each time", () => {
    const a = randomSecret();
    expect(a).toMatch(/^[0-9a-f]{48}$/);
    expect(randomSecret()).not.toBe(a);
  });
});

describe("eventLabel", () => {
  it("labels known types and the test alert, and passes an unknown type through", () => {
    expect(eventLabel("server.down")).toBe("Server down");
    expect(eventLabel("test")).toBe("Test alert");
    expect(eventLabel("cluster.renamed")).toBe("cluster.renamed");
  });
});

describe("deliveryText", () => {
  const at = new Date("2026-03-04T05:06:07Z");
  it("says when a delivered one arrived", () => {
    expect(deliveryText({ state: "delivered", lastError: null, deliveredAt: at })).toBe(`delivered ${at.toLocaleString()}`);
  });
  it("gives a failed one's error, or nothing after the colon when there is none", () => {
    expect(deliveryText({ state: "failed", lastError: "HTTP 500", deliveredAt: null })).toBe("failed: HTTP 500");
    expect(deliveryText({ state: "failed", lastError: null, deliveredAt: null })).toBe("failed: ");
  });
  it("tells a pending one that already failed (retrying) from one not yet tried", () => {
    expect(deliveryText({ state: "pending", lastError: "timeout", deliveredAt: null })).toBe("retrying: timeout");
    expect(deliveryText({ state: "pending", lastError: null, deliveredAt: null })).toBe("pending");
    expect(deliveryText({ state: "pending", lastError: "", deliveredAt: null })).toBe("pending");
  });
});

describe("targetSummary", () => {
  it("shows a webhook's URL, a Telegram chat, the cluster or all, and the events' labels", () => {
    expect(targetSummary({ kind: "webhook", url: "https://h.example/x", chatId: null, clusterName: "eu", events: ["server.down", "route.panic"] })).toBe(
      "https://h.example/x · eu · Server down, Route in panic",
    );
    expect(targetSummary({ kind: "telegram", url: null, chatId: "-100123", clusterName: null, events: [] })).toBe("chat -100123 · all clusters · ");
  });
});

describe("showsLastError", () => {
  it("only while the target still fails or retries, and only if there is an error", () => {
    expect(showsLastError({ lastError: "HTTP 500", state: "failing" })).toBe(true);
    expect(showsLastError({ lastError: "HTTP 500", state: "retrying" })).toBe(true);
    expect(showsLastError({ lastError: "HTTP 500", state: "ok" })).toBe(false);
    expect(showsLastError({ lastError: "HTTP 500", state: "new" })).toBe(false);
    expect(showsLastError({ lastError: null, state: "failing" })).toBe(false);
    expect(showsLastError({ lastError: "", state: "failing" })).toBe(false);
  });
});
