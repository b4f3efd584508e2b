/**
 * Issue 21, point 12: a name made only of invisible characters (zero-width spaces, joiners,
 * U+FEFF, variation selectors, bidi marks, Hangul fillers, exotic spaces) is refused by every
 * procedure that takes a name: servers, inbounds, routes, subscribers, clusters, operators,
 * alert targets, API tokens. Procedures are enumerated from the router, so a new one that
 * takes a name is checked too.
 */
import { describe, expect, it } from "vitest";
import { devtoolsAppRouter } from "./root";

type Schema = { safeParse(v: unknown): { success: boolean; error?: { issues: Array<{ path: PropertyKey[]; message: string }> } } };
const procedures = Object.entries((devtoolsAppRouter as unknown as { _def: { procedures: Record<string, { _def: { inputs: Schema[] } }> } })._def.procedures);

const INVISIBLE_NAMES = [
  "\u200B",
  "\u200B\u200C\u200D",
  "\u2060\uFEFF",
  "\uFE0F\uFE0E",
  "\u200E\u200F\u061C",
  "\u3164",
  "\u115F\u1160\uFFA0",
  "\u2800",
  "\u00A0\u2003\u3000",
  "\u00AD\u034F",
  "\u{E0100}\u{E0061}",
];
const NAME_FIELDS = ["name", "username", "clusterName"];

describe("names made only of invisible characters", () => {
  const takingNames = procedures.flatMap(([path, p]) => {
    const schema = p._def.inputs[0];
    if (!schema) return [];
    // Which name field this input has: the one whose issue path shows up for a wrong type.
    const issues = schema.safeParse({}).error?.issues ?? [];
    const probe = schema.safeParse(Object.fromEntries(NAME_FIELDS.map((f) => [f, 42]))).error?.issues ?? [];
    const fields = NAME_FIELDS.filter((f) => probe.some((i) => i.path.join(".") === f) || issues.some((i) => i.path.join(".") === f));
    return fields.map((field) => ({ path, field, schema }));
  });

  it("are found in the procedures that take a name", () => {
    const paths = takingNames.map((t) => `${t.path}.${t.field}`);
    for (const expected of [
      "clusters.create.name",
      "clusters.rename.name",
      "servers.create.name",
      "servers.update.name",
      "inbounds.create.name",
      "inbounds.update.name",
      "routes.create.name",
      "subscribers.create.name",
      "subscribers.update.name",
      "alerts.create.name",
      "alerts.update.name",
      "operators.create.username",
      "auth.setup.username",
      "apiTokens.create.name",
    ]) {
      expect(paths).toContain(expected);
    }
  });

  it("are refused by each of them, naming the field", () => {
    for (const { path, field, schema } of takingNames) {
      for (const name of INVISIBLE_NAMES) {
        const issues = schema.safeParse({ [field]: name }).error?.issues ?? [];
        const issue = issues.find((i) => i.path.join(".") === field);
        expect(issue, `${path} ${field}=${JSON.stringify(name)}`).toBeDefined();
      }
    }
  });

  it("while names with visible characters among invisible ones still pass", () => {
    for (const { path, field, schema } of takingNames) {
      if (field === "username" || path.startsWith("apiTokens.")) continue;
      for (const name of ["Alice", "🇺🇸 USA", "👨‍👩‍👧 family", "a\u200Bb", "❤️"]) {
        const issues = schema.safeParse({ [field]: name }).error?.issues ?? [];
        expect(issues.find((i) => i.path.join(".") === field), `${path} ${field}=${JSON.stringify(name)}`).toBeUndefined();
      }
    }
  });
});
