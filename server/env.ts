/**
 * Configuration from the environment, validated once. A bad value stops start-up with one
 * line that says what to fix (see ConfigError), never a stack trace.
 */
import { z } from "zod";

export class ConfigError extends Error {
  override name = "ConfigError";
}

const emptyAsUnset = (v: unknown) => (v === "" ? undefined : v);

/** An integer setting in [min, max], `def` when unset or empty; every refusal says `message`. */
const integerSetting = (min: number, max: number, def: number, message: string) =>
  z.preprocess(emptyAsUnset, z.coerce.number({ error: message }).int(message).min(min, message).max(max, message).default(def));

const boolish = z
  .enum(["0", "1", "true", "false", "yes", "no", ""])
  .transform((v) => v === "1" || v === "true" || v === "yes");

const envSchema = z
  .object({
    NODE_ENV: z.enum(["development", "production", "test"]).default("production"),
    PORT: z.coerce.number({ error: "must be a port number (1–65535)" }).int("must be a port number (1–65535)").min(0, "must be a port number (1–65535)").max(65535, "must be a port number (1–65535)").default(3000),
    HOST: z.string().min(1).default("0.0.0.0"),
    DATA_DIR: z.string().min(1).default("./data"),
    DATABASE_URL: z
      .string()
      .optional()
      .transform((v) => (v === "" ? undefined : v))
      .refine((v) => v === undefined || isPostgresUrl(v), {
        message: "must look like postgres://user:password@host:5432/database",
      }),
    /**
     * PostgreSQL: connections in this instance's pool (its health ping has one more). Every
     * instance holds up to this many: together they must stay under PostgreSQL's
     * max_connections (100 by default).
     */
    DATABASE_POOL_SIZE: integerSetting(1, 200, 10, "must be an integer number of connections in 1–200"),
    SESSION_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
    ADMIN_USERNAME: z.preprocess(emptyAsUnset, z.string().trim().min(1).max(64).optional()),
    ADMIN_PASSWORD: z.preprocess(emptyAsUnset, z.string().min(8, "must be at least 8 characters").optional()),
    ROUTEBOARD_DEMO: boolish.default(true),
    /**
     * Mounts the tooling router (synthetic clusters, simulated fleets that rewrite a whole
     * cluster's addresses, ports and agent tokens). Tests, bench, demo and fleet set it;
     * production never should.
     */
    ROUTEBOARD_DEVTOOLS: boolish.default(false),
    LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
    PUBLIC_URL: z.url().optional(),
    /**
     * How many reverse proxies stand in front of the app (0 = none: the socket is the client).
     * Only with 1 or more are X-Forwarded-For/-Proto/-Host believed; see server/http/client.ts.
     */
    TRUST_PROXY: z.preprocess(
      (v) => (v === "" || v === "false" || v === "no" ? "0" : v === "true" || v === "yes" ? "1" : v),
      z.coerce.number({ error: "must be the number of proxies in front of the app (0–10)" }).int("must be the number of proxies in front of the app (0–10)").min(0, "must be the number of proxies in front of the app (0–10)").max(10, "must be the number of proxies in front of the app (0–10)").default(0),
    ),
    /** How often statuses are recomputed from stored results (no-data, mesh vote). */
    ROUTEBOARD_SWEEP_MS: integerSetting(100, 60_000, 2000, "must be an integer number of milliseconds in 100–60000"),
    /** Base URL of the Telegram Bot API that Telegram alert targets post to (tests point it at a local receiver). */
    ROUTEBOARD_TELEGRAM_API_URL: z.preprocess(
      emptyAsUnset,
      z
        .url({ error: "must be an http(s) URL such as https://api.telegram.org" })
        .refine((v) => /^https?:\/\//i.test(v), { message: "must be an http(s) URL such as https://api.telegram.org" })
        .default("https://api.telegram.org"),
    ),
    /**
     * Lets webhook alert targets be loopback, private, link-local, CGNAT or ULA addresses
     * (server/alerts/address-guard.ts). Labs and tests only: off, a webhook URL cannot make
     * the server call itself or its private network.
     */
    ROUTEBOARD_ALERTS_ALLOW_PRIVATE: boolish.default(false),
    /**
     * How far the JavaScript heap may grow past what a full garbage collection left alive
     * before the next one: 100 lets it reach twice the live set. V8's own rule (0) lets a
     * server's heap reach about four times it: at a million subscribers the panel held about
     * 650 MB alive and 2.3–2.6 GB resident, nearly all of it garbage awaiting collection.
     */
    ROUTEBOARD_HEAP_GROWTH_PERCENT: integerSetting(0, 400, 100, "must be an integer percent in 0–400 (0: V8's own rule)"),
    /** How often an instance without the prober lock tries to take it (several instances). */
    ROUTEBOARD_LEADER_RETRY_MS: z.coerce.number({ error: "must be milliseconds (100–60000)" }).int().min(100, "must be milliseconds (100–60000)").max(60_000, "must be milliseconds (100–60000)").default(5000),
  })
  .refine((e) => (e.ADMIN_USERNAME === undefined) === (e.ADMIN_PASSWORD === undefined), {
    message: "ADMIN_USERNAME and ADMIN_PASSWORD must be set together",
    path: ["ADMIN_PASSWORD"],
  });

export type Env = z.infer<typeof envSchema>;

function isPostgresUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === "postgres:" || u.protocol === "postgresql:") && u.hostname.length > 0;
  } catch {
    return false;
  }
}

/** The V8 flag ROUTEBOARD_HEAP_GROWTH_PERCENT stands for (main.ts sets it at start), or null for V8's own rule. */
export { heapGrowthFlag } from "@/core/heap-growth";

export function parseEnv(source: Record<string, string | undefined>): Env {
  const result = envSchema.safeParse(source);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const name = issue.path.join(".") || "environment";
    throw new ConfigError(`Configuration error: ${name} ${issue.message.replace(/^Invalid option: expected one of /, "must be one of ")}`);
  }
  return result.data;
}

let cached: Env | undefined;
/** The validated environment of this process (parsed on first use). */
export function env(): Env {
  cached ??= parseEnv(process.env);
  return cached;
}
