/**
 * Status code lists and ranges for the active health probe's success match,
 * e.g. "200-399" or "200,204,300-308". Pure, no I/O.
 *
 * Grammar: entries separated by commas, each entry a code (`204`) or an
 * inclusive range (`200-399`). Whitespace around entries and dashes is ignored.
 * Codes must lie in 100..599.
 */

export type StatusCodeRange = readonly [lo: number, hi: number];

export const MIN_STATUS_CODE = 100;
export const MAX_STATUS_CODE = 599;
const MAX_SPEC_LENGTH = 256;

export class StatusCodeSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StatusCodeSpecError";
  }
}

export type StatusCodeParseResult =
  | { ok: true; ranges: StatusCodeRange[] }
  | { ok: false; error: string };

function parseCode(token: string, entry: string): number | string {
  if (!/^\d{1,3}$/.test(token)) {
    return `"${entry}" is not a status code or range (expected e.g. 200, 204 or 200-399)`;
  }
  const code = Number(token);
  if (code < MIN_STATUS_CODE || code > MAX_STATUS_CODE) {
    return `status code ${code} is out of range ${MIN_STATUS_CODE}-${MAX_STATUS_CODE}`;
  }
  return code;
}

/** Parses a status code spec; never throws. Ranges are returned sorted and merged. */
export function tryParseStatusCodes(spec: string): StatusCodeParseResult {
  if (typeof spec !== "string") return { ok: false, error: "status codes must be a string" };
  if (spec.length > MAX_SPEC_LENGTH) {
    return { ok: false, error: `status codes must be at most ${MAX_SPEC_LENGTH} characters` };
  }
  const trimmed = spec.trim();
  if (trimmed === "") return { ok: false, error: "status codes must not be empty (e.g. 200-399)" };
  const ranges: [number, number][] = [];
  for (const rawEntry of trimmed.split(",")) {
    const entry = rawEntry.trim();
    if (entry === "") {
      return { ok: false, error: `empty entry in "${trimmed}" (remove the extra comma)` };
    }
    const m = /^(\S+?)\s*-\s*(\S+)$/.exec(entry);
    if (m) {
      const lo = parseCode(m[1] ?? "", entry);
      if (typeof lo === "string") return { ok: false, error: lo };
      const hi = parseCode(m[2] ?? "", entry);
      if (typeof hi === "string") return { ok: false, error: hi };
      if (lo > hi) {
        return { ok: false, error: `range ${lo}-${hi} is reversed (write ${hi}-${lo})` };
      }
      ranges.push([lo, hi]);
    } else {
      const code = parseCode(entry, entry);
      if (typeof code === "string") return { ok: false, error: code };
      ranges.push([code, code]);
    }
  }
  ranges.sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const r of ranges) {
    const last = merged[merged.length - 1];
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else merged.push([r[0], r[1]]);
  }
  return { ok: true, ranges: merged };
}

/** Parses a status code spec; throws StatusCodeSpecError with a human message on bad input. */
export function parseStatusCodes(spec: string): StatusCodeRange[] {
  const r = tryParseStatusCodes(spec);
  if (!r.ok) throw new StatusCodeSpecError(r.error);
  return r.ranges;
}

/** Whether `code` is matched by the spec (string, parsed on each call) or pre-parsed ranges. */
export function matchesStatusCode(spec: string | readonly StatusCodeRange[], code: number): boolean {
  const ranges = typeof spec === "string" ? parseStatusCodes(spec) : spec;
  return ranges.some(([lo, hi]) => code >= lo && code <= hi);
}

/** Canonical text form of parsed ranges, e.g. "200,204,300-308". */
export function formatStatusCodes(ranges: readonly StatusCodeRange[]): string {
  return ranges.map(([lo, hi]) => (lo === hi ? String(lo) : `${lo}-${hi}`)).join(",");
}
