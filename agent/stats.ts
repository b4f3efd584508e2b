/**
 * Per-user traffic counters from the core's StatsService. The core names them
 * `user>>>EMAIL>>>traffic>>>uplink|downlink`; uplink is what the user sent (the server's rx),
 * downlink what it received (tx). Read with reset, so each reading is the traffic since the
 * previous one.
 */
export interface UserBytes {
  up: number;
  down: number;
}

export type TrafficByEmail = Map<string, UserBytes>;

const COUNTER = /^user>>>(.+)>>>traffic>>>(uplink|downlink)$/;

function add(into: TrafficByEmail, name: string, value: number) {
  const m = COUNTER.exec(name);
  if (!m || !Number.isFinite(value) || value < 0) return;
  const email = m[1]!;
  const entry = into.get(email) ?? { up: 0, down: 0 };
  if (m[2] === "uplink") entry.up += value;
  else entry.down += value;
  into.set(email, entry);
}

/**
 * v2ctl prints protobuf text format, one block per counter; a zero value is left out:
 *   stat: <
 *     name: "user>>>a@b>>>traffic>>>uplink"
 *     value: 79
 *   >
 */
export function parseV2ctlStats(text: string): TrafficByEmail {
  const out: TrafficByEmail = new Map();
  // A block ends at the ">" followed by the next block or the end; names contain ">>>".
  for (const m of text.matchAll(/stat:\s*<([\s\S]*?)>\s*(?=stat:|$)/g)) {
    const body = m[1] ?? "";
    const name = /name:\s*"((?:[^"\\]|\\.)*)"/.exec(body)?.[1];
    if (name === undefined) continue;
    const value = Number(/value:\s*(\d+)/.exec(body)?.[1] ?? 0);
    add(out, unescapeText(name), value);
  }
  return out;
}

function unescapeText(s: string): string {
  return s.replace(/\\(["\\])/g, "$1");
}

/**
 * `xray api statsquery` prints JSON: {"stat":[{"name":"…","value":123}]}. Protobuf's JSON
 * mapping may write int64 as a string and leaves zero values out, so both are accepted.
 */
export function parseXrayStats(text: string): TrafficByEmail {
  const out: TrafficByEmail = new Map();
  const trimmed = text.trim();
  if (trimmed === "") return out;
  const parsed = JSON.parse(trimmed) as { stat?: Array<{ name?: string; value?: number | string }> };
  for (const s of parsed.stat ?? []) {
    if (typeof s.name !== "string") continue;
    add(out, s.name, Number(s.value ?? 0));
  }
  return out;
}

/** Adds b into a (both maps of email → bytes). */
export function mergeTraffic(a: TrafficByEmail, b: TrafficByEmail): TrafficByEmail {
  for (const [email, t] of b) {
    const e = a.get(email) ?? { up: 0, down: 0 };
    e.up += t.up;
    e.down += t.down;
    a.set(email, e);
  }
  return a;
}
