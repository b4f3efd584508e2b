/**
 * A PostgreSQL array literal, passed as one text parameter and cast in SQL
 * (`unnest(${pgArray(ids)}::uuid[])`, `= any(${pgArray(ids)}::uuid[])`): numbers, uuids,
 * booleans; null → NULL; strings quoted. One parameter instead of one per value: on PGlite a
 * list of parameters costs several times as much, and the cast still refuses a bad value.
 */
export function pgArray(values: ReadonlyArray<string | number | boolean | null>): string {
  return `{${values.map((v) => (v === null ? "NULL" : typeof v === "string" ? `"${v.replace(/["\\]/g, "\\$&")}"` : String(v))).join(",")}}`;
}
