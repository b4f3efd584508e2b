import pino from "pino";
import { env } from "@/server/env";

const KEY = Symbol.for("routeboard.logger");
type G = typeof globalThis & { [KEY]?: pino.Logger };

/** Structured JSON logs (pino), one logger per process. */
export function logger(): pino.Logger {
  const g = globalThis as G;
  g[KEY] ??= pino({ level: env().LOG_LEVEL, base: { app: "routeboard" } });
  return g[KEY];
}
