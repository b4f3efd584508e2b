/** The probe editor's header fields as text: "Name: value" lines ⇄ a header record. */

/** Parses the lines; an error names the first line without a colon. */
export function parseHeaderLines(text: string): { ok: true; value: Record<string, string> } | { ok: false; error: string } {
  const out: Record<string, string> = {};
  const lines = text.split("\n");
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === "") continue;
    const c = line.indexOf(":");
    if (c <= 0) return { ok: false, error: `line ${i + 1}: write "Name: value"` };
    out[line.slice(0, c).trim()] = line.slice(c + 1).trim();
  }
  return { ok: true, value: out };
}

export function headerLines(h: Record<string, string> | undefined | null): string {
  return Object.entries(h ?? {})
    .map(([k, v]) => `${k}: ${v}`)
    .join("\n");
}
