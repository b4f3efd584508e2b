/**
 * Masking of secret values shown to people (issue 11, finding 9). Probe request headers
 * often carry credentials (`Authorization: Bearer …`, cookies, API keys): viewers see the
 * header names with masked values, and the audit log never stores the values at all.
 * One place for the rule, used by the monitoring router, recordAudit and the audit reader.
 */

/** What a masked value looks like (the dashboard shows it as-is). */
export const MASKED = "••••••";

/** Names whose string values are credentials wherever they appear (headers, audit fields). */
const SECRET_NAME_RE = /token|secret|key|auth|password|passwd|cookie|credential|session/i;

export function isSecretName(name: string): boolean {
  return SECRET_NAME_RE.test(name);
}

/** Every value of a header record masked; names kept so people see what is sent. */
export function maskHeaderValues(headers: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.keys(headers).map((k) => [k, MASKED]));
}

/**
 * A probe config or override as a viewer may see it: request header values masked (any of
 * them may be a credential: masking all is the only rule that cannot miss one).
 */
export function maskProbeSecrets<T extends { headers?: Record<string, string> } | null | undefined>(config: T): T {
  if (!config || !config.headers) return config;
  return { ...config, headers: maskHeaderValues(config.headers) };
}

/**
 * What an operator of this role is shown of a probe config or override: admins and owners
 * the real values (the editor round-trips them), viewers masked ones (they cannot save, so
 * a masked value can never be written back).
 */
export function probeConfigAsSeenBy<T extends { headers?: Record<string, string> } | null | undefined>(role: "owner" | "admin" | "viewer", config: T): T {
  return role === "viewer" ? maskProbeSecrets(config) : config;
}

/** Keys whose string values are URLs (a webhook's `url`): only scheme and host are kept in the audit log. */
const URL_NAME_RE = /url$/i;

/**
 * A URL as the audit log keeps it (issue 21, point 10): scheme and host (with port), the
 * rest masked. Webhook URLs carry their secret in the path or query (Slack's
 * /services/T…/B…/<secret>, tokens in ?key=), and a user:password@ part is a credential too.
 * Something that is not a URL is masked whole.
 */
export function maskUrl(value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return MASKED;
  }
  if (u.host === "") return MASKED;
  const hidden = u.username !== "" || u.password !== "" || (u.pathname !== "/" && u.pathname !== "") || u.search !== "" || u.hash !== "";
  return `${u.protocol}//${u.host}/${hidden ? MASKED : ""}`;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Date);

/**
 * An audit before/after with secrets masked, recursively: all values of any `headers`
 * record (probe configs and overrides), string values of secret-looking keys, and the path
 * and query of URL-valued keys (maskUrl). Applied
 * when recording, so the database never holds them, and again when reading (older rows).
 */
export function redactForAudit(value: unknown, depth = 0): unknown {
  if (depth > 20) return value;
  if (Array.isArray(value)) return value.map((v) => redactForAudit(v, depth + 1));
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === "headers" && isRecord(v)) out[k] = maskHeaderValues(v as Record<string, string>);
    else if (typeof v === "string" && isSecretName(k)) out[k] = MASKED;
    else if (typeof v === "string" && URL_NAME_RE.test(k)) out[k] = maskUrl(v);
    else out[k] = redactForAudit(v, depth + 1);
  }
  return out;
}
