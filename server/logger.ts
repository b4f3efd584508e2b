import pino from "pino";

const KEY = Symbol.for("routeboard.logger");
type G = typeof globalThis & { [KEY]?: pino.Logger };

/** Structured JSON logs (pino), one logger per process. */
export function logger(): pino.Logger {
  const g = globalThis as G;
  g[KEY] ??= pino({ level: process.env.LOG_LEVEL ?? "info", base: { app: "routeboard" } });
  return g[KEY];
}
