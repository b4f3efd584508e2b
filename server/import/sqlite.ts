/**
 * Reading another panel's SQLite file (Marzban's db.sqlite3, 3x-ui's x-ui.db) with sql.js:
 * SQLite compiled to WASM, so no native build (Node 20 has no node:sqlite). The file is
 * opened in memory from the uploaded bytes; nothing touches the disk.
 */
import initSqlJs, { type Database } from "sql.js";

export type SqliteRow = Record<string, string | number | null>;

let engine: ReturnType<typeof initSqlJs> | null = null;

export const SQLITE_MAGIC = Buffer.from("SQLite format 3\0", "latin1");

export function isSqlite(bytes: Uint8Array): boolean {
  return bytes.length >= 16 && Buffer.from(bytes.subarray(0, 16)).equals(SQLITE_MAGIC);
}

export async function withSqlite<T>(bytes: Uint8Array, read: (db: Database) => T): Promise<T> {
  engine ??= initSqlJs();
  const SQL = await engine;
  const db = new SQL.Database(bytes);
  try {
    return read(db);
  } finally {
    db.close();
  }
}

export function tableExists(db: Database, table: string): boolean {
  return db.exec("select 1 from sqlite_master where type = 'table' and name = ?", [table]).length > 0;
}

export function columnsOf(db: Database, table: string): Set<string> {
  const res = db.exec(`pragma table_info("${table.replace(/"/g, "")}")`);
  return new Set((res[0]?.values ?? []).map((r) => String(r[1])));
}

export function allRows(db: Database, sql: string): SqliteRow[] {
  const stmt = db.prepare(sql);
  const out: SqliteRow[] = [];
  try {
    while (stmt.step()) out.push(stmt.getAsObject() as SqliteRow);
  } finally {
    stmt.free();
  }
  return out;
}
