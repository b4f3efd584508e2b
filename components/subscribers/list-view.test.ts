import { describe, expect, it } from "vitest";
import { SUBSCRIBER_STATUSES } from "@/core/validation";
import { expiryText, lastSeenText, nextSort, pageRange, resetSchedule, STATUS_LABELS, statusBadge, usagePercent } from "./list-view";

describe("statusBadge", () => {
  it("labels each status once, limited as “Limit reached”", () => {
    expect(SUBSCRIBER_STATUSES.map((status) => statusBadge({ status, holdDays: null }).label)).toEqual(SUBSCRIBER_STATUSES.map((s) => STATUS_LABELS[s]));
    expect(statusBadge({ status: "limited", holdDays: null }).label).toBe("Limit reached");
    expect(statusBadge({ status: "active", holdDays: null }).label).toBe("Active");
  });

  it("shows an active subscriber who has not connected yet as on hold, with its own colour", () => {
    const held = statusBadge({ status: "active", holdDays: 30 });
    expect(held.label).toBe("On hold");
    expect(held.className).not.toBe(statusBadge({ status: "active", holdDays: null }).className);
  });

  it("lets disabled, expired and limited win over on hold", () => {
    expect(statusBadge({ status: "disabled", holdDays: 30 }).label).toBe("Disabled");
    expect(statusBadge({ status: "expired", holdDays: 30 }).label).toBe("Expired");
    expect(statusBadge({ status: "limited", holdDays: 30 }).label).toBe("Limit reached");
  });

  it("counts hold days of 0 as on hold: only null means no hold", () => {
    expect(statusBadge({ status: "active", holdDays: 0 }).label).toBe("On hold");
  });
});

describe("expiryText", () => {
  it("counts the hold from first connection, whatever expiry is stored", () => {
    expect(expiryText({ holdDays: 30, expiresAt: null })).toBe("30 d from first connection");
    expect(expiryText({ holdDays: 1, expiresAt: new Date("2027-01-01T00:00:00Z") })).toBe("1 d from first connection");
  });

  it("gives the expiry day, or Never", () => {
    expect(expiryText({ holdDays: null, expiresAt: null })).toBe("Never");
    expect(expiryText({ holdDays: null, expiresAt: new Date(2027, 2, 5, 12) })).toBe("2027-03-05");
  });
});

describe("resetSchedule", () => {
  const next = new Date("2026-12-31T00:00:00Z");
  it("is null when usage never resets, even with a stale day or date", () => {
    expect(resetSchedule({ trafficResetStrategy: "never", trafficResetDay: null, nextResetAt: null })).toBeNull();
    expect(resetSchedule({ trafficResetStrategy: "never", trafficResetDay: 5, nextResetAt: next })).toBeNull();
  });

  it("names the day and the next reset in UTC", () => {
    expect(resetSchedule({ trafficResetStrategy: "monthly", trafficResetDay: 31, nextResetAt: next })).toBe("Resets monthly on day 31 · next 31 Dec 2026");
    // 00:30 UTC on the 1st is still the 1st, whatever the browser's zone.
    expect(resetSchedule({ trafficResetStrategy: "daily", trafficResetDay: null, nextResetAt: new Date("2027-01-01T00:30:00Z") })).toBe("Resets daily · next 1 Jan 2027");
  });

  it("writes weekly days Monday-first, 1 to 7", () => {
    expect(resetSchedule({ trafficResetStrategy: "weekly", trafficResetDay: 1, nextResetAt: null })).toBe("Resets weekly on Mon");
    expect(resetSchedule({ trafficResetStrategy: "weekly", trafficResetDay: 7, nextResetAt: null })).toBe("Resets weekly on Sun");
  });

  it("leaves out the next date when none is stored", () => {
    expect(resetSchedule({ trafficResetStrategy: "monthly", trafficResetDay: 15, nextResetAt: null })).toBe("Resets monthly on day 15");
  });
});

describe("lastSeenText", () => {
  const now = Date.parse("2026-11-30T12:00:00Z");
  const at = (s: number) => new Date(now - s * 1000);
  it("says Never with no report", () => expect(lastSeenText(null, now)).toBe("Never"));
  it("rounds down at each unit's edge", () => {
    expect(lastSeenText(at(0), now)).toBe("just now");
    expect(lastSeenText(at(59), now)).toBe("just now");
    expect(lastSeenText(at(60), now)).toBe("1 min ago");
    expect(lastSeenText(at(3599), now)).toBe("59 min ago");
    expect(lastSeenText(at(3600), now)).toBe("1 h ago");
    expect(lastSeenText(at(86399), now)).toBe("23 h ago");
    expect(lastSeenText(at(86400 * 3), now)).toBe("3 d ago");
  });
  it("treats a time ahead of the clock (skew) as just now", () => expect(lastSeenText(at(-300), now)).toBe("just now"));
});

describe("usagePercent", () => {
  it("is null without a limit", () => {
    expect(usagePercent(5, null)).toBeNull();
    expect(usagePercent(5, 0)).toBeNull();
  });
  it("rounds to whole percent and stops at 100", () => {
    expect(usagePercent(900, 1024)).toBe(88);
    expect(usagePercent(0, 1024)).toBe(0);
    expect(usagePercent(1024, 1024)).toBe(100);
    expect(usagePercent(6, 5)).toBe(100);
  });
});

describe("nextSort", () => {
  it("turns the same column round", () => {
    expect(nextSort({ key: "usage", dir: "desc" }, "usage")).toEqual({ key: "usage", dir: "asc" });
    expect(nextSort({ key: "usage", dir: "asc" }, "usage")).toEqual({ key: "usage", dir: "desc" });
  });
  it("starts another column at its most telling end", () => {
    expect(nextSort({ key: "created", dir: "desc" }, "usage")).toEqual({ key: "usage", dir: "desc" });
    expect(nextSort({ key: "created", dir: "desc" }, "name")).toEqual({ key: "name", dir: "asc" });
    expect(nextSort({ key: "name", dir: "desc" }, "expiry")).toEqual({ key: "expiry", dir: "asc" });
    expect(nextSort({ key: "name", dir: "asc" }, "lastSeen")).toEqual({ key: "lastSeen", dir: "desc" });
  });
});

describe("pageRange", () => {
  it("counts the rows shown from 1", () => {
    expect(pageRange(1, 50, 50, 60)).toBe("1–50 of 60");
    expect(pageRange(2, 50, 10, 60)).toBe("51–60 of 60");
    expect(pageRange(3, 50, 0, 60)).toBe("0 of 60");
    expect(pageRange(1, 200, 200, 100_000)).toBe("1–200 of 100,000");
  });
});
