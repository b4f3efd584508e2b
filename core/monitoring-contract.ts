/**
 * Wire contracts shared by the server, the agents (and the fleet simulator) and the
 * dashboard: the agent report (POST /api/agent/report) and the active probe config.
 */
import { z } from "zod";
import { tryParseStatusCodes } from "./status-codes";

export { agentReportSchema, neighbourCheckSchema, MAX_NEIGHBOURS, type AgentReport, type NeighbourCheck } from "./agent-wire";
export { formatZodError } from "./zod-format";

// ---------------------------------------------------------------------------
// Health history charts: the ranges the health page offers (bounded: the buckets are kept a week)
// ---------------------------------------------------------------------------

export const HISTORY_RANGES = ["1h", "6h", "24h", "7d"] as const;
export type HistoryRange = (typeof HISTORY_RANGES)[number];
export const DEFAULT_HISTORY_RANGE: HistoryRange = "24h";
const HOUR_MS = 3_600_000;
export const HISTORY_RANGE_MS: Readonly<Record<HistoryRange, number>> = { "1h": HOUR_MS, "6h": 6 * HOUR_MS, "24h": 24 * HOUR_MS, "7d": 7 * 24 * HOUR_MS };
/** The range's button label and the words after "over the last". */
export const HISTORY_RANGE_LABELS: Readonly<Record<HistoryRange, { short: string; long: string }>> = {
  "1h": { short: "1 h", long: "hour" },
  "6h": { short: "6 h", long: "6 hours" },
  "24h": { short: "24 h", long: "24 hours" },
  "7d": { short: "7 d", long: "7 days" },
};
export const historyRangeSchema = z.enum(HISTORY_RANGES, { error: `Range must be one of ${HISTORY_RANGES.join(", ")}` });

// ---------------------------------------------------------------------------
// Active probe config (Apigee HealthMonitor + Azure custom probe)
// ---------------------------------------------------------------------------

export const PROBE_PROTOCOLS = ["tcp", "http", "https"] as const;
export const PROBE_METHODS = ["GET", "HEAD", "POST", "PUT", "OPTIONS"] as const;
export type ProbeProtocol = (typeof PROBE_PROTOCOLS)[number];
export type ProbeMethod = (typeof PROBE_METHODS)[number];

export const MAX_BODY_CONTAINS = 4090;
export const MAX_PAYLOAD = 64 * 1024;
/** Smallest probe interval accepted; RECOMMENDED_MIN_PROBE_INTERVAL_S is what the UI suggests. */
export const MIN_PROBE_INTERVAL_S = 1;
export const RECOMMENDED_MIN_PROBE_INTERVAL_S = 5;

/** RFC 9110 token. */
const HEADER_NAME_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** No CR, LF or NUL (header injection). */
const HEADER_VALUE_RE = /^[^\r\n\0]*$/;
/** Headers the prober computes itself; `host` goes in hostHeader. */
const RESERVED_HEADERS = new Set(["host", "content-length", "transfer-encoding", "connection"]);

/**
 * Valid tokens, but keys no object of ours may have: superjson refuses to send them, so a
 * config holding one made every read of it a 500 (found by the fuzz suite).
 */
const PROTOTYPE_KEYS = new Set(["__proto__", "constructor", "prototype"]);
const notPrototypeKey = (n: string) => !PROTOTYPE_KEYS.has(n.toLowerCase());
const PROTOTYPE_KEY_ERROR = "__proto__, constructor and prototype are not header names";

const headerName = z
  .string()
  .min(1)
  .max(256)
  .regex(HEADER_NAME_RE, { error: "header names may only contain letters, digits and !#$%&'*+-.^_`|~" })
  .refine(notPrototypeKey, { error: PROTOTYPE_KEY_ERROR })
  .refine((n) => !RESERVED_HEADERS.has(n.toLowerCase()), {
    error: "Host, Content-Length, Transfer-Encoding and Connection are set by the prober (use hostHeader for Host)",
  });
const headerValue = z.string().max(8192).regex(HEADER_VALUE_RE, { error: "header values must not contain line breaks" });
const headerRecord = z
  .record(headerName, headerValue)
  .refine((r) => Object.keys(r).length <= 50, { error: "at most 50 headers" });
