import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ConfigError, env } from "@/server/env";

let cached: string | undefined;

/**
 * The secret that keys session ids. From SESSION_SECRET, else generated once and kept in
 * the data folder (so restarts keep operators logged in). Instances sharing one PostgreSQL
 * must share SESSION_SECRET.
 */
export function sessionSecret(): string {
  if (cached) return cached;
  const e = env();
  if (e.SESSION_SECRET) return (cached = e.SESSION_SECRET);
  const file = path.resolve(e.DATA_DIR, "session-secret");
  try {
    cached = readFileSync(file, "utf8").trim();
    if (cached.length >= 32) return cached;
  } catch {
    // not there yet: generate below
  }
  try {
    mkdirSync(path.dirname(file), { recursive: true });
    cached = randomBytes(32).toString("base64url");
    writeFileSync(file, cached + "\n", { mode: 0o600, flag: "w" });
    chmodSync(file, 0o600);
    return cached;
  } catch (err) {
    throw new ConfigError(
      `Cannot keep the session secret in ${file} (${(err as NodeJS.ErrnoException).code ?? "error"}): set SESSION_SECRET or make DATA_DIR writable`,
    );
  }
}
