/**
 * Scenario format (../shared/scenarios/README.md), parsed with zod strict objects so that an
 * unknown, missing or mistyped field is an error naming its path, never a silent default.
 * Optional fields: route.hysteresis, servers[].outages, servers[].coefficient, probeDetectS,
 * loadIntervalS.
 */
import { z } from "zod";
import { ALGORITHMS } from "@/core/format";
import { LOAD_INTERVAL_S } from "@/core/heartbeat";

const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .number({ error: (iss) => (iss.input === undefined ? "required field is missing" : "expected an integer number") })
    .int({ error: "expected an integer number" })
    .min(min, { error: `must be ≥ ${min}` })
    .max(max, { error: `must be ≤ ${max}` });

const num = (opts: { positive?: boolean; min?: number }) => {
  let s = z.number({ error: (iss) => (iss.input === undefined ? "required field is missing" : "expected a number") });
  if (opts.positive) s = s.positive({ error: "must be > 0" });
  if (opts.min !== undefined) s = s.min(opts.min, { error: `must be ≥ ${opts.min}` });
  return s.refine(Number.isFinite, { error: "must be finite" });
};

const str = () =>
  z
    .string({ error: (iss) => (iss.input === undefined ? "required field is missing" : "expected a string") })
    .min(1, { error: "must not be empty" });

const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, {
    error: (iss) =>
      iss.input === undefined ? "required field is missing" : `expected ${values.map((v) => JSON.stringify(v)).join(" | ")}`,
  });

const obj = <S extends z.ZodRawShape>(shape: S) =>
  z.strictObject(shape, {
    error: (iss) => (iss.input === undefined ? "required field is missing" : "expected an object"),
  });

const MAX_DURATION_S = 30 * 86400;

const Outage = obj({ fromS: int(0), toS: int(0) }).refine((o) => o.toS > o.fromS, {
  error: "must be greater than fromS",
  path: ["toS"],
});

const Server = obj({
  id: str(),
  capacityMbps: num({ positive: true }),
  coefficient: num({ positive: true }).optional(),
  outages: z.array(Outage, { error: "expected an array" }).optional(),
});

export const ScenarioSchema = obj({
  name: str(),
  seed: int(0, 0xffffffff),
  durationS: int(1, MAX_DURATION_S),
  reportIntervalS: int(1, MAX_DURATION_S),
  loadIntervalS: int(1, MAX_DURATION_S).optional(),
  probeDetectS: int(0, MAX_DURATION_S).optional(),
  route: obj({
    algorithm: oneOf(ALGORITHMS),
    hysteresis: num({ min: 0 }).optional(),
  }),
  servers: z.array(Server, { error: "expected an array" }).min(1, { error: "needs at least one server" }).max(1000),
  users: obj({
    count: int(1, 1_000_000),
    arrival: obj({ kind: oneOf(["poisson", "burst"]), overS: int(1, MAX_DURATION_S) }),
    refreshS: int(1, MAX_DURATION_S),
    sessions: obj({ meanOnS: num({ positive: true }), meanOffS: num({ positive: true }) }),
    demandMbps: obj({ kind: oneOf(["lognormal"]), median: num({ positive: true }), sigma: num({ min: 0 }) }),
  }),
}).superRefine((s, ctx) => {
  const seen = new Set<string>();
  s.servers.forEach((srv, i) => {
    if (seen.has(srv.id)) ctx.addIssue({ code: "custom", message: `duplicate server id "${srv.id}"`, path: ["servers", i, "id"] });
    seen.add(srv.id);
  });
});

export type Scenario = z.infer<typeof ScenarioSchema>;

/** Default detection delay when probeDetectS is absent: 3 failed probes × 30 s (DESIGN §3). */
export const DEFAULT_PROBE_DETECT_S = 90;

/**
 * How often the balancer sees each server's load when loadIntervalS is absent: agents measure
 * it every LOAD_INTERVAL_S and send it in their next heartbeat. loadIntervalS equal to
 * reportIntervalS plays agents that send no load in heartbeats (load with reports only).
 */
export const DEFAULT_LOAD_INTERVAL_S = LOAD_INTERVAL_S;

export class ScenarioError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join("\n"));
    this.name = "ScenarioError";
  }
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else out += (out ? "." : "") + String(p);
  }
  return out;
}

function formatIssues(issues: readonly z.core.$ZodIssue[]): string[] {
  const out: string[] = [];
  for (const iss of issues) {
    const base = formatPath(iss.path);
    if (iss.code === "unrecognized_keys") {
      for (const k of iss.keys) out.push(`${base ? `${base}.` : ""}${k}: unknown field`);
    } else {
      out.push(`${base || "(root)"}: ${iss.message}`);
    }
  }
  return out;
}

/** Validate an already-parsed JSON value. Throws ScenarioError naming each bad field. */
export function parseScenario(value: unknown): Scenario {
  const r = ScenarioSchema.safeParse(value);
  if (!r.success) throw new ScenarioError(formatIssues(r.error.issues));
  return r.data;
}

/** Parse scenario JSON text. Throws ScenarioError. */
export function parseScenarioText(text: string): Scenario {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ScenarioError([`invalid JSON: ${(e as Error).message}`]);
  }
  return parseScenario(value);
}