/** Header match names: any valid token (matching Content-Length etc. is legitimate). */
const matchHeaderName = z
  .string()
  .min(1)
  .max(256)
  .regex(HEADER_NAME_RE, { error: "header names may only contain letters, digits and !#$%&'*+-.^_`|~" })
  .refine(notPrototypeKey, { error: PROTOTYPE_KEY_ERROR });
const headerMatchRecord = z
  .record(matchHeaderName, headerValue)
  .refine((r) => Object.keys(r).length <= 50, { error: "at most 50 headers" });

/**
 * A whole number in [min, max] whose every error names the field in words the health page
 * can show as is ("Interval must be a whole number of seconds between 1 and 3600"), instead
 * of zod's "Too small: expected number to be >=1".
 */
function boundedInt(label: string, min: number, max: number, unit = "") {
  const what = `${label} must be a whole number${unit ? ` of ${unit}` : ""} between ${min} and ${max}`;
  return z.int({ error: what }).min(min, { error: what }).max(max, { error: what });
}

const fields = {
  protocol: z.enum(PROBE_PROTOCOLS, { error: `Protocol must be one of ${PROBE_PROTOCOLS.join(", ")}` }),
  port: boundedInt("Port", 1, 65535),
  method: z.enum(PROBE_METHODS, { error: `Method must be one of ${PROBE_METHODS.join(", ")}` }),
  path: z
    .string({ error: "Path must be text" })
    .max(2048, { error: "Path must be at most 2048 characters" })
    .regex(/^\//, { error: "Path must start with /" })
    .regex(/^[^\s\0]*$/, { error: "Path must not contain spaces or control characters" }),
  hostHeader: z
    .string({ error: "Host header must be text" })
    .min(1, { error: "Host header must not be empty" })
    .max(255, { error: "Host header must be at most 255 characters" })
    .regex(/^[A-Za-z0-9.\-_:[\]]+$/, { error: "Host header must be a host name, optionally with :port" }),
  headers: headerRecord,
  payload: z.string({ error: "Payload must be text" }).max(MAX_PAYLOAD, { error: `Payload must be at most ${MAX_PAYLOAD} characters` }),
  // 1 s minimum: a TCP connect per second per server is cheap, and labs, demos and tests
  // need fast verdicts; the UI recommends ≥ 5 s (Azure's minimum) for production.
  intervalS: boundedInt("Interval", MIN_PROBE_INTERVAL_S, 3600, "seconds"),
  timeoutS: boundedInt("Timeout", 1, 3600, "seconds"),
  unhealthyThreshold: boundedInt("Unhealthy threshold", 1, 100, "failures"),
  healthyThreshold: boundedInt("Healthy threshold", 1, 100, "successes"),
  statusCodes: z.string({ error: "Status codes must be text, e.g. 200-399" }).superRefine((s, ctx) => {
    const r = tryParseStatusCodes(s);
    if (!r.ok) ctx.addIssue({ code: "custom", message: `Status codes: ${r.error}` });
  }),
  headerMatch: headerMatchRecord,
  bodyContains: z
    .string({ error: "Body must contain: must be text" })
    .min(1, { error: "Body must contain: enter some text or leave it empty" })
    .max(MAX_BODY_CONTAINS, { error: `Body must contain: at most ${MAX_BODY_CONTAINS} characters` }),
  enabled: z.boolean({ error: "Probes on/off must be true or false" }),
};

export const PROBE_DEFAULTS = {
  protocol: "tcp",
  method: "GET",
  path: "/",
  headers: {},
  intervalS: 30,
  timeoutS: 30,
  unhealthyThreshold: 3,
  healthyThreshold: 1,
  statusCodes: "200-399",
  enabled: true,
} as const satisfies Record<string, unknown>;

/**
 * The effective probe config. HTTP-only fields (method, path, hostHeader, headers, payload,
 * statusCodes, headerMatch, bodyContains) are ignored for protocol "tcp".
 * `port` absent = probe the inbound's port. timeoutS may exceed intervalS: probes of one
 * target never overlap, the next one simply starts when the previous one ends.
 */
export const probeConfigSchema = z
  .object({
    protocol: fields.protocol.default(PROBE_DEFAULTS.protocol),
    port: fields.port.optional(),
    method: fields.method.default(PROBE_DEFAULTS.method),
    path: fields.path.default(PROBE_DEFAULTS.path),
    hostHeader: fields.hostHeader.optional(),
    headers: fields.headers.default({}),
    payload: fields.payload.optional(),
    intervalS: fields.intervalS.default(PROBE_DEFAULTS.intervalS),
    timeoutS: fields.timeoutS.default(PROBE_DEFAULTS.timeoutS),
    unhealthyThreshold: fields.unhealthyThreshold.default(PROBE_DEFAULTS.unhealthyThreshold),
    healthyThreshold: fields.healthyThreshold.default(PROBE_DEFAULTS.healthyThreshold),
    statusCodes: fields.statusCodes.default(PROBE_DEFAULTS.statusCodes),
    headerMatch: fields.headerMatch.optional(),
    bodyContains: fields.bodyContains.optional(),
    enabled: fields.enabled.default(PROBE_DEFAULTS.enabled),
  })
  .strict();

/** Per-server override: every field optional; an absent field inherits the cluster's. */
export const probeOverrideSchema = z
  .object({
    protocol: fields.protocol.optional(),
    port: fields.port.optional(),
    method: fields.method.optional(),
    path: fields.path.optional(),
    hostHeader: fields.hostHeader.optional(),
    headers: fields.headers.optional(),
    payload: fields.payload.optional(),
    intervalS: fields.intervalS.optional(),
    timeoutS: fields.timeoutS.optional(),
    unhealthyThreshold: fields.unhealthyThreshold.optional(),
    healthyThreshold: fields.healthyThreshold.optional(),
    statusCodes: fields.statusCodes.optional(),
    headerMatch: fields.headerMatch.optional(),
    bodyContains: fields.bodyContains.optional(),
    enabled: fields.enabled.optional(),
  })
  .strict();

export type ProbeConfig = z.output<typeof probeConfigSchema>;
export type ProbeConfigInput = z.input<typeof probeConfigSchema>;
export type ProbeOverride = z.output<typeof probeOverrideSchema>;

/** The defaults as a complete, parsed config. */
export const DEFAULT_PROBE_CONFIG: ProbeConfig = probeConfigSchema.parse({});

/** The cluster config with the override's defined fields on top (not yet validated). */
function overlay(clusterCfg: unknown, override: unknown): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...((clusterCfg ?? {}) as Record<string, unknown>) };
  if (override) {
    for (const [k, v] of Object.entries(override as Record<string, unknown>)) {
      if (v !== undefined) merged[k] = v;
    }
  }
  return merged;
}

