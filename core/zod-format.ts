/**
 * One-line, field-naming descriptions of zod errors, shared by the panel (HTTP 400 bodies,
 * tRPC errors) and the agent (config and flag errors). Browser-safe: no Node imports.
 */
function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else out += out === "" ? String(seg) : `.${String(seg)}`;
  }
  return out;
}

type LooseIssue = {
  code?: string;
  path?: readonly PropertyKey[];
  message?: string;
  expected?: unknown;
  origin?: string;
  minimum?: number | bigint;
  maximum?: number | bigint;
  inclusive?: boolean;
  format?: string;
  keys?: readonly string[];
  values?: readonly unknown[];
  received?: unknown;
  issues?: readonly LooseIssue[];
};

function describeIssue(issue: LooseIssue): string {
  switch (issue.code) {
    case "invalid_type": {
      const exp = issue.expected === "int" ? "integer" : String(issue.expected);
      if (issue.received === "Infinity" || issue.received === "NaN") return `expected finite ${exp}`;
      return typeof issue.received === "string" ? `expected ${exp}, received ${issue.received}` : `expected ${exp}`;
    }
    case "too_small": {
      const min = Number(issue.minimum);
      if (issue.origin === "number" || issue.origin === "int" || issue.origin === "bigint") {
        return `expected number ${issue.inclusive === false ? ">" : "≥"} ${min}`;
      }
      if (issue.origin === "string") return `expected at least ${min} character${min === 1 ? "" : "s"}`;
      if (issue.origin === "array" || issue.origin === "set") return `expected at least ${min} item${min === 1 ? "" : "s"}`;
      return issue.message ?? "too small";
    }
    case "too_big": {
      const max = Number(issue.maximum);
      if (issue.origin === "number" || issue.origin === "int" || issue.origin === "bigint") {
        return `expected number ${issue.inclusive === false ? "<" : "≤"} ${max}`;
      }
      if (issue.origin === "string") return `expected at most ${max} character${max === 1 ? "" : "s"}`;
      if (issue.origin === "array" || issue.origin === "set") return `expected at most ${max} item${max === 1 ? "" : "s"}`;
      return issue.message ?? "too big";
    }
    case "invalid_format":
      if (issue.format === "uuid" || issue.format === "guid") return "expected a UUID";
      if (issue.format === "datetime") return "expected an ISO 8601 date-time";
      return issue.message ?? `invalid ${issue.format ?? "format"}`;
    case "invalid_value":
      if (issue.values && issue.values.length > 0) {
        return `expected one of ${issue.values.map((v) => String(v)).join(", ")}`;
      }
      return issue.message ?? "invalid value";
    case "invalid_key": {
      const inner = issue.issues?.[0];
      return `invalid key: ${inner ? describeIssue(inner) : (issue.message ?? "invalid")}`;
    }
    case "not_multiple_of":
      return "expected integer";
    default:
      return issue.message ?? "invalid";
  }
}

/**
 * One-line human description of the first problem in a zod error, naming the field path:
 * "usersOnline: expected number ≥ 0", "neighbours[2].serverId: expected a UUID",
 * "extra: unknown field". Accepts anything; non-zod errors yield their message.
 */
export function formatZodError(err: unknown): string {
  const issues = (err as { issues?: LooseIssue[] } | null)?.issues;
  const first = Array.isArray(issues) ? issues[0] : undefined;
  if (!first) return err instanceof Error ? err.message : "invalid input";
  const path = first.path ?? [];
  if (first.code === "unrecognized_keys" && first.keys && first.keys.length > 0) {
    const key = first.keys[0] ?? "";
    const full = formatPath([...path, key]);
    return `${full}: unknown field`;
  }
  const where = path.length > 0 ? formatPath(path) : "(root)";
  return `${where}: ${describeIssue(first)}`;
}

