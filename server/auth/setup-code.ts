/**
 * The one-time setup code (as Jenkins' initialAdminPassword and Grafana's first-run): while
 * there is no operator, creating the owner needs a code that only whoever can read the
 * server's log or data folder knows. Otherwise the first visitor of a fresh install on
 * 0.0.0.0 would own it.
 *
 * The code lives in the settings table, so every instance sharing a database prints and
 * accepts the same one, and in <DATA_DIR>/setup-code (mode 0600) for scripts and for
 * operators who missed the log. Both go away once the owner exists.
 */
import { createHash, randomInt, timingSafeEqual } from "node:crypto";
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { eq } from "drizzle-orm";
import type { DbOrTx } from "@/db/client";
import { settings } from "@/db/schema";

const KEY = "setup-code";
/** No 0/O, 1/I/L: the code is read off a terminal and typed. */
const ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
export const SETUP_CODE_FILE = "setup-code";

export function setupCodeFile(dataDir: string): string {
  return path.resolve(dataDir, SETUP_CODE_FILE);
}

/** 16 characters in groups of four: 31^16 ≈ 2^79 possibilities. */
function generate(): string {
  const chars = Array.from({ length: 16 }, () => ALPHABET[randomInt(ALPHABET.length)]);
  return [0, 4, 8, 12].map((i) => chars.slice(i, i + 4).join("")).join("-");
}

/** What operators type: case, spaces and dashes do not matter. */
export function normaliseSetupCode(code: string): string {
  return code.toUpperCase().replace(/[\s-]/g, "");
}

/** The code of this install (created on first call), written to <DATA_DIR>/setup-code. */
export async function ensureSetupCode(db: DbOrTx, dataDir: string): Promise<string> {
  await db.insert(settings).values({ key: KEY, value: { code: generate() } }).onConflictDoNothing();
  const [row] = await db.select().from(settings).where(eq(settings.key, KEY));
  const code = (row!.value as { code: string }).code;
  const file = setupCodeFile(dataDir);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, code + "\n", { mode: 0o600 });
  chmodSync(file, 0o600);
  return code;
}

export async function checkSetupCode(db: DbOrTx, given: string): Promise<boolean> {
  const [row] = await db.select().from(settings).where(eq(settings.key, KEY));
  if (!row) return false;
  const digest = (s: string) => createHash("sha256").update(normaliseSetupCode(s)).digest();
  return timingSafeEqual(digest((row.value as { code: string }).code), digest(given));
}

/** Forgets the code once the owner exists (inside the setup transaction). */
export async function consumeSetupCode(db: DbOrTx): Promise<void> {
  await db.delete(settings).where(eq(settings.key, KEY));
}

export function removeSetupCodeFile(dataDir: string): void {
  rmSync(setupCodeFile(dataDir), { force: true });
}
