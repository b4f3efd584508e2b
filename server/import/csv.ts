/**
 * CSV to import rows: RFC 4180 (quoted fields with doubled quotes and line breaks inside),
 * a UTF-8 BOM and CRLF line ends accepted, lines starting with "#" before the header skipped
 * (comments), a header row naming the columns (any order; unknown columns are an error, so
 * a misspelt one is not silently dropped):
 *
 *   name (required), uuid, trojan_password, enabled (true/false, 1/0, yes/no; default true),
 *   expires_at (ISO 8601 or unix seconds), hold_days, traffic_limit_bytes | traffic_limit_gb,
 *   used_up_bytes, used_down_bytes | used_bytes (counted as download), reset_strategy
 *   (never/daily/weekly/monthly), reset_day, note, sub_token (the old subscription URL's
 *   last segment), sub_url (the whole old URL).
 */
import { RowError, bytes, emptyParsed, mapRow, textOrNull, uuidOrNull, type Parsed } from "./rows";
import type { ResetStrategy } from "@/server/usage/limits";
import { GIB } from "@/core/validation";

export const CSV_COLUMNS = [
  "name",
  "uuid",
  "trojan_password",
  "enabled",
  "expires_at",
  "hold_days",
  "traffic_limit_bytes",
  "traffic_limit_gb",
  "used_up_bytes",
  "used_down_bytes",
  "used_bytes",
  "reset_strategy",
  "reset_day",
  "note",
  "sub_token",
  "sub_url",
] as const;

