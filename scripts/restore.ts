/**
 * npm run restore -- FILE --data-dir DIR [--force]
 *
 * Restores a backup (db/backup.ts) into DIR: the embedded database under DIR/pglite and the
 * secrets of DATA_DIR (mode 0600). Refuses a folder that holds anything unless --force, which
 * replaces what is there. Start the app with DATA_DIR=DIR afterwards: it runs the migrations
 * of its own version at start, as on any start.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { restoreBackup } from "../db/backup";
import { walkArgs } from "./cli-args";

const USAGE = "usage: npm run restore -- FILE --data-dir DIR [--force]\n";

function fail(message: string, code = 1): never {
  process.stderr.write(`restore: ${message}\n`);
  process.exit(code);
}

export function parseRestoreArgs(argv: string[]): { file: string; dataDir: string; force: boolean } | { error: string } {
  let file: string | undefined;
  let dataDir: string | undefined;
  let force = false;
  const error = walkArgs(argv, (a, value) => {
    if (a === "--data-dir") dataDir = value();
    else if (a === "--force") force = true;
    else if (a.startsWith("--")) return `unknown flag ${a}`;
    else if (file === undefined) file = a;
    else return `one backup file at a time (got ${file} and ${a})`;
  });
  if (error) return { error };
  if (!file) return { error: "the backup FILE is required" };
  if (!dataDir) return { error: "--data-dir DIR is required (where the app's DATA_DIR will be)" };
  return { file, dataDir, force };
}

async function main() {
  const parsed = parseRestoreArgs(process.argv.slice(2));
  if ("error" in parsed) {
    process.stderr.write(USAGE);
    fail(parsed.error, 2);
  }
  let body: Buffer;
  try {
    body = readFileSync(parsed.file);
  } catch (err) {
    fail(`cannot read ${parsed.file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const manifest = await restoreBackup(body, parsed.dataDir, { force: parsed.force });
  process.stdout.write(
    `restore: ${parsed.file} (taken ${manifest.createdAt}, database at ${manifest.migration ?? "no migration"}) is in ${path.resolve(parsed.dataDir)}; start the app with DATA_DIR=${parsed.dataDir}\n`,
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  main().catch((err: unknown) => fail((err as Error).message));
}
