/**
 * Text no field of Routeboard takes: U+0000 (PostgreSQL's text cannot hold it, and C code
 * downstream stops reading there) and lone UTF-16 surrogates (not characters at all: they
 * cannot be encoded as UTF-8, so the database driver refuses them). Both used to reach the
 * database and come back as 500s; the API and the agent report now refuse them up front,
 * naming the field (server/api/trpc.ts, server/dataplane/report-http.ts). Browser-safe.
 */

const NUL = "\u0000";
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why this string is refused, or null when it is fine. */
export function badTextReason(s: string): string | null {
  if (s.includes(NUL)) return "contains a NUL byte (U+0000)";
  if (LONE_SURROGATE.test(s)) return "contains a lone surrogate (not a Unicode character)";
  return null;
}

export interface BadText {
  /** Dotted path of the field ("" = the input itself). */
  path: string;
  reason: string;
}

/** Values further down than this are not walked (schemas refuse such nesting anyway). */
const MAX_DEPTH = 64;

/**
 * The first string in `value` (values, and object keys) that badTextReason refuses, with its
 * path; null if none. Walks plain objects, arrays, Maps and Sets, iteratively (no recursion
 * limit to hit on deeply nested hostile input).
 */
export function findBadText(value: unknown): BadText | null {
  // Each pending value keeps its parent and key, and a path is spelt only for the value
  // refused: a report of a hundred users spelt "users.57.email" and the like for every field
  // of every user, about 120 KB of strings per report, on every report.
  const stack: Frame[] = [{ v: value, parent: null, key: null, depth: 0 }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const { v, depth } = frame;
    if (typeof v === "string") {
      const reason = badTextReason(v);
      if (reason) return { path: pathOf(frame), reason };
      continue;
    }
    if (v === null || typeof v !== "object" || depth >= MAX_DEPTH) continue;
    const child = (x: unknown, key: string | number | null): Frame => ({ v: x, parent: frame, key, depth: depth + 1 });
    // Pushed in reverse, so the first field is looked at first.
    if (Array.isArray(v)) for (let i = v.length - 1; i >= 0; i--) stack.push(child(v[i], i));
    else if (v instanceof Map) {
      const entries = [...v];
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, x] = entries[i]!;
        stack.push(child(x, typeof k === "string" && !badTextReason(k) ? k : "(key)"));
        // A key is checked as a value at the Map's own path.
        stack.push(child(k, null));
      }
    } else if (v instanceof Set) {
      const items = [...v];
      for (let i = items.length - 1; i >= 0; i--) stack.push(child(items[i], i));
    } else if (!(v instanceof Date)) {
      const keys = Object.keys(v);
      for (const k of keys) {
        const reason = badTextReason(k);
        // A key is not a field name anyone can read back: the path stops at its object.
        if (reason) return { path: pathOf(frame), reason: `a key ${reason}` };
      }
      for (let i = keys.length - 1; i >= 0; i--) stack.push(child((v as Record<string, unknown>)[keys[i]!], keys[i]!));
    }
  }
  return null;
}

interface Frame {
  v: unknown;
  parent: Frame | null;
  /** Its key in the parent; null = at the parent's own path (a Map's key). */
  key: string | number | null;
  depth: number;
}

/** The dotted path of a frame ("" = the input itself). */
function pathOf(frame: Frame): string {
  const keys: Array<string | number> = [];
  for (let f: Frame | null = frame; f; f = f.parent) if (f.key !== null) keys.push(f.key);
  return keys.reverse().join(".");
}
