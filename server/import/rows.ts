/**
 * What every source's parser hands the import engine (engine.ts): one row per subscriber to
 * be, in Routeboard's terms, with the source's own words already mapped (statuses, reset
 * strategies, units). A parser never throws on a bad row: it names it in `errors`, so the
 * report lists every row it could not take.
 */
import type { ResetStrategy } from "@/server/usage/limits";

export const IMPORT_SOURCES = ["marzban", "remnawave", "3x-ui", "csv"] as const;
export type ImportSource = (typeof IMPORT_SOURCES)[number];

export interface ImportRow {
  /** How the report names the row: "user alice", "line 7", "client bob@inbound 3". */
  ref: string;
  name: string;
  /** The VLESS/VMess id the user's app has; null = a new one is made. */
  vlessUuid: string | null;
  /** The source's own Trojan password; null = derived from the UUID (core/credentials.ts). */
  trojanPassword: string | null;
  enabled: boolean;
  expiresAt: Date | null;
  /** On hold: days of validity counted from the first use (expiresAt is then null). */
  holdDays: number | null;
  trafficLimitBytes: number | null;
  upBytes: number;
  downBytes: number;
  resetStrategy: ResetStrategy;
  resetDay: number | null;
  note: string | null;
  /** The key of the old subscription URL (Marzban token, Remnawave short UUID, 3x-ui sub id). */
  legacyKey: string | null;
  /** The old subscription URL as the source printed it, when it did (its host and path are used). */
  legacyUrl?: string | null;
  /** Marzban: the username its signed tokens carry, and tokens signed before notBefore are refused. */
  marzbanUsername?: string;
  notBefore?: Date | null;
}

export interface RowIssue {
  ref: string;
  field?: string;
  reason: string;
}

export interface Parsed {
  rows: ImportRow[];
  errors: RowIssue[];
  /** Kept but worth saying (a Shadowsocks password not kept, a setting simplified). */
  warnings: RowIssue[];
  /** Marzban's subscription signing secret, when the source holds it (its database). */
  marzbanSecret?: string | null;
}

export class RowError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** A byte count as the source gives it (number, numeric string, null): a safe integer ≥ 0. */
export function bytes(field: string, v: unknown, nullable: boolean): number | null {
  if (v === null || v === undefined || v === "") {
    if (nullable) return null;
    return 0;
  }
  const n = typeof v === "number" ? v : typeof v === "string" && /^\s*\d+(\.\d+)?\s*$/.test(v) ? Number(v) : typeof v === "bigint" ? Number(v) : NaN;
  if (!Number.isFinite(n) || n < 0) throw new RowError(field, `must be a number of bytes ≥ 0 (got ${JSON.stringify(String(v)).slice(0, 40)})`);
  if (n > Number.MAX_SAFE_INTEGER) throw new RowError(field, `is too large (${String(v).slice(0, 24)} bytes; at most ${Number.MAX_SAFE_INTEGER})`);
  return Math.round(n);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function uuidOrNull(field: string, v: unknown): string | null {
  if (v === null || v === undefined || v === "") return null;
  if (typeof v !== "string" || !UUID.test(v.trim())) throw new RowError(field, `must be a UUID (got ${JSON.stringify(String(v)).slice(0, 50)})`);
  return v.trim().toLowerCase();
}

export function textOrNull(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  const s = String(v).trim();
  return s === "" ? null : s;
}

/** Runs one row's mapping, turning a RowError (or any thrown error) into the report's entry. */
export function mapRow(parsed: Parsed, ref: string, map: () => ImportRow | null): void {
  try {
    const row = map();
    if (row) parsed.rows.push(row);
  } catch (err) {
    if (err instanceof RowError) parsed.errors.push({ ref, field: err.field, reason: `${err.field} ${err.message}` });
    else parsed.errors.push({ ref, reason: (err as Error).message });
  }
}

export function emptyParsed(): Parsed {
  return { rows: [], errors: [], warnings: [] };
}

export const DAY_MS = 86_400_000;
