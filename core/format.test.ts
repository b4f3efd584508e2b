import { describe, expect, it } from "vitest";
import { SERVER_STATUSES, STATUS_LABELS } from "./status";
import { ago, ALGORITHM_LABELS, ALGORITHMS, algorithmLabel, flagEmoji, formatBps, HEARTBEAT_EXPLAINED, heartbeatLine, plural, routeColor, routeFlagPrefix, span, statusStyle } from "./format";
import { heartbeatPhase, HEARTBEAT_INTERVAL_S, LATE_AFTER_MISSED, SUSPECT_AFTER_MISSED } from "./heartbeat";

describe("formatBps", () => {
  it("formats traffic in human units", () => {
    expect(formatBps(0)).toBe("0 bit/s");
    expect(formatBps(950)).toBe("950 bit/s");
    expect(formatBps(12_300_000)).toBe("12.3 Mbit/s");
    expect(formatBps(250_000_000)).toBe("250 Mbit/s");
    expect(formatBps(1_500_000_000)).toBe("1.5 Gbit/s");
  });
  it("shows whole bits below 1 kbit/s and one decimal below 100 of a larger unit", () => {
    expect(formatBps(50.4)).toBe("50 bit/s");
    expect(formatBps(1000)).toBe("1.0 kbit/s");
    expect(formatBps(99_940)).toBe("99.9 kbit/s");
    expect(formatBps(100_000)).toBe("100 kbit/s");
  });
  it("stops at Tbit/s and treats nonsense as zero", () => {
    expect(formatBps(5e15)).toBe("5000 Tbit/s");
    expect(formatBps(-5)).toBe("0 bit/s");
    expect(formatBps(Number.NaN)).toBe("0 bit/s");
    expect(formatBps(Number.POSITIVE_INFINITY)).toBe("0 bit/s");
  });
});

describe("plural and ago", () => {
  it("uses the singular only for exactly one", () => {
    expect(plural(0, "user")).toBe("0 users");
    expect(plural(1, "user")).toBe("1 user");
    expect(plural(2, "inbox", "inboxes")).toBe("2 inboxes");
  });
  it("says how long ago, and never a negative time", () => {
    const now = Date.parse("2026-01-02T00:00:00Z");
    expect(ago(null, now)).toBe("never");
    expect(ago(new Date(now - 12_000), now)).toBe("12 s ago");
    expect(ago(new Date(now - 5 * 60_000).toISOString(), now)).toBe("5 min ago");
    expect(ago(new Date(now - 3 * 3600_000), now)).toBe("3 h ago");
    expect(ago(new Date(now - 2 * 86400_000), now)).toBe("2 days ago");
    expect(ago(new Date(now + 60_000), now)).toBe("0 s ago");
  });
});

describe("flags", () => {
  it("makes a flag from two letters and nothing from anything else", () => {
    expect(flagEmoji("US")).toBe("🇺🇸");
    expect(flagEmoji("jp")).toBe("🇯🇵");
    expect(flagEmoji("USA")).toBe("");
    expect(flagEmoji("1A")).toBe("");
    expect(flagEmoji(null)).toBe("");
    expect(flagEmoji(undefined)).toBe("");
  });
  it("shows a flag only when the name does not already carry it", () => {
    expect(routeFlagPrefix("🇺🇸 USA", "US")).toBe("");
    expect(routeFlagPrefix("USA", "US")).toBe("🇺🇸");
    expect(routeFlagPrefix("USA", null)).toBe("");
  });
});

describe("status style", () => {
  it("labels every status of DESIGN §3 with the status table's label and a colour", () => {
    for (const s of SERVER_STATUSES) {
      const st = statusStyle(s);
      expect(st.label).toBe(STATUS_LABELS[s]);
      expect(st.dot).toMatch(/^bg-/);
      expect(st.badge).toContain("ring-");
    }
    expect(statusStyle("unreachable").label).toBe("Unreachable from your servers");
  });
  it("shows an unknown status as waiting for the first check", () => {
    expect(statusStyle("nonsense").label).toBe("Waiting for first check");
  });
});

