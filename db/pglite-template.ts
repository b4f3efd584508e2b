/**
 * Data folders that PGlite test databases start from. initdb alone costs a PGlite about 7 s
 * of CPU and the migrations another second; copying its 40 MB folder costs a tenth of that.
 * Vitest's global setup (below) makes two folders once, one empty (for migration tests) and
 * one migrated, and names their parent in the environment; db/testing.ts copies them. They
 * are keyed by the migrations and PGlite's version, so a changed schema never reuses them.
 */
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { MIGRATIONS_FOLDER, openDatabase } from "./client";

/** The environment variable naming the folder that holds `empty/` and `migrated/`. */
export const PGLITE_TEMPLATES_ENV = "ROUTEBOARD_TEST_PGLITE_TEMPLATES";

export type PgliteTemplate = "empty" | "migrated";

/** The folder a template's copy is made from (it holds `pglite/`), if the templates exist. */
export function pgliteTemplateDir(which: PgliteTemplate): string | undefined {
  const root = process.env[PGLITE_TEMPLATES_ENV];
  return root ? path.join(root, which) : undefined;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

/** Changes whenever a migration or the PGlite release changes. */
function templateKey(): string {
  const hash = createHash("sha256");
  const pglite = JSON.parse(readFileSync(path.join(path.dirname(MIGRATIONS_FOLDER), "..", "node_modules/@electric-sql/pglite/package.json"), "utf8")) as { version: string };
  hash.update(pglite.version);
  for (const file of filesUnder(MIGRATIONS_FOLDER)) hash.update(path.relative(MIGRATIONS_FOLDER, file)).update(readFileSync(file));
  return hash.digest("hex").slice(0, 16);
}

/**
 * Makes (or finds) the two folders under the system's temporary folder and returns their
 * parent. Concurrent runs each build their own and the first rename wins.
 */
export async function preparePgliteTemplates(): Promise<string> {
  const root = path.join(os.tmpdir(), `routeboard-pglite-${templateKey()}`);
  if (existsSync(path.join(root, "migrated", "pglite"))) return root;
  const building = mkdtempSync(`${root}.building-`);
  try {
    const empty = path.join(building, "empty");
    const fresh = await openDatabase({ dataDir: empty, migrate: false });
    await fresh.close();
    const migrated = path.join(building, "migrated");
    cpSync(empty, migrated, { recursive: true });
    const database = await openDatabase({ dataDir: migrated });
    await database.close();
    try {
      renameSync(building, root);
    } catch (err) {
      // Another run finished first: its folders are the same.
      if (!existsSync(path.join(root, "migrated", "pglite"))) throw err;
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return root;
}

/** Vitest's global setup: workers start after it and inherit the variable. */
export default async function setup(): Promise<void> {
  process.env[PGLITE_TEMPLATES_ENV] ??= await preparePgliteTemplates();
}
