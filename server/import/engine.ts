/**
 * The import engine (issue 27 point 1): a source's file → checked rows → subscribers, all or
 * nothing. The dry run does every check a real run does (the file, each row, duplicates in
 * the file, clashes with the database) and returns the same report without writing; a real
 * run with any row it cannot take writes nothing and returns that report.
 *
 * A real run is one transaction: multi-row INSERTs in batches, one audit entry with the
 * counts, and one "subscribers" change for the cluster (the config hub rebuilds once, not
 * once per user).
 */
import { randomUUID } from "node:crypto";
import { TRPCError } from "@trpc/server";
import { and, eq, sql } from "drizzle-orm";
import { pgArray } from "@/db/pg-array";
import type { Db, DbOrTx } from "@/db/client";
import { clusters, legacyMarzbanSecrets, subscriberLegacyLinks, subscribers } from "@/db/schema";
import { recordAudit } from "@/server/audit";
import { uniqueViolation } from "@/server/db-errors";
import { written, type Actor, type Written } from "@/server/changes";
import { newSubscriptionToken } from "@/server/auth/tokens";
import { limitColumns } from "@/server/usage/limits";
import { HOLD_DAYS_MAX, nameSchema } from "@/core/validation";
import { parseCsv } from "./csv";
import { DEFAULT_LEGACY_PREFIX, MARZBAN_HOST_PREFIX, RESERVED_SEGMENTS, keyProblem, marzbanSecretTag, prefixProblem } from "./legacy";
import { parseMarzban } from "./marzban";
import { parseRemnawave } from "./remnawave";
import { RowError, type ImportRow, type ImportSource, type Parsed, type RowIssue } from "./rows";
import { parseThreeXui } from "./threexui";

/** An upload larger than this is refused before it is read (a 100,000-user Marzban JSON is about 60 MB). */
export const MAX_IMPORT_BYTES = 128 * 1024 * 1024;
/** Rows per run: past this, split the file (the run is one transaction). */
export const MAX_IMPORT_ROWS = 200_000;
/** Errors listed in a report; the count says how many there were in all. */
export const MAX_REPORTED_ISSUES = 1000;
const INSERT_BATCH = 5000;
const LOOKUP_BATCH = 5000;
const NOTE_MAX = 1000;
const TROJAN_PASSWORD_MAX = 128;

export interface ImportOptions {
  clusterId: string;
  source: ImportSource;
  bytes: Uint8Array;
  dryRun: boolean;
  /** Where old URLs are served: a path prefix ("/sub/"), and a host for a root prefix. */
  legacyPrefix?: string | null;
  legacyHost?: string | null;
  /** Marzban's subscription secret (its `jwt` table) for API JSON, which does not carry it. */
  marzbanSecret?: string | null;
}

export interface ImportReport {
  source: ImportSource;
  dryRun: boolean;
  /** True when the subscribers were written (never on a dry run, never with errors). */
  imported: boolean;
  /** Rows read from the file (users, clients or lines). */
  rows: number;
  /** Subscribers created, or that a run would create. */
  created: number;
  /** Old subscription URLs kept (Marzban's signed tokens count once per user). */
  legacyLinks: number;
  /** Rows that clash with subscribers already there (name, UUID or old URL). */
  conflicts: number;
  errorCount: number;
  /** Every row not taken and why (the first MAX_REPORTED_ISSUES). */
  errors: RowIssue[];
  warnings: RowIssue[];
  warningCount: number;
}

interface Checked {
  row: ImportRow;
  id: string;
  links: Array<{ host: string; path: string; notBefore: Date | null }>;
}

async function parse(o: ImportOptions): Promise<Parsed> {
  switch (o.source) {
    case "marzban":
      return parseMarzban(o.bytes, { secret: o.marzbanSecret });
    case "remnawave":
      return parseRemnawave(o.bytes);
    case "3x-ui":
      return parseThreeXui(o.bytes);
    case "csv":
      return parseCsv(o.bytes);
  }
}

