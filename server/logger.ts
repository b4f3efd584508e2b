import pino from "pino";
import { loggableError } from "@/server/db-errors";
import { env } from "@/server/env";

const KEY = Symbol.for("routeboard.logger");
type G = typeof globalThis & { [KEY]?: pino.Logger };

/**
 * The logger's options: errors (under `err` or `error`) go through loggableError, so a
 * failing query's values (a webhook secret, a password hash, a token) never reach the log.
 */
export function loggerOptions(level: pino.LevelWithSilent): pino.LoggerOptions {
  return { level, base: { app: "routeboard" }, serializers: { err: loggableError, error: loggableError } };
}

/** Structured JSON logs (pino), one logger per process. */
export function logger(): pino.Logger {
  const g = globalThis as G;
  g[KEY] ??= pino(loggerOptions(env().LOG_LEVEL));
  return g[KEY];
}
