/** Display helpers of the health page (pure, browser-safe). */

export const STATUS_STYLE: Record<string, { dot: string; text: string; badge: string }> = {
  healthy: { dot: "bg-green-500", text: "text-green-800", badge: "bg-green-100 text-green-800 ring-green-600/20" },
  disabled: { dot: "bg-slate-400", text: "text-slate-600", badge: "bg-slate-100 text-slate-700 ring-slate-500/20" },
  pending: { dot: "bg-sky-400", text: "text-sky-800", badge: "bg-sky-50 text-sky-800 ring-sky-600/20" },
  "no-data": { dot: "bg-amber-500", text: "text-amber-800", badge: "bg-amber-50 text-amber-800 ring-amber-600/20" },
  unavailable: { dot: "bg-red-500", text: "text-red-800", badge: "bg-red-50 text-red-800 ring-red-600/20" },
  "probe-failing": { dot: "bg-red-500", text: "text-red-800", badge: "bg-red-50 text-red-800 ring-red-600/20" },
  unreachable: { dot: "bg-orange-500", text: "text-orange-800", badge: "bg-orange-50 text-orange-800 ring-orange-600/20" },
};

export function statusStyle(status: string) {
  return STATUS_STYLE[status] ?? STATUS_STYLE.disabled!;
}

export function formatBps(bps: number): string {
  if (!Number.isFinite(bps) || bps <= 0) return "0 bit/s";
  const units = ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"];
  let v = bps;
  let i = 0;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${v >= 100 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

/** "12 s ago", "5 min ago", "3 h ago", "2 days ago"; null → "never". */
export function ago(at: Date | string | null | undefined, nowMs: number): string {
  if (!at) return "never";
  const ms = nowMs - new Date(at).getTime();
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 36) return `${h} h ago`;
  return `${Math.round(h / 24)} days ago`;
}

/** "Name: value" lines ⇄ a header record. Returns an error for a line without a colon. */
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
