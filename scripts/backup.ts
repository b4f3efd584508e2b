/**
 * npm run backup -- --out FILE [--app URL] [--token TOKEN]     while the app runs
 * npm run backup -- --out FILE --data-dir DIR                    while it is stopped
 *
 * A backup of an embedded (PGlite) install: the database and the secrets of DATA_DIR, in the
 * format of db/backup.ts, written with mode 0600 (it holds every secret of the install).
 * While the app runs, only the app can take a consistent dump (PGlite is one process): the
 * script asks it at GET /api/backup with an API token that has the backup scope, made by the
 * owner (--token or ROUTEBOARD_BACKUP_TOKEN; --app or ROUTEBOARD_URL, default
 * http://127.0.0.1:$PORT). With --data-dir it opens a stopped install's folder itself.
 * PostgreSQL installs use pg_dump (README, "Backups and upgrades").
 */
import { existsSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { encodeBackup, migrationTag, readDataFiles } from "../db/backup";
import { appTarget, walkArgs } from "./cli-args";

interface Args {
  out: string;
  app?: string;
  token?: string;
  dataDir?: string;
  force: boolean;
}

const USAGE = `usage: npm run backup -- --out FILE [--app URL] [--token TOKEN] [--force]
       npm run backup -- --out FILE --data-dir DIR [--force]     (the app stopped)
`;

function fail(message: string, code = 1): never {
  process.stderr.write(`backup: ${message}\n`);
  process.exit(code);
}

export function parseBackupArgs(argv: string[], envVars: Record<string, string | undefined>): Args | { error: string } {
  const args: Partial<Args> & { force: boolean } = { force: false };
  const error = walkArgs(argv, (flag, value) => {
    if (flag === "--out") args.out = value();
    else if (flag === "--app") args.app = value();
    else if (flag === "--token") args.token = value();
    else if (flag === "--data-dir") args.dataDir = value();
    else if (flag === "--force") args.force = true;
    else return `unknown flag ${flag}`;
  });
  if (error) return { error };
  if (!args.out) return { error: "--out FILE is required" };
  const target = appTarget(args, envVars, "ROUTEBOARD_BACKUP_TOKEN", "backup");
  if (target) return { error: target };
  return args as Args;
}

/** Writes the file atomically (a temporary name, then rename), readable by this user only. */
function writeBackup(out: string, body: Uint8Array) {
  const tmp = path.join(path.dirname(path.resolve(out)), `.${path.basename(out)}.${process.pid}.tmp`);
  writeFileSync(tmp, body, { mode: 0o600 });
  renameSync(tmp, out);
}

async function fromRunningApp(app: string, token: string): Promise<Buffer> {
  const url = `${app.replace(/\/$/, "")}/api/backup`;
  let res: Response;
  try {
    res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  } catch (err) {
    fail(`cannot reach ${url} (${(err as Error).cause ? String((err as { cause: { code?: string } }).cause.code) : (err as Error).message}): is the app running? When it is stopped, use --data-dir`);
  }
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) {
    let message = body.toString("utf8");
    try {
      message = (JSON.parse(message) as { error: string }).error;
    } catch {
      // not JSON: said as it came
    }
    fail(`${url} answered ${res.status}: ${message}`);
  }
  return body;
}

async function fromStoppedInstall(dataDir: string): Promise<Buffer> {
  const pgliteDir = path.join(dataDir, "pglite");
  if (!existsSync(path.join(pgliteDir, "PG_VERSION"))) fail(`${path.resolve(dataDir)} holds no embedded database (no pglite/PG_VERSION)`);
  // PGlite keeps this file while it has the folder open and removes it on a clean close; it
  // does not stop a second process from opening the folder, so this script refuses instead.
  if (existsSync(path.join(pgliteDir, "postmaster.pid"))) {
    fail(
      `an app has ${path.resolve(dataDir)} open (or did not stop cleanly): take the backup from the running app (--app, --token); after a crash, start and stop the app once`,
    );
  }
  const { PGlite } = await import("@electric-sql/pglite");
  const pg = new PGlite(pgliteDir);
  try {
    await pg.waitReady;
    const applied = await pg.query<{ n: number }>("select count(*)::int as n from drizzle.__drizzle_migrations");
    await pg.query("checkpoint");
    const tarGz = new Uint8Array(await (await pg.dumpDataDir("gzip")).arrayBuffer());
    return encodeBackup({ createdAt: new Date().toISOString(), database: "pglite", files: readDataFiles(dataDir), migration: migrationTag(applied.rows[0]?.n ?? 0) }, tarGz);
  } finally {
    await pg.close();
  }
}

async function main() {
  const parsed = parseBackupArgs(process.argv.slice(2), process.env);
  if ("error" in parsed) {
    process.stderr.write(USAGE);
    fail(parsed.error, 2);
  }
  if (existsSync(parsed.out) && !parsed.force) fail(`${parsed.out} exists: choose another name, or pass --force to replace it`, 2);
  const body = parsed.dataDir ? await fromStoppedInstall(parsed.dataDir) : await fromRunningApp(parsed.app!, parsed.token!);
  writeBackup(parsed.out, body);
  process.stdout.write(`backup: wrote ${parsed.out} (${body.length} bytes)\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  main().catch((err: unknown) => fail((err as Error).message));
}
