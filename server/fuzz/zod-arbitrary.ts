/**
 * fast-check arbitraries derived from zod 4 schemas, for the fuzz suite: `wellFormed`
 * values that the schema should accept (best effort: custom refinements are not known
 * here, so some are refused, which the suite handles like any refusal), and `broken`
 * values built from them (wrong types, out-of-range numbers, missing and extra fields,
 * huge strings, prototype keys, NaN/Infinity as strings, deep nesting).
 * Covers the kinds the routers use; anything else falls back to JSON values.
 */
import fc from "fast-check";
import type { z } from "zod";

/** Ids of existing rows: uuid fields pick one of these most of the time. */
export interface FuzzIds {
  uuids: readonly string[];
  /** Ids that fit a field by its name (`clusterId` → clusters…); falls back to `uuids`. */
  forField?: (field: string) => readonly string[] | undefined;
}

interface Def {
  type: string;
  format?: string;
  checks?: Array<{ _zod: { def: Record<string, unknown> & { check: string } } }>;
  [k: string]: unknown;
}

const defOf = (s: unknown): Def => (s as { _zod: { def: Def } })._zod.def;

function checksOf(d: Def): Array<Record<string, unknown> & { check: string }> {
  return (d.checks ?? []).map((c) => c._zod.def);
}

const json = fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<unknown>;

/** What no string field takes (core/text-safety.ts): U+0000 and lone surrogates. */
export const BAD_TEXT = ["\u0000", "\uD800", "\uDBFF", "\uDC00", "\uDFFF"] as const;

/**
 * Every string field: now and then (1 in 16) with a NUL or a lone surrogate put somewhere in
 * an otherwise fitting value. Such a call must be refused with a 400 naming the field.
 */
function sometimesBadText(good: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const spoiled = fc.tuple(good, fc.constantFrom(...BAD_TEXT), fc.nat()).map(([s, bad, n]) => {
    const at = n % (s.length + 1);
    // Never between the halves of a surrogate pair (that would make two lone ones, still bad).
    return s.slice(0, at) + bad + s.slice(at);
  });
  return fc.oneof({ arbitrary: good, weight: 15 }, { arbitrary: spoiled, weight: 1 });
}

function stringArb(d: Def, ids: FuzzIds, field: string | undefined): fc.Arbitrary<string> {
  return sometimesBadText(fittingString(d, ids, field));
}

function fittingString(d: Def, ids: FuzzIds, field: string | undefined): fc.Arbitrary<string> {
  let min = 0;
  let max = Infinity;
  const patterns: RegExp[] = [];
  for (const c of checksOf(d)) {
    if (c.check === "min_length") min = Math.max(min, c.minimum as number);
    if (c.check === "max_length") max = Math.min(max, c.maximum as number);
    if (c.check === "length_equals") min = max = c.length as number;
    if (c.check === "string_format" && c.format === "regex") patterns.push(c.pattern as RegExp);
  }
  const format = d.format;
  if (format === "uuid" || format === "guid") {
    const fitting = (field !== undefined ? ids.forField?.(field) : undefined) ?? ids.uuids;
    return fitting.length > 0 ? fc.oneof({ arbitrary: fc.constantFrom(...fitting), weight: 4 }, { arbitrary: fc.uuid({ version: 4 }), weight: 1 }) : fc.uuid({ version: 4 });
  }
  if (format === "url") return fc.webUrl();
  if (format === "email") return fc.emailAddress();
  if (format === "datetime") return fc.date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true }).map((x) => x.toISOString());
  if (format === "date") return fc.date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true }).map((x) => x.toISOString().slice(0, 10));
  if (format === "ipv4") return fc.ipV4();
  if (format === "ipv6") return fc.ipV6();
  // Long limits (8 KB header values, 4 KB payloads) are explored by the broken inputs;
  // well-formed strings stay short so that cases stay fast.
  const cap = Math.max(min, Math.min(max, 40));
  if (patterns.length > 0) {
    // Strings of the first pattern; the others (and the length) usually hold too. No filter:
    // a value that misses one is a refused case, which the suite handles, never a stall.
    const first = new RegExp(patterns[0]!.source, patterns[0]!.flags.replace("g", ""));
    const matching = fc.stringMatching(first).map((s) => (s.length > max ? s.slice(0, max) : s.length < min ? s.padEnd(min, "a") : s));
    // Ids that are not uuids (API token ids): mostly existing ones, as for uuids.
    const known = (field !== undefined ? ids.forField?.(field) : undefined)?.filter((v) => first.test(v)) ?? [];
    return known.length > 0 ? fc.oneof({ arbitrary: fc.constantFrom(...known), weight: 4 }, { arbitrary: matching, weight: 1 }) : matching;
  }
  return fc.oneof(fc.string({ minLength: min, maxLength: cap }), fc.string({ unit: "grapheme", minLength: min, maxLength: cap }).filter((s) => s.length <= max));
}

