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
  const stack: Array<{ v: unknown; path: string; depth: number }> = [{ v: value, path: "", depth: 0 }];
  const join = (path: string, key: string | number) => (path ? `${path}.${key}` : String(key));
  while (stack.length > 0) {
    const { v, path, depth } = stack.pop()!;
    if (typeof v === "string") {
      const reason = badTextReason(v);
      if (reason) return { path, reason };
      continue;
    }
    if (v === null || typeof v !== "object" || depth >= MAX_DEPTH) continue;
    const children: Array<[string, unknown]> = [];
    if (Array.isArray(v)) v.forEach((x, i) => children.push([join(path, i), x]));
    else if (v instanceof Map) {
      for (const [k, x] of v) {
        children.push([path, k]);
        children.push([join(path, typeof k === "string" && !badTextReason(k) ? k : "(key)"), x]);
      }
    }    else if (v instanceof Set) [...v].forEach((x, i) => children.push([join(path, i), x]));
    else if (!(v instanceof Date)) {
      for (const k of Object.keys(v)) {
        const reason = badTextReason(k);
        // A key is not a field name anyone can read back: the path stops at its object.
        if (reason) return { path, reason: `a key ${reason}` };
        children.push([join(path, k), (v as Record<string, unknown>)[k]]);
      }
    }
    // Reversed, so the first field is looked at first.
    for (let i = children.length - 1; i >= 0; i--) stack.push({ v: children[i]![1], path: children[i]![0], depth: depth + 1 });
  }
  return null;
}