/** Where a row's old URL is served: from the options, else the source's own URL, else the default. */
function linksOf(row: ImportRow, o: ImportOptions, secretTag: string | null): Checked["links"] {
  const out: Checked["links"] = [];
  let prefix = o.legacyPrefix ?? null;
  let host = (o.legacyHost ?? "").toLowerCase();
  let key = row.legacyKey;
  if (!prefix && row.legacyUrl) {
    let url: URL;
    try {
      url = new URL(row.legacyUrl, "http://relative.invalid");
    } catch {
      throw new RowError("subscription URL", `is not a URL: ${JSON.stringify(row.legacyUrl.slice(0, 80))}`);
    }
    const cut = url.pathname.lastIndexOf("/") + 1;
    prefix = url.pathname.slice(0, cut);
    key = decodeURIComponent(url.pathname.slice(cut)) || key;
    // A root path is the old panel's own host (Remnawave's sub domain); a prefix works on any host.
    if (prefix === "/" && !o.legacyHost) host = url.host === "relative.invalid" ? "" : url.host.toLowerCase();
  }
  prefix ??= DEFAULT_LEGACY_PREFIX[o.source];
  if (secretTag && row.marzbanUsername) {
    const p = prefixProblem(prefix, "");
    if (p) throw new RowError("legacy prefix", p);
    out.push({ host: `${MARZBAN_HOST_PREFIX}${secretTag}`, path: `${prefix}${row.marzbanUsername}`, notBefore: row.notBefore ?? null });
    return out;
  }
  if (!key) return out;
  const problem = prefixProblem(prefix, host) ?? keyProblem(key);
  if (problem) throw new RowError("subscription URL", problem.charAt(0).toLowerCase() + problem.slice(1));
  if (prefix === "/" && RESERVED_SEGMENTS.includes(key.toLowerCase())) throw new RowError("subscription URL", `/${key} is one of the app's own routes`);
  out.push({ host, path: `${prefix}${key}`, notBefore: null });
  return out;
}

/** Each row against the rules a subscriber follows, and against the other rows of the file. */
function checkRows(parsed: Parsed, o: ImportOptions, secretTag: string | null, errors: RowIssue[]): Checked[] {
  const out: Checked[] = [];
  const names = new Map<string, string>();
  const uuids = new Map<string, string>();
  const paths = new Map<string, string>();
  const trojans = new Map<string, string>();
  for (const row of parsed.rows) {
    const fail = (field: string, reason: string) => errors.push({ ref: row.ref, field, reason: `${field} ${reason}` });
    try {
      const name = nameSchema.safeParse(row.name);
      if (!name.success) throw new RowError("name", `is not a valid name: ${name.error.issues[0]?.message ?? "invalid"}`);
      row.name = name.data;
      if (row.note !== null && [...row.note].length > NOTE_MAX) throw new RowError("note", `is longer than ${NOTE_MAX} characters`);
      if (row.note !== null && /\p{Cc}/u.test(row.note.replace(/[\n\t]/g, ""))) throw new RowError("note", "contains control characters");
      if (row.trojanPassword !== null && (row.trojanPassword.length > TROJAN_PASSWORD_MAX || /[\p{Cc}\s]/u.test(row.trojanPassword)))
        throw new RowError("trojan password", `must be 1–${TROJAN_PASSWORD_MAX} characters without spaces or control characters`);
      if (row.holdDays !== null && row.expiresAt !== null) throw new RowError("hold days", "and an expiry are both set: a subscriber on hold has no expiry until first use");
      if (row.holdDays !== null && (row.holdDays < 1 || row.holdDays > HOLD_DAYS_MAX)) throw new RowError("hold days", `must be 1–${HOLD_DAYS_MAX}`);
      if (row.upBytes + row.downBytes > Number.MAX_SAFE_INTEGER) throw new RowError("used traffic", "is too large");
      if (row.resetStrategy === "weekly") {
        row.resetDay ??= 1;
        if (row.resetDay < 1 || row.resetDay > 7) throw new RowError("reset day", "must be 1–7 (Monday = 1) for a weekly reset");
      } else if (row.resetStrategy === "monthly") {
        row.resetDay ??= 1;
        if (row.resetDay < 1 || row.resetDay > 31) throw new RowError("reset day", "must be 1–31 for a monthly reset");
      } else if (row.resetDay !== null) {
        throw new RowError("reset day", `is set but the reset is ${row.resetStrategy}`);
      }
      const links = linksOf(row, o, secretTag);
      const lower = row.name.toLowerCase();
      const dupName = names.get(lower);
      if (dupName) throw new RowError("name", `"${row.name}" is also ${dupName} (names are unique per cluster, case-insensitively)`);
      if (row.vlessUuid && uuids.has(row.vlessUuid)) throw new RowError("UUID", `${row.vlessUuid} is also ${uuids.get(row.vlessUuid)}`);
      for (const l of links) if (paths.has(`${l.host}|${l.path}`)) throw new RowError("subscription URL", `${l.path} is also ${paths.get(`${l.host}|${l.path}`)}`);
      if (row.trojanPassword && trojans.has(row.trojanPassword)) throw new RowError("trojan password", `is also ${trojans.get(row.trojanPassword)}'s (a Trojan password names one user)`);
      names.set(lower, row.ref);
      if (row.vlessUuid) uuids.set(row.vlessUuid, row.ref);
      if (row.trojanPassword) trojans.set(row.trojanPassword, row.ref);
      for (const l of links) paths.set(`${l.host}|${l.path}`, row.ref);
      out.push({ row, id: randomUUID(), links });
    } catch (err) {
      if (err instanceof RowError) fail(err.field, err.message);
      else throw err;
    }
  }
  return out;
}

