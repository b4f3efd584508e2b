/**
 * Backups of an embedded (PGlite) install: one file holding the database, as PGlite's own
 * dump of its data folder (taken while no query runs, so it is consistent), and the files of
 * DATA_DIR the database alone cannot restore: the generated session secret (it keys sessions,
 * device cookies and login challenges; without it everyone is logged out) and, before the
 * owner exists, the setup code.
 *
 * Format: the line `routeboard-backup 1`, one line of JSON (BackupManifest), then the gzipped
 * tar of the PGlite data folder, byte for byte. No imports above db/: the running app
 * (server/api/backup-http.ts) and the scripts (scripts/backup.ts, restore.ts) share it.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const BACKUP_MAGIC = "routeboard-backup 1";
/** The files of DATA_DIR a backup carries besides the database (all small secrets, restored with mode 0600). */
export const BACKUP_DATA_FILES = ["session-secret", "setup-code"] as const;

export interface BackupManifest {
  createdAt: string;
  database: "pglite";
  /** File name in DATA_DIR → its content. */
  files: Record<string, string>;
  /** The last migration the database had when it was dumped (the tag in db/migrations/meta/_journal.json). */
  migration: string | null;
}

/** The files of DATA_DIR to carry, as they are now. */
export function readDataFiles(dataDir: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const name of BACKUP_DATA_FILES) {
    const file = path.join(dataDir, name);
    if (existsSync(file)) files[name] = readFileSync(file, "utf8");
  }
  return files;
}

export function encodeBackup(manifest: BackupManifest, databaseTarGz: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`${BACKUP_MAGIC}\n${JSON.stringify(manifest)}\n`, "utf8"), databaseTarGz]);
}

/** Splits a backup file; throws a sentence saying what is wrong with it. */
export function decodeBackup(file: Buffer): { manifest: BackupManifest; databaseTarGz: Buffer } {
  const first = file.indexOf(0x0a);
  if (first < 0 || file.subarray(0, first).toString("utf8") !== BACKUP_MAGIC) throw new Error(`not a Routeboard backup (it does not start with "${BACKUP_MAGIC}")`);
  const second = file.indexOf(0x0a, first + 1);
  if (second < 0) throw new Error("the backup is cut short (no manifest line)");
  let manifest: BackupManifest;
  try {
    manifest = JSON.parse(file.subarray(first + 1, second).toString("utf8")) as BackupManifest;
  } catch {
    throw new Error("the backup's manifest line is not JSON");
  }
  if (manifest.database !== "pglite" || typeof manifest.files !== "object" || manifest.files === null) throw new Error("the backup's manifest is not one this version reads");
  for (const name of Object.keys(manifest.files)) {
    if (!(BACKUP_DATA_FILES as readonly string[]).includes(name)) throw new Error(`the backup carries an unknown file ${JSON.stringify(name)}`);
  }
  const databaseTarGz = file.subarray(second + 1);
  // gzip's magic number: a truncated or damaged file is refused before PGlite is started on it.
  if (databaseTarGz.length < 2 || databaseTarGz[0] !== 0x1f || databaseTarGz[1] !== 0x8b) throw new Error("the backup's database part is not a gzipped tar");
  return { manifest, databaseTarGz };
}

/** The tag of the n-th migration of this version (db/migrations/meta/_journal.json), for the manifest. */
export function migrationTag(applied: number): string | null {
  if (applied <= 0) return null;
  const journal = JSON.parse(readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations", "meta", "_journal.json"), "utf8")) as { entries: Array<{ tag: string }> };
  return journal.entries[applied - 1]?.tag ?? `migration ${applied} (newer than this version)`;
}

/**
 * Restores a backup into `dataDir` (created if missing): the database under pglite/ and the
 * secret files. Refuses a folder that holds anything unless `force`, which empties it first.
 */
export async function restoreBackup(file: Buffer, dataDir: string, opts: { force?: boolean } = {}): Promise<BackupManifest> {
  const { manifest, databaseTarGz } = decodeBackup(file);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const present = readdirSync(dataDir);
  if (present.length > 0) {
    if (!opts.force) throw new Error(`${path.resolve(dataDir)} is not empty (${present.slice(0, 3).join(", ")}${present.length > 3 ? ", …" : ""}): restore into an empty folder, or pass --force to replace what is there`);
    for (const name of present) rmSync(path.join(dataDir, name), { recursive: true, force: true });
  }
  const { PGlite } = await import("@electric-sql/pglite");
  const pg = new PGlite(path.join(dataDir, "pglite"), { loadDataDir: new Blob([new Uint8Array(databaseTarGz)]) });
  await pg.waitReady;
  // A query proves the restored database opens, before the folder is called restored.
  await pg.query("select 1");
  await pg.close();
  for (const [name, content] of Object.entries(manifest.files)) {
    const target = path.join(dataDir, name);
    writeFileSync(target, content, { mode: 0o600 });
    chmodSync(target, 0o600);
  }
  return manifest;
}
