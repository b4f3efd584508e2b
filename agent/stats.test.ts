import { describe, expect, it } from "vitest";
import { mergeTraffic, parseV2ctlStats, parseXrayStats, planStatsChunks, statsQueryArgs, STATS_CHUNK_BYTES, userCountersBytes } from "./stats";

// Captured from `v2ctl api --server=127.0.0.1:PORT StatsService.QueryStats 'pattern: "user>>>" reset: true'`
// against v2ray 4.34 after one fetch, then right after (the counters reset: values left out).
const CAPTURED = `stat: <
  name: "user>>>u1>>>traffic>>>uplink"
  value: 79
>
stat: <
  name: "user>>>u1>>>traffic>>>downlink"
  value: 672
>

`;
const CAPTURED_AFTER_RESET = `stat: <
  name: "user>>>u1>>>traffic>>>uplink"
>
stat: <
  name: "user>>>u1>>>traffic>>>downlink"
>

`;

describe("parseV2ctlStats", () => {
  it("reads uplink as up and downlink as down", () => {
    expect(parseV2ctlStats(CAPTURED)).toEqual(new Map([["u1", { up: 79, down: 672 }]]));
  });
  it("reads left-out values as zero", () => {
    expect(parseV2ctlStats(CAPTURED_AFTER_RESET)).toEqual(new Map([["u1", { up: 0, down: 0 }]]));
  });
  it("handles one-line blocks, emails with symbols and other counters", () => {
    const text = 'stat: < name: "user>>>a@b.c>>>traffic>>>downlink" value: 5 > stat: < name: "inbound>>>api>>>traffic>>>uplink" value: 9 >';
    expect(parseV2ctlStats(text)).toEqual(new Map([["a@b.c", { up: 0, down: 5 }]]));
    expect(parseV2ctlStats("")).toEqual(new Map());
  });
});

describe("parseXrayStats", () => {
  it("reads numbers, int64 strings and left-out values", () => {
    const text = JSON.stringify({ stat: [{ name: "user>>>x>>>traffic>>>uplink", value: 10 }, { name: "user>>>x>>>traffic>>>downlink", value: "20" }, { name: "user>>>y>>>traffic>>>uplink" }] });
    expect(parseXrayStats(text)).toEqual(new Map([["x", { up: 10, down: 20 }], ["y", { up: 0, down: 0 }]]));
    expect(parseXrayStats("{}")).toEqual(new Map());
    expect(parseXrayStats("")).toEqual(new Map());
  });
});

it("mergeTraffic adds", () => {
  const a = new Map([["x", { up: 1, down: 2 }]]);
  expect(mergeTraffic(a, new Map([["x", { up: 3, down: 4 }], ["y", { up: 1, down: 0 }]]))).toEqual(new Map([["x", { up: 4, down: 6 }], ["y", { up: 1, down: 0 }]]));
});

describe("planStatsChunks", () => {
  const names = (email: string) => [`user>>>${email}>>>traffic>>>uplink`, `user>>>${email}>>>traffic>>>downlink`];
  /** For every email, the patterns (substring matches, as the cores do) that read its counters. */
  function matchesOf(emails: string[], budget: number) {
    const chunks = planStatsChunks(emails, budget);
    return { chunks, each: emails.map((e) => names(e).map((n) => chunks.filter((c) => n.includes(c.pattern)).map((c) => c.pattern))) };
  }

  it("asks for everything at once when it fits, and nothing with no users", () => {
    expect(planStatsChunks(["a", "b"])).toEqual([{ pattern: "user>>>", covers: "every user", users: 2 }]);
    expect(planStatsChunks([])).toEqual([]);
  });

  it("splits by prefix so every counter is matched by exactly one chunk, emails sharing prefixes included", () => {
    const emails = ["ab", "abc", "abd", "abcd", "b", "bb", "a", "ab\u{1F600}x", "ab\u{1F600}y", "é1", "é2"];
    const { chunks, each } = matchesOf(emails, userCountersBytes("abcd") * 2);
    for (const [k, perCounter] of each.entries()) for (const patterns of perCounter) expect([emails[k], patterns.length]).toEqual([emails[k], 1]);
    // "ab" is itself a prefix of others: read by its exact name, not by "user>>>ab".
    expect(chunks).toContainEqual({ pattern: "user>>>ab>>>", covers: 'the email "ab"', users: 1 });
    // A split never cuts a surrogate pair.
    for (const c of chunks) expect(c.pattern).toBe(Buffer.from(c.pattern, "utf8").toString("utf8"));
  });

  it("keeps each chunk under the budget for 5,000 UUID emails, two characters deep", () => {
    const emails = Array.from({ length: 5_000 }, () => crypto.randomUUID());
    const budget = 32 * 1024;
    const chunks = planStatsChunks(emails, budget);
    const counted = new Map<string, number>();
    const notOnce: string[] = [];
    for (const e of emails) {
      const hit = chunks.filter((c) => `user>>>${e}>>>traffic>>>uplink`.includes(c.pattern));
      if (hit.length !== 1) notOnce.push(e);
      else counted.set(hit[0]!.pattern, (counted.get(hit[0]!.pattern) ?? 0) + userCountersBytes(e));
    }
    expect(notOnce).toEqual([]);
    for (const c of chunks) expect(counted.get(c.pattern)).toBeLessThanOrEqual(budget);
    expect(chunks.reduce((n, c) => n + c.users, 0)).toBe(5_000);
    expect(chunks.every((c) => c.pattern.length === "user>>>".length + 2)).toBe(true);
    // The default leaves 3/4 of the 4 MiB limit free: about 6,600 UUID users per query.
    expect(Math.floor(STATS_CHUNK_BYTES / userCountersBytes(emails[0]!))).toBe(6636);
  });

  it("bounds a reply from above: the counters' protobuf size", () => {
    // Stat{name, value} in a repeated field: tag + length + (tag + length + name) + (tag + int64 varint).
    const stat = (name: string) => 1 + 1 + (1 + 1 + name.length + 1 + 10);
    const email = "00000000-0000-4000-8000-000000000001";
    expect(userCountersBytes(email)).toBeGreaterThanOrEqual(names(email).reduce((n, name) => n + stat(name), 0));
  });
});

describe("statsQueryArgs", () => {
  it("uses each CLI's own flags", () => {
    expect(statsQueryArgs("xray", 10085, "user>>>a")).toEqual(["api", "statsquery", "--server=127.0.0.1:10085", "-pattern", "user>>>a", "-reset"]);
    expect(statsQueryArgs("v2ray", 10085, "user>>>a")).toEqual(["api", "--server=127.0.0.1:10085", "StatsService.QueryStats", 'pattern: "user>>>a" reset: true']);
  });
  it("escapes the pattern for v2ctl's protobuf text format", () => {
    expect(statsQueryArgs("v2ray", 1, 'user>>>a"b\\c')[3]).toBe('pattern: "user>>>a\\"b\\\\c" reset: true');
  });
});
