/**
 * npm run import -- --from marzban|remnawave|3x-ui|csv FILE --cluster ID [--dry-run]
 *                   [--prefix /sub/] [--host sub.example.com] [--marzban-secret S]
 *                   [--app URL] [--token TOKEN]          while the app runs
 *                   --data-dir DIR                        while it is stopped (embedded database)
 *
 * Subscribers from another panel's file (README, "Importing from another panel"). While the
 * app runs, the file goes to its POST /api/import with an API token that has the
 * subscribers:write scope (--token or ROUTEBOARD_IMPORT_TOKEN; --app or ROUTEBOARD_URL,
 * default http://127.0.0.1:$PORT): PGlite is one process, and the app must hear of the new
 * subscribers anyway. With --data-dir it opens a stopped install's database itself (audited
 * as "system"). Prints the report as JSON; exits 0 when imported (or a clean dry run), 1 when
 * rows were refused (nothing written), 2 on bad arguments.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { appTarget, walkArgs } from "./cli-args";

const SOURCES = ["marzban", "remnawave", "3x-ui", "csv"] as const;

interface Args {
  from: (typeof SOURCES)[number];
  file: string;
  cluster: string;
  dryRun: boolean;
  prefix?: string;
  host?: string;
  marzbanSecret?: string;
  app?: string;
  token?: string;
  dataDir?: string;
}

const USAGE = `usage: npm run import -- --from marzban|remnawave|3x-ui|csv FILE --cluster ID [--dry-run]
         [--prefix /sub/] [--host sub.example.com] [--marzban-secret SECRET]
         [--app URL] [--token TOKEN]        (the app running; token with subscribers:write)
         [--data-dir DIR]                   (the app stopped)
`;

function fail(message: string, code = 1): never {
  process.stderr.write(`import: ${message}\n`);
  process.exit(code);
}

export function parseImportArgs(argv: string[], envVars: Record<string, string | undefined>): Args | { error: string } {
  const args: Partial<Args> & { dryRun: boolean } = { dryRun: false };
  const error = walkArgs(argv, (flag, value, positional) => {
    if (flag === "--from") {
      const from = value();
      if (!(SOURCES as readonly string[]).includes(from)) return `--from must be one of ${SOURCES.join(", ")} (got ${from})`;
      args.from = from as Args["from"];
      args.file = positional() ?? args.file;
    } else if (flag === "--cluster") args.cluster = value();
    else if (flag === "--dry-run") args.dryRun = true;
    else if (flag === "--prefix") args.prefix = value();
    else if (flag === "--host") args.host = value();
    else if (flag === "--marzban-secret") args.marzbanSecret = value();
    else if (flag === "--app") args.app = value();
    else if (flag === "--token") args.token = value();
    else if (flag === "--data-dir") args.dataDir = value();
    else if (!flag.startsWith("--") && args.file === undefined) args.file = flag;
    else return `unknown argument ${flag}`;
  });
  if (error) return { error };
  if (!args.from) return { error: "--from marzban|remnawave|3x-ui|csv is required" };
  if (!args.file) return { error: "the FILE to import is required (after --from SOURCE)" };
  if (!args.cluster) return { error: "--cluster ID is required (the cluster's id: its URL in the dashboard, /clusters/<id>)" };
  const target = appTarget(args, envVars, "ROUTEBOARD_IMPORT_TOKEN", "subscribers:write");
  if (target) return { error: target };
  return args as Args;
}

async function viaApp(a: Args, body: Buffer): Promise<{ status: number; report: unknown }> {
  const q = new URLSearchParams({ cluster: a.cluster, from: a.from, ...(a.dryRun ? { dryRun: "1" } : {}), ...(a.prefix ? { prefix: a.prefix } : {}), ...(a.host ? { host: a.host } : {}) });
  const url = `${a.app!.replace(/\/$/, "")}/api/import?${q}`;
  let res: Response;
  try {
    res = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${a.token}`, "content-type": "application/octet-stream", ...(a.marzbanSecret ? { "x-marzban-secret": a.marzbanSecret } : {}) },
      body: new Blob([new Uint8Array(body)]),
    });
  } catch (err) {
    fail(`cannot reach ${url.split("?")[0]} (${(err as Error).message}): is the app running? When it is stopped, use --data-dir`);
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    fail(`${url.split("?")[0]} answered ${res.status}: ${text.slice(0, 300)}`);
  }
  if (res.status !== 200 && res.status !== 422) fail(`${url.split("?")[0]} answered ${res.status}: ${(json as { error?: string }).error ?? text}`);
  return { status: res.status, report: json };
}

async function viaDataDir(a: Args, body: Buffer): Promise<{ status: number; report: unknown }> {
  const pgliteDir = path.join(a.dataDir!, "pglite");
  if (!existsSync(path.join(pgliteDir, "PG_VERSION"))) fail(`${path.resolve(a.dataDir!)} holds no embedded database (no pglite/PG_VERSION)`);
  // PGlite does not stop a second process from opening the folder: refuse while the app has it.
  if (existsSync(path.join(pgliteDir, "postmaster.pid"))) fail(`an app has ${path.resolve(a.dataDir!)} open (or did not stop cleanly): import through the running app (--app, --token)`);
  const { openDatabase } = await import("../db/client");
  const { importSubscribers } = await import("../server/import/engine");
  const database = await openDatabase({ dataDir: a.dataDir!, migrate: true });
  try {
    const { result } = await importSubscribers(database.db, null, {
      clusterId: a.cluster,
      source: a.from,
      bytes: body,
      dryRun: a.dryRun,
      legacyPrefix: a.prefix ?? null,
      legacyHost: a.host ?? null,
      marzbanSecret: a.marzbanSecret ?? null,
    });
    return { status: result.errorCount > 0 ? 422 : 200, report: result };
  } finally {
    await database.close();
  }
}

async function main() {
  const parsed = parseImportArgs(process.argv.slice(2), process.env);
  if ("error" in parsed) {
    process.stderr.write(USAGE);
    fail(parsed.error, 2);
  }
  if (!existsSync(parsed.file) || !statSync(parsed.file).isFile()) fail(`${parsed.file}: no such file`, 2);
  const body = readFileSync(parsed.file);
  const { status, report } = parsed.dataDir ? await viaDataDir(parsed, body) : await viaApp(parsed, body);
  process.stdout.write(JSON.stringify(report, null, 2) + "\n");
  process.exit(status === 200 ? 0 : 1);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  main().catch((err: unknown) => fail((err as Error).message));
}