function chunks<T>(list: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

/** Rows that clash with what the database holds: names in the cluster, UUIDs, Trojan passwords and old URLs anywhere. */
async function conflictsWith(db: DbOrTx, clusterId: string, rows: Checked[]): Promise<RowIssue[]> {
  const issues: RowIssue[] = [];
  const byName = new Map(rows.map((c) => [c.row.name.toLowerCase(), c]));
  const byUuid = new Map(rows.filter((c) => c.row.vlessUuid).map((c) => [c.row.vlessUuid!, c]));
  const byTrojan = new Map(rows.filter((c) => c.row.trojanPassword).map((c) => [c.row.trojanPassword!, c]));
  const byPath = new Map(rows.flatMap((c) => c.links.map((l) => [`${l.host}|${l.path}`, c] as const)));
  // One array parameter per lookup (pgArray): on PGlite a list of parameters costs several times as much.
  for (const batch of chunks([...byName.keys()], LOOKUP_BATCH)) {
    const found = await db
      .select({ name: subscribers.name, lower: subscribers.nameLower })
      .from(subscribers)
      .where(and(eq(subscribers.clusterId, clusterId), sql`${subscribers.nameLower} = any(${pgArray(batch)}::text[])`));
    for (const f of found) issues.push({ ref: byName.get(f.lower)!.row.ref, field: "name", reason: `name: a subscriber named "${f.name}" already exists in this cluster` });
  }
  for (const batch of chunks([...byUuid.keys()], LOOKUP_BATCH)) {
    const found = await db.select({ uuid: subscribers.vlessUuid }).from(subscribers).where(sql`${subscribers.vlessUuid} = any(${pgArray(batch)}::uuid[])`);
    for (const f of found) issues.push({ ref: byUuid.get(f.uuid)!.row.ref, field: "UUID", reason: `UUID ${f.uuid} belongs to a subscriber already there` });
  }
  for (const batch of chunks([...byTrojan.keys()], LOOKUP_BATCH)) {
    const found = await db.select({ password: subscribers.trojanPassword }).from(subscribers).where(sql`${subscribers.trojanPassword} = any(${pgArray(batch)}::text[])`);
    for (const f of found) issues.push({ ref: byTrojan.get(f.password!)!.row.ref, field: "trojan password", reason: "trojan password belongs to a subscriber already there" });
  }
  for (const batch of chunks([...byPath.keys()], LOOKUP_BATCH)) {
    const hosts = batch.map((k) => k.slice(0, k.indexOf("|")));
    const paths = batch.map((k) => k.slice(k.indexOf("|") + 1));
    const found = await db
      .select({ host: subscriberLegacyLinks.host, path: subscriberLegacyLinks.path })
      .from(subscriberLegacyLinks)
      .where(sql`(${subscriberLegacyLinks.host}, ${subscriberLegacyLinks.path}) in (select * from unnest(${pgArray(hosts)}::text[], ${pgArray(paths)}::text[]))`);
    for (const f of found) issues.push({ ref: byPath.get(`${f.host}|${f.path}`)!.row.ref, field: "subscription URL", reason: `subscription URL ${f.path} already belongs to an imported subscriber` });
  }
  return issues;
}

/** One multi-row INSERT per batch: each column one array parameter, unnested. */
async function insertBatch(tx: DbOrTx, clusterId: string, batch: Checked[], nowMs: number): Promise<void> {
  const col = <T extends string | number | boolean | null>(f: (c: Checked) => T) => pgArray(batch.map(f));
  const limits = batch.map(({ row }) => limitColumns({ trafficResetStrategy: row.resetStrategy, trafficResetDay: row.resetDay, holdDays: row.holdDays }, nowMs));
  const at = (d: Date | null) => (d ? d.toISOString() : null);
  await tx.execute(sql`
    insert into ${subscribers} (id, cluster_id, name, token, vless_uuid, trojan_password, enabled, expires_at, traffic_limit_bytes,
      traffic_up_bytes, traffic_down_bytes, traffic_used_bytes, note, traffic_reset_strategy, traffic_reset_day, next_reset_at, hold_days)
    select v.id, ${clusterId}::uuid, v.name, v.token, v.vless, v.trojan, v.enabled, v.expires, v.lim, v.up, v.down, v.up + v.down, v.note, v.strategy, v.day, v.next_reset, v.hold
    from unnest(
      ${col((c) => c.id)}::uuid[], ${col((c) => c.row.name)}::text[], ${col(() => newSubscriptionToken())}::text[], ${col((c) => c.row.vlessUuid ?? randomUUID())}::uuid[],
      ${col((c) => c.row.trojanPassword)}::text[], ${col((c) => c.row.enabled)}::boolean[], ${col((c) => at(c.row.expiresAt))}::timestamptz[],
      ${col((c) => c.row.trafficLimitBytes)}::bigint[], ${col((c) => c.row.upBytes)}::bigint[], ${col((c) => c.row.downBytes)}::bigint[], ${col((c) => c.row.note)}::text[],
      ${pgArray(limits.map((l) => l.trafficResetStrategy))}::text[], ${pgArray(limits.map((l) => l.trafficResetDay))}::integer[],
      ${pgArray(limits.map((l) => at(l.nextResetAt)))}::timestamptz[], ${pgArray(limits.map((l) => l.holdDays))}::integer[]
    ) as v(id, name, token, vless, trojan, enabled, expires, lim, up, down, note, strategy, day, next_reset, hold)`);
  const links = batch.flatMap((c) => c.links.map((l) => ({ ...l, subscriberId: c.id })));
  if (links.length === 0) return;
  await tx.execute(sql`
    insert into ${subscriberLegacyLinks} (host, path, subscriber_id, not_before)
    select * from unnest(${pgArray(links.map((l) => l.host))}::text[], ${pgArray(links.map((l) => l.path))}::text[], ${pgArray(links.map((l) => l.subscriberId))}::uuid[],
      ${pgArray(links.map((l) => at(l.notBefore)))}::timestamptz[])`);
}

function report(o: ImportOptions, parsed: Parsed, errors: RowIssue[], conflicts: number, checked: Checked[], imported: boolean): ImportReport {
  const ok = errors.length === 0;
  return {
    source: o.source,
    dryRun: o.dryRun,
    imported,
    rows: parsed.rows.length + parsed.errors.filter((e) => e.ref !== "file" && e.ref !== "header").length,
    created: ok ? checked.length : 0,
    legacyLinks: ok ? checked.reduce((n, c) => n + c.links.length, 0) : 0,
    conflicts,
    errorCount: errors.length,
    errors: errors.slice(0, MAX_REPORTED_ISSUES),
    warnings: parsed.warnings.slice(0, MAX_REPORTED_ISSUES),
    warningCount: parsed.warnings.length,
  };
}

/** Parses and checks `o.bytes`; on a real run without errors writes every row in one transaction. */
export async function importSubscribers(db: Db, actor: Actor, o: ImportOptions): Promise<Written<ImportReport>> {
  if (o.bytes.length > MAX_IMPORT_BYTES) throw new TRPCError({ code: "PAYLOAD_TOO_LARGE", message: `The file is ${o.bytes.length} bytes: at most ${MAX_IMPORT_BYTES} per run (split it)` });
  if (o.bytes.length === 0) throw new TRPCError({ code: "BAD_REQUEST", message: "The file is empty" });
  if (o.legacyPrefix) {
    const p = prefixProblem(o.legacyPrefix, (o.legacyHost ?? "").toLowerCase());
    if (p) throw new TRPCError({ code: "BAD_REQUEST", message: p });
  }
  const [cluster] = await db.select({ id: clusters.id }).from(clusters).where(eq(clusters.id, o.clusterId));
  if (!cluster) throw new TRPCError({ code: "NOT_FOUND", message: "No such cluster" });
  let parsed: Parsed;
  try {
    parsed = await parse(o);
  } catch (err) {
    // A file the source's reader cannot open at all (a broken dump, a damaged database).
    const message = err instanceof RowError ? `${err.field} ${err.message}` : (err as Error).message;
    throw new TRPCError({ code: "BAD_REQUEST", message: `Cannot read the ${o.source} file: ${message}` });
  }
  const rowCount = parsed.rows.length + parsed.errors.length;
  if (rowCount > MAX_IMPORT_ROWS) throw new TRPCError({ code: "PAYLOAD_TOO_LARGE", message: `The file has ${rowCount} rows: at most ${MAX_IMPORT_ROWS} per run (split it)` });
  const secret = parsed.marzbanSecret ?? null;
  const secretTag = secret ? marzbanSecretTag(secret) : null;
  const errors = [...parsed.errors];
  const checked = checkRows(parsed, o, secretTag, errors);
  if (parsed.rows.length === 0 && errors.length === 0) errors.push({ ref: "file", reason: "The file has no users" });

  const run = async (tx: DbOrTx) => {
    const conflicts = await conflictsWith(tx, o.clusterId, checked);
    errors.push(...conflicts);
    if (errors.length > 0 || o.dryRun) return report(o, parsed, errors, conflicts.length, checked, false);
    const now = Date.now();
    for (const batch of chunks(checked, INSERT_BATCH)) await insertBatch(tx, o.clusterId, batch, now);
    const links = checked.flatMap((c) => c.links);
    if (secret && secretTag && links.some((l) => l.host.startsWith(MARZBAN_HOST_PREFIX))) {
      const prefixes = new Set(links.filter((l) => l.host.startsWith(MARZBAN_HOST_PREFIX)).map((l) => l.path.slice(0, l.path.lastIndexOf("/") + 1)));
      for (const prefix of prefixes) await tx.insert(legacyMarzbanSecrets).values({ clusterId: o.clusterId, prefix, tag: secretTag, secret }).onConflictDoNothing();
    }
    const out = report(o, parsed, errors, 0, checked, true);
    await recordAudit(tx, actor, {
      clusterId: o.clusterId,
      action: "subscriber.import",
      entityType: "cluster",
      entityId: o.clusterId,
      summary: `Imported ${out.created} subscribers from ${o.source} (${out.legacyLinks} old subscription URLs kept, ${out.warningCount} warnings)`,
      after: { source: o.source, rows: out.rows, created: out.created, legacyLinks: out.legacyLinks, warnings: out.warningCount, legacyPrefix: o.legacyPrefix ?? null, legacyHost: o.legacyHost ?? null },
    });
    return out;
  };
  // The dry run reads only; a real run checks and writes in one transaction, so a clash
  // appearing meanwhile fails the whole run instead of half of it.
  let out: ImportReport;
  try {
    out = o.dryRun ? await run(db) : await db.transaction(run);
  } catch (err) {
    // Checked inside the transaction, so only a write committed meanwhile (another import, a
    // new subscriber) can clash here: nothing of this run was written.
    const index = uniqueViolation(err);
    if (index) throw new TRPCError({ code: "CONFLICT", message: `A subscriber added meanwhile clashes with this file (${index === true ? "a unique value" : index}); nothing was written: run it again to see which rows` });
    throw err;
  }
  return out.imported ? written(out, { kind: "subscribers", clusterId: o.clusterId }) : written(out);
}

/** Parsed, unchecked: for tests of a source's mapping. */
export { parse as parseImport };