function numberArb(d: Def): fc.Arbitrary<number> {
  let min = -1e9;
  let max = 1e9;
  let int = d.format === "safeint" || d.format === "int32" || d.format === "uint32";
  for (const c of checksOf(d)) {
    if (c.check === "greater_than") min = Math.max(min, (c.value as number) + (c.inclusive ? 0 : int ? 1 : 1e-9));
    if (c.check === "less_than") max = Math.min(max, (c.value as number) - (c.inclusive ? 0 : int ? 1 : 1e-9));
    if (c.check === "number_format") int = true;
  }
  if (int) {
    min = Math.ceil(min);
    max = Math.floor(max);
    const lo = Math.max(min, -2_147_483_648);
    const hi = Math.min(max, 2_147_483_647);
    // Small values near the lower bound are the realistic ones; bounds are the edges.
    return fc.oneof(fc.integer({ min: lo, max: Math.min(hi, lo + 20) }), fc.integer({ min: lo, max: hi }), fc.constantFrom(min, max));
  }
  return fc.oneof(fc.double({ min, max, noNaN: true, noDefaultInfinity: true }), fc.constantFrom(min, max));
}

/** An arbitrary of values `schema` should accept; `undefined` stands for "field absent". */
export function wellFormed(schema: unknown, ids: FuzzIds, depth = 0, field?: string): fc.Arbitrary<unknown> {
  if (!schema || typeof schema !== "object" || !("_zod" in schema) || depth > 12) return json;
  const d = defOf(schema);
  switch (d.type) {
    case "string":
      return stringArb(d, ids, field);
    case "number":
      return numberArb(d);
    case "int":
      return numberArb({ ...d, format: "safeint" });
    case "bigint":
      return fc.bigInt({ min: 0n, max: 1n << 40n });
    case "boolean":
      return fc.boolean();
    case "date":
      return fc.date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true });
    case "enum":
      return fc.constantFrom(...Object.values(d.entries as Record<string, string | number>));
    case "literal":
      return fc.constantFrom(...(d.values as unknown[]));
    case "null":
      return fc.constant(null);
    case "undefined":
    case "void":
      return fc.constant(undefined);
    case "array": {
      let min = 0;
      let max = 5;
      for (const c of checksOf(d)) {
        if (c.check === "min_length") min = c.minimum as number;
        if (c.check === "max_length") max = Math.min(max, c.maximum as number);
      }
      return fc.array(wellFormed(d.element, ids, depth + 1, field), { minLength: min, maxLength: Math.max(min, max) });
    }
    case "tuple":
      return fc.tuple(...(d.items as unknown[]).map((i) => wellFormed(i, ids, depth + 1)));
    case "record":
      return fc.dictionary(wellFormed(d.keyType, ids, depth + 1) as fc.Arbitrary<string>, wellFormed(d.valueType, ids, depth + 1), { maxKeys: 4 });
    case "object": {
      const shape = d.shape as Record<string, unknown>;
      const fields: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(shape)) fields[k] = wellFormed(v, ids, depth + 1, k);
      return fc.record(fields).map((o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)));
    }
    case "optional":
      return fc.oneof(fc.constant(undefined), wellFormed(d.innerType, ids, depth + 1, field));
    case "default":
    case "prefault":
      return fc.oneof(fc.constant(undefined), wellFormed(d.innerType, ids, depth + 1, field));
    case "nullable":
      return fc.oneof(fc.constant(null), wellFormed(d.innerType, ids, depth + 1, field));
    case "nonoptional":
    case "readonly":
    case "catch":
      return wellFormed(d.innerType, ids, depth + 1, field);
    case "lazy":
      return wellFormed((d.getter as () => unknown)(), ids, depth + 1);
    case "union":
      return fc.oneof(...(d.options as unknown[]).map((o) => wellFormed(o, ids, depth + 1, field)));
    case "intersection":
      return fc
        .tuple(wellFormed(d.left, ids, depth + 1, field), wellFormed(d.right, ids, depth + 1, field))
        .map(([a, b]) => (isPlainObject(a) && isPlainObject(b) ? { ...a, ...b } : b));
    case "pipe":
      // The input side is what the client sends; a transform's output is not.
      return defOf(d.in).type === "transform" ? wellFormed(d.out, ids, depth + 1, field) : wellFormed(d.in, ids, depth + 1, field);
    default:
      // transform, custom, any, unknown, …: nothing to derive from.
      return json;
  }
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Date);

