/**
 * Rows of a MySQL/MariaDB dump (mysqldump's `INSERT INTO \`t\` [(cols)] VALUES (...),(...);`),
 * read without a database: a small tokenizer for MySQL's literal syntax. Column names come
 * from the INSERT's own list, else from the table's CREATE TABLE in the same dump.
 *
 * Strings: '...' or "..." with backslash escapes (\0 \' \" \b \n \r \t \Z \\ \% \_) and a
 * doubled quote; NULL; numbers; 0x hex and _binary/_utf8mb4 introducers.
 */

export type SqlValue = string | number | null;

export class DumpError extends Error {}

const ESCAPES: Record<string, string> = { "0": "\0", b: "\b", n: "\n", r: "\r", t: "\t", Z: "\x1a" };

/** Every row of `table` as objects keyed by column name. */
export function dumpRows(dump: string, table: string): Array<Record<string, SqlValue>> {
  const columnsFromCreate = createTableColumns(dump, table);
  const out: Array<Record<string, SqlValue>> = [];
  const head = new RegExp("INSERT\\s+(?:IGNORE\\s+)?INTO\\s+[`\"]?" + table.replace(/[^a-z0-9_]/gi, "") + "[`\"]?\\s*(\\(([^)]*)\\))?\\s*VALUES\\s*", "gi");
  let m: RegExpExecArray | null;
  while ((m = head.exec(dump))) {
    const cols = m[2] ? m[2].split(",").map((c) => c.trim().replace(/^[`"]|[`"]$/g, "")) : columnsFromCreate;
    if (!cols) throw new DumpError(`INSERT INTO ${table} without a column list, and no CREATE TABLE ${table} in the dump`);
    const { rows, end } = readTuples(dump, head.lastIndex);
    for (const values of rows) {
      if (values.length !== cols.length) throw new DumpError(`a row of ${table} has ${values.length} values for ${cols.length} columns`);
      const row: Record<string, SqlValue> = {};
      cols.forEach((c, i) => (row[c] = values[i]!));
      out.push(row);
    }
    head.lastIndex = end;
  }
  return out;
}

function createTableColumns(dump: string, table: string): string[] | null {
  const m = new RegExp("CREATE\\s+TABLE\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?[`\"]?" + table.replace(/[^a-z0-9_]/gi, "") + "[`\"]?\\s*\\(", "i").exec(dump);
  if (!m) return null;
  const cols: string[] = [];
  let depth = 1;
  let i = m.index + m[0].length;
  let lineStart = i;
  for (; i < dump.length && depth > 0; i++) {
    const c = dump[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    if ((c === "\n" || depth === 0) && depth <= 1) {
      const line = dump.slice(lineStart, i).trim();
      const col = /^[`"]([^`"]+)[`"]\s/.exec(line);
      if (col) cols.push(col[1]!);
      lineStart = i + 1;
    }
  }
  return cols;
}

/** `(v, v, ...), (...) ;` from `at`: the tuples and where the statement ends. */
export function readTuples(s: string, at: number): { rows: SqlValue[][]; end: number } {
  const rows: SqlValue[][] = [];
  let i = at;
  const skipSpace = () => {
    while (i < s.length && /\s/.test(s[i]!)) i++;
  };
  for (;;) {
    skipSpace();
    if (s[i] !== "(") throw new DumpError(`expected "(" at offset ${i}`);
    i++;
    const values: SqlValue[] = [];
    for (;;) {
      skipSpace();
      const { value, next } = readValue(s, i);
      values.push(value);
      i = next;
      skipSpace();
      if (s[i] === ",") {
        i++;
        continue;
      }
      if (s[i] === ")") {
        i++;
        break;
      }
      throw new DumpError(`expected "," or ")" at offset ${i}`);
    }
    rows.push(values);
    skipSpace();
    if (s[i] === ",") {
      i++;
      continue;
    }
    if (s[i] === ";" || i >= s.length) return { rows, end: i + 1 };
    throw new DumpError(`expected "," or ";" after a row at offset ${i}`);
  }
}

function readValue(s: string, i: number): { value: SqlValue; next: number } {
  const intro = /^_[a-z0-9]+\s*/i.exec(s.slice(i, i + 20));
  if (intro && (s[i + intro[0].length] === "'" || s[i + intro[0].length] === '"')) i += intro[0].length;
  const c = s[i];
  if (c === "'" || c === '"') {
    let out = "";
    let j = i + 1;
    for (;;) {
      if (j >= s.length) throw new DumpError(`unterminated string at offset ${i}`);
      const d = s[j]!;
      if (d === "\\") {
        const e = s[j + 1];
        if (e === undefined) throw new DumpError(`unterminated string at offset ${i}`);
        out += ESCAPES[e] ?? e;
        j += 2;
        continue;
      }
      if (d === c) {
        if (s[j + 1] === c) {
          out += c;
          j += 2;
          continue;
        }
        return { value: out, next: j + 1 };
      }
      out += d;
      j++;
    }
  }
  const word = /^(NULL|0x[0-9a-f]*|[-+]?\d+(\.\d+)?(e[-+]?\d+)?)/i.exec(s.slice(i, i + 64));
  if (!word) throw new DumpError(`cannot read a value at offset ${i}: ${JSON.stringify(s.slice(i, i + 20))}`);
  const w = word[0];
  if (/^NULL$/i.test(w)) return { value: null, next: i + w.length };
  if (/^0x/i.test(w)) return { value: Buffer.from(w.slice(2), "hex").toString("utf8"), next: i + w.length };
  // Integers beyond 2^53 stay text: the caller range-checks them (bytes()).
  const n = Number(w);
  return { value: /^[-+]?\d+$/.test(w) && !Number.isSafeInteger(n) ? w : n, next: i + w.length };
}
