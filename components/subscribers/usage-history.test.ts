import { describe, expect, it } from "vitest";
import { daysBetween, usageByDay, usageByServer } from "./usage-history";

const rows = [
  { day: "2026-11-29", serverId: "a", server: "nyc", upBytes: 1, downBytes: 9 },
  { day: "2026-12-01", serverId: "a", server: "nyc", upBytes: 5, downBytes: 5 },
  { day: "2026-12-01", serverId: "b", server: "ams", upBytes: 10, downBytes: 90 },
  // Outside the range (the query never returns one; ignored if it did).
  { day: "2026-11-01", serverId: "b", server: "ams", upBytes: 7, downBytes: 7 },
];

describe("usage history", () => {
  it("lists every day of the range, across a month's end", () => {
    expect(daysBetween("2026-11-29", "2026-12-02")).toEqual(["2026-11-29", "2026-11-30", "2026-12-01", "2026-12-02"]);
    expect(daysBetween("2026-12-02", "2026-12-02")).toEqual(["2026-12-02"]);
  });

  it("sums each day over its servers, and days without traffic are 0", () => {
    const days = usageByDay("2026-11-29", "2026-12-02", rows);
    expect(days.map((d) => [d.day, d.upBytes, d.downBytes])).toEqual([
      ["2026-11-29", 1, 9],
      ["2026-11-30", 0, 0],
      ["2026-12-01", 15, 95],
      ["2026-12-02", 0, 0],
    ]);
    expect(days[2]!.servers).toEqual([
      { server: "ams", bytes: 100 },
      { server: "nyc", bytes: 10 },
    ]);
  });

  it("sums each server over the range, the largest first", () => {
    expect(usageByServer(rows.slice(0, 3))).toEqual([
      { serverId: "b", server: "ams", upBytes: 10, downBytes: 90, days: 1 },
      { serverId: "a", server: "nyc", upBytes: 6, downBytes: 14, days: 2 },
    ]);
    expect(usageByServer([])).toEqual([]);
  });
});