/** Values no field of any schema here should accept as they are. */
export const badScalar: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, -1e308, 1e308, 2 ** 53, -(2 ** 53), "", "NaN", "Infinity", "-Infinity", "1e309", "null", "undefined", [], {}, [[[]]], "__proto__", "00000000-0000-0000-0000-000000000000", "a\u0000b", "\u0000", "x\uD800", "\uDC00y"),
  fc.string({ maxLength: 20 }),
  fc.integer({ min: 1000, max: 120_000 }).map((n) => "x".repeat(n)),
  fc.integer(),
  fc.double(),
  fc.jsonValue({ maxDepth: 3 }),
  fc.integer({ min: 50, max: 400 }).map(deepNest),
);

function deepNest(n: number): unknown {
  let v: unknown = "deep";
  for (let i = 0; i < n; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

/** Paths to every object field and array item of `v` (the places a mutation can hit). */
function paths(v: unknown, prefix: Array<string | number> = [], out: Array<Array<string | number>> = [], depth = 0): Array<Array<string | number>> {
  if (depth > 6) return out;
  const entries: Array<[string | number, unknown]> = Array.isArray(v) ? v.map((x, i) => [i, x]) : isPlainObject(v) ? Object.entries(v) : [];
  for (const [k, x] of entries) {
    out.push([...prefix, k]);
    paths(x, [...prefix, k], out, depth + 1);
  }
  return out;
}

function setAt(v: unknown, path: Array<string | number>, op: { kind: "set"; value: unknown } | { kind: "delete" } | { kind: "add"; key: string; value: unknown }): unknown {
  const clone = structuredClone(v) as Record<string | number, unknown>;
  let parent: Record<string | number, unknown> = clone;
  for (const p of path.slice(0, -1)) parent = parent[p] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (op.kind === "set") parent[last] = op.value;
  else if (op.kind === "delete") {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last];
  } else {
    const target = parent[last];
    if (isPlainObject(target)) Object.defineProperty(target, op.key, { value: op.value, enumerable: true, configurable: true, writable: true });
  }
  return clone;
}

/** A broken input: a well-formed one with one thing wrong, or something else entirely. */
export function broken(schema: unknown, ids: FuzzIds, good: fc.Arbitrary<unknown> = wellFormed(schema, ids)): fc.Arbitrary<unknown> {
  const extraKey = fc.oneof(fc.constantFrom("__proto__", "constructor", "prototype", "toString", "hasOwnProperty", ""), fc.string({ maxLength: 12 }));
  return fc.oneof(
    { arbitrary: badScalar, weight: 2 },
    {
      weight: 5,
      arbitrary: fc.tuple(good, fc.nat(), badScalar).map(([v, n, bad]) => {
        const ps = paths(v);
        return ps.length === 0 ? bad : setAt(v, ps[n % ps.length]!, { kind: "set", value: bad });
      }),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(good, fc.nat()).map(([v, n]) => {
        const ps = paths(v);
        return ps.length === 0 ? undefined : setAt(v, ps[n % ps.length]!, { kind: "delete" });
      }),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(good, extraKey, badScalar).map(([v, key, value]) => {
        if (!isPlainObject(v)) return v;
        const clone = structuredClone(v);
        Object.defineProperty(clone, key, { value, enumerable: true, configurable: true, writable: true });
        return clone;
      }),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(good, fc.nat(), extraKey).map(([v, n, key]) => {
        const ps = paths(v);
        return ps.length === 0 ? v : setAt(v, ps[n % ps.length]!, { kind: "add", key, value: { polluted: true } });
      }),
    },
  );
}

export type AnyZod = z.ZodType;
