import { describe, expect, it } from "vitest";
import { mergeTraffic, parseV2ctlStats, parseXrayStats } from "./stats";

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