/** The records of a CSV text, each with the line it starts on (`lines`); throws on an unterminated quote. */
export function readCsv(text: string, lines: number[] = []): string[][] {
  const s = text.replace(/^\uFEFF/, "");
  const records: string[][] = [];
  let line = 1;
  let recordLine = 1;
  let field = "";
  let record: string[] = [];
  let i = 0;
  let quoted = false;
  let any = false;
  while (i < s.length) {
    const c = s[i]!;
    if (quoted) {
      if (c === "\n") line++;
      if (c === '"') {
        if (s[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i++;
        continue;
      }
      field += c;
      i++;
      continue;
    }
    if (c === '"' && field === "") {
      quoted = true;
      any = true;
      i++;
    } else if (c === ",") {
      record.push(field);
      field = "";
      any = true;
      i++;
    } else if (c === "\r" || c === "\n") {
      if (any || field !== "" || record.length > 0) {
        record.push(field);
        records.push(record);
        lines.push(recordLine);
      }
      record = [];
      field = "";
      any = false;
      i += c === "\r" && s[i + 1] === "\n" ? 2 : 1;
      line++;
      recordLine = line;
    } else {
      field += c;
      any = true;
      i++;
    }
  }
  if (quoted) throw new Error("A quoted field is not closed (a missing \")");
  if (any || field !== "" || record.length > 0) {
    record.push(field);
    records.push(record);
    lines.push(recordLine);
  }
  return records;
}

const STRATEGIES = new Set(["never", "daily", "weekly", "monthly"]);

function bool(field: string, v: string | undefined): boolean {
  const s = (v ?? "").trim().toLowerCase();
  if (s === "" || s === "true" || s === "1" || s === "yes") return true;
  if (s === "false" || s === "0" || s === "no") return false;
  throw new RowError(field, `must be true or false (got ${JSON.stringify(v)})`);
}

function int(field: string, v: string | undefined, min: number, max: number): number | null {
  const s = (v ?? "").trim();
  if (s === "") return null;
  if (!/^\d+$/.test(s) || Number(s) < min || Number(s) > max) throw new RowError(field, `must be a whole number from ${min} to ${max} (got ${JSON.stringify(s)})`);
  return Number(s);
}

function time(field: string, v: string | undefined): Date | null {
  const s = (v ?? "").trim();
  if (s === "" || s === "0") return null;
  const d = /^\d+$/.test(s) ? new Date(Number(s) * 1000) : new Date(s);
  if (Number.isNaN(d.getTime()) || d.getTime() > 253402300799000) throw new RowError(field, `must be an ISO 8601 date-time or unix seconds (got ${JSON.stringify(s)})`);
  return d;
}

export function parseCsv(bytesIn: Uint8Array): Parsed {
  const out = emptyParsed();
  let records: string[][];
  const lines: number[] = [];
  try {
    records = readCsv(Buffer.from(bytesIn).toString("utf8"), lines);
  } catch (err) {
    out.errors.push({ ref: "file", reason: (err as Error).message });
    return out;
  }
  while (records.length > 0 && (records[0]![0] ?? "").startsWith("#")) {
    records.shift();
    lines.shift();
  }
  lines.shift();
  const header = (records.shift() ?? []).map((h) => h.trim().toLowerCase());
  const unknown = header.filter((h) => !(CSV_COLUMNS as readonly string[]).includes(h));
  if (unknown.length > 0) out.errors.push({ ref: "header", reason: `Unknown column(s): ${unknown.join(", ")}; the columns are ${CSV_COLUMNS.join(", ")}` });
  if (!header.includes("name")) out.errors.push({ ref: "header", reason: "The header has no name column (the first line must name the columns)" });
  const dupes = header.filter((h, i) => header.indexOf(h) !== i);
  if (dupes.length > 0) out.errors.push({ ref: "header", reason: `Column(s) named twice: ${[...new Set(dupes)].join(", ")}` });
  if (out.errors.length > 0) return out;
  records.forEach((rec, k) => {
    const ref = `line ${lines[k]}`;
    mapRow(out, ref, () => {
      if (rec.length !== header.length) throw new RowError("row", `has ${rec.length} fields for ${header.length} columns`);
      const f = (name: string) => {
        const i = header.indexOf(name);
        return i === -1 ? undefined : rec[i];
      };
      const name = textOrNull(f("name"));
      if (!name) throw new RowError("name", "is missing");
      const strategy = (textOrNull(f("reset_strategy")) ?? "never").toLowerCase();
      if (!STRATEGIES.has(strategy)) throw new RowError("reset_strategy", `must be never, daily, weekly or monthly (got ${JSON.stringify(strategy)})`);
      const gb = textOrNull(f("traffic_limit_gb"));
      if (gb !== null && textOrNull(f("traffic_limit_bytes")) !== null) throw new RowError("traffic_limit_gb", "and traffic_limit_bytes are both set: give one");
      let limit = bytes("traffic_limit_bytes", f("traffic_limit_bytes"), true);
      if (gb !== null) {
        const n = Number(gb);
        if (!Number.isFinite(n) || n <= 0 || n * GIB > Number.MAX_SAFE_INTEGER) throw new RowError("traffic_limit_gb", `must be a positive number (got ${JSON.stringify(gb)})`);
        limit = Math.round(n * GIB);
      }
      const total = textOrNull(f("used_bytes"));
      if (total !== null && (textOrNull(f("used_up_bytes")) !== null || textOrNull(f("used_down_bytes")) !== null)) throw new RowError("used_bytes", "and used_up_bytes/used_down_bytes are both set: give one or the other");
      const subUrl = textOrNull(f("sub_url"));
      return {
        ref,
        name,
        vlessUuid: uuidOrNull("uuid", f("uuid")),
        trojanPassword: textOrNull(f("trojan_password")),
        enabled: bool("enabled", f("enabled")),
        expiresAt: time("expires_at", f("expires_at")),
        holdDays: int("hold_days", f("hold_days"), 1, 3650),
        trafficLimitBytes: limit === 0 ? null : limit,
        upBytes: bytes("used_up_bytes", f("used_up_bytes"), false) ?? 0,
        downBytes: total !== null ? (bytes("used_bytes", total, false) ?? 0) : (bytes("used_down_bytes", f("used_down_bytes"), false) ?? 0),
        resetStrategy: strategy as ResetStrategy,
        resetDay: int("reset_day", f("reset_day"), 1, 31),
        note: textOrNull(f("note")),
        legacyKey: textOrNull(f("sub_token")) ?? (subUrl ? (subUrl.split(/[?#]/)[0]!.split("/").filter(Boolean).pop() ?? null) : null),
        legacyUrl: subUrl,
      };
    });
  });
  return out;
}
