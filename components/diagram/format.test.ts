import { describe, expect, it } from "vitest";
import { flagEmoji, formatBps, routeFlagPrefix, statusInfo } from "./format";

describe("diagram format helpers", () => {
  it("formats traffic in human units", () => {
    expect(formatBps(0)).toBe("0 bit/s");
    expect(formatBps(950)).toBe("950 bit/s");
    expect(formatBps(12_300_000)).toBe("12.3 Mbit/s");
    expect(formatBps(250_000_000)).toBe("250 Mbit/s");
    expect(formatBps(1_500_000_000)).toBe("1.5 Gbit/s");
  });
  it("labels every status of DESIGN §3", () => {
    expect(statusInfo("unreachable").label).toBe("Unreachable from your servers");
    expect(statusInfo("healthy").label).toBe("Healthy");
    expect(statusInfo("nonsense").label).toBe("Waiting for first check");
  });
  it("shows a flag only when the name does not already carry it", () => {
    expect(flagEmoji("us")).toBe("🇺🇸");
    expect(routeFlagPrefix("🇺🇸 USA", "US")).toBe("");
    expect(routeFlagPrefix("USA", "US")).toBe("🇺🇸");
    expect(routeFlagPrefix("USA", null)).toBe("");
  });
});