/**
 * Effective config for one server: the cluster config with the override's defined fields
 * on top. Record fields (headers, headerMatch) are replaced as a whole, not merged, so an
 * override can remove a cluster header. `undefined`/missing = inherit. The result is
 * validated (throws a ZodError on an invalid combination, e.g. a bad stored value).
 */
export function mergeProbeConfig(clusterCfg: ProbeConfigInput | null | undefined, override?: ProbeOverride | null): ProbeConfig {
  return probeConfigSchema.parse(overlay(clusterCfg, override));
}

/** The same merge, for checking an override before saving it: says what is wrong instead of throwing. */
export function safeMergeProbeConfig(clusterCfg: ProbeConfigInput | null | undefined, override: ProbeOverride | null | undefined) {
  return probeConfigSchema.safeParse(overlay(clusterCfg, override));
}

/**
 * The config the prober uses for stored values: a bad override falls back to the cluster's
 * config, a bad cluster config to the defaults. Never throws.
 */
export function effectiveProbeConfig(clusterCfg: unknown, override: unknown): ProbeConfig {
  const merged = probeConfigSchema.safeParse(overlay(clusterCfg, override));
  if (merged.success) return merged.data;
  const cluster = probeConfigSchema.safeParse(clusterCfg ?? {});
  return cluster.success ? cluster.data : DEFAULT_PROBE_CONFIG;
}
