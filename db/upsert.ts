import { getTableColumns, sql, type SQL } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";

/**
 * The `set` of an upsert that overwrites `keys` with the row being inserted
 * (`on conflict … do update set col = excluded.col`), named once by property so that the
 * column names cannot drift from the schema.
 */
export function fromExcluded<T extends PgTable, K extends keyof T["_"]["columns"] & string>(table: T, keys: readonly K[]): Record<K, SQL> {
  const columns = getTableColumns(table);
  return Object.fromEntries(keys.map((k) => [k, sql`excluded.${sql.identifier(columns[k]!.name)}`])) as Record<K, SQL>;
}
