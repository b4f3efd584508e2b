/** Rows of tx.execute on either driver (node-postgres: { rows }, PGlite: { rows } too). */
export function rowsOf<T>(r: unknown): T[] {
  return (Array.isArray(r) ? r : ((r as { rows?: T[] }).rows ?? [])) as T[];
}
