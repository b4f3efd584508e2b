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

/**
 * The receive limit of the cores' API clients (`xray api`, v2ctl): grpc-go's default. A reply
 * over it fails in the client after the core has already reset what it matched, so that
 * traffic is lost; counters are never removed from a running core, so one query for every
 * user outgrows it past about 29,000 users who ever had traffic.
 */
export const API_RECEIVE_LIMIT_BYTES = 4 * 1024 * 1024;
/** What one query's reply may hold: a quarter of the limit, far from it even if an estimate is off. */
export const STATS_CHUNK_BYTES = 1024 * 1024;

const NAME_PREFIX = "user>>>";

/**
 * An upper bound of the bytes one user's two counters take in a QueryStats reply: per Stat, the
 * name (`user>>>EMAIL>>>traffic>>>uplink` / `downlink`, UTF-8), an int64 value (at most 10
 * bytes) and protobuf's tags and lengths (at most 6 bytes).
 */
export function userCountersBytes(email: string): number {
  const emailBytes = Buffer.byteLength(email, "utf8");
  return 2 * (NAME_PREFIX.length + emailBytes + ">>>traffic>>>".length + 16) + "uplink".length + "downlink".length;
}

/** One stats query: its substring pattern and what it covers (for logs). */
export interface StatsChunk {
  pattern: string;
  /** "every user", "emails starting with …" or "the email …". */
  covers: string;
  users: number;
}

/**
 * Splits the users whose counters the core may hold into queries that each stay under `budget`
 * bytes. The core's `pattern` is a substring match and `reset` applies to what it matched, so
 * the chunks are email prefixes: a group too big is split by its next character (a whole code
 * point), and an email that is itself the group's prefix ("ab" next to "abc…") gets the exact
 * pattern `user>>>ab>>>`, which matches no longer name. Every email given lands in exactly one
 * chunk. (An email containing ">>>" could also match another chunk's pattern; with reset the
 * second match reads what the counter gathered since the first, so sums stay exact.)
 */
export function planStatsChunks(emails: readonly string[], budget = STATS_CHUNK_BYTES): StatsChunk[] {
  const out: StatsChunk[] = [];
  const cost = emails.map(userCountersBytes);
  const split = (group: readonly number[], prefix: string) => {
    let bytes = 0;
    for (const k of group) bytes += cost[k]!;
    if (bytes <= budget) {
      out.push({ pattern: NAME_PREFIX + prefix, covers: prefix === "" ? "every user" : `emails starting with ${JSON.stringify(prefix)}`, users: group.length });
      return;
    }
    const depth = prefix.length;
    const byNext = new Map<string, number[]>();
    let endsHere = false;
    for (const k of group) {
      const e = emails[k]!;
      if (e.length === depth) {
        endsHere = true;
        continue;
      }
      const code = e.charCodeAt(depth);
      const next = code >= 0xd800 && code <= 0xdbff && depth + 1 < e.length ? e.slice(depth, depth + 2) : e[depth]!;
      const list = byNext.get(next);
      if (list) list.push(k);
      else byNext.set(next, [k]);
    }
    if (endsHere) out.push({ pattern: `${NAME_PREFIX}${prefix}>>>`, covers: `the email ${JSON.stringify(prefix)}`, users: 1 });
    for (const [next, list] of byNext) split(list, prefix + next);
  };
  if (emails.length > 0) split(emails.map((_, k) => k), "");
  return out;
}

/**
 * The command that reads (and resets) the counters whose names contain `pattern`: Xray-core's
 * `xray api statsquery` (main/commands/all/api/stats_query.go) or v2ray 4's v2ctl, which takes
 * the request in protobuf text format.
 */
export function statsQueryArgs(kind: "xray" | "v2ray", apiPort: number, pattern: string): string[] {
  const server = `--server=127.0.0.1:${apiPort}`;
  if (kind === "xray") return ["api", "statsquery", server, "-pattern", pattern, "-reset"];
  return ["api", server, "StatsService.QueryStats", `pattern: ${protoTextString(pattern)} reset: true`];
}

/** A string literal of protobuf text format. */
function protoTextString(s: string): string {
  return `"${s.replace(/[\\"\n\r]/g, (c) => ({ "\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r" })[c]!)}"`;
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