describe("algorithms", () => {
  it("labels every algorithm and shows an unknown one as it is", () => {
    for (const a of ALGORITHMS) expect(ALGORITHM_LABELS[a]).toBeTruthy();
    expect(algorithmLabel("round-robin")).toBe("Round-robin (weighted)");
    expect(algorithmLabel("random")).toBe("random");
  });
});

describe("routeColor", () => {
  it("cycles through the palette, also for negative positions", () => {
    expect(routeColor(0)).toBe(routeColor(10));
    expect(routeColor(-1)).toBe(routeColor(9));
    expect(routeColor(1)).not.toBe(routeColor(0));
  });
});

describe("heartbeatLine", () => {
  const at = Date.parse("2026-01-02T00:00:00Z");
  const view = (silenceMs: number | null, lost = false) => ({ phase: heartbeatPhase(silenceMs === null ? null : at, at + (silenceMs ?? 0)), silenceMs, lost });

  it("spans: seconds, minutes, hours, days; nothing negative or unknown", () => {
    expect(span(12_400)).toBe("12 s");
    expect(span(89_000)).toBe("89 s");
    expect(span(5 * 60_000)).toBe("5 min");
    expect(span(-5_000)).toBe("0 s");
    expect(span(Number.NaN)).toBe("0 s");
  });

  it("says each phase of the fast failover path, at its boundaries", () => {
    const iv = HEARTBEAT_INTERVAL_S * 1000;
    expect(heartbeatLine(view(null))).toEqual({ tone: "muted", text: "no heartbeats from this agent: only reports and probes can take it out of rotation" });
    expect(heartbeatLine(view(0))).toEqual({ tone: "ok", text: "heartbeats arriving (every 2 s)" });
    // Boundaries are inclusive for the better phase, as the watcher reads them.
    expect(heartbeatLine(view(LATE_AFTER_MISSED * iv)).tone).toBe("ok");
    expect(heartbeatLine(view(LATE_AFTER_MISSED * iv + 1))).toEqual({ tone: "warn", text: "heartbeat late: none for 3 s · fast probes under way" });
    expect(heartbeatLine(view(SUSPECT_AFTER_MISSED * iv)).text).toMatch(/^heartbeat late/);
    expect(heartbeatLine(view(SUSPECT_AFTER_MISSED * iv + 1))).toEqual({ tone: "warn", text: "no heartbeat for 6 s · its users move only if the fast probes fail too" });
    expect(heartbeatLine(view(60_001))).toEqual({ tone: "warn", text: "no heartbeat for 60 s: reports and probes decide, as for an agent without heartbeats" });
  });

  it("a confirmed loss outranks the phase; a clock gone backwards reads as just now", () => {
    expect(heartbeatLine(view(8_000, true))).toEqual({ tone: "bad", text: "no heartbeat for 8 s and the fast probes failed: out of rotation until one arrives" });
    expect(heartbeatLine(view(120_000, true)).tone).toBe("bad");
    // A heartbeat stamped after the answer's time (another instance's clock ahead): alive, 0 s.
    expect(heartbeatLine({ phase: heartbeatPhase(at + 5_000, at), silenceMs: 0, lost: false })).toEqual({ tone: "ok", text: "heartbeats arriving (every 2 s)" });
  });

  it("its tooltip names the thresholds the watcher uses", () => {
    expect(HEARTBEAT_EXPLAINED).toContain(`every ${HEARTBEAT_INTERVAL_S} s`);
    expect(HEARTBEAT_EXPLAINED).toContain(`Silent for ${LATE_AFTER_MISSED * HEARTBEAT_INTERVAL_S} s`);
    expect(HEARTBEAT_EXPLAINED).toContain(`silent for ${SUSPECT_AFTER_MISSED * HEARTBEAT_INTERVAL_S} s`);
  });
});
