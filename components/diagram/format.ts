/** Display helpers of the diagram: units, status labels and colours, flags. Pure. */

const UNITS = ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"];

/** 12_300_000 → "12.3 Mbit/s". */
export function formatBps(bps: number): string {
  if (!Number.isFinite(bps) || bps <= 0) return "0 bit/s";
  let v = bps;
  let u = 0;
  while (v >= 1000 && u < UNITS.length - 1) {
    v /= 1000;
    u++;
  }
  const digits = v >= 100 || u === 0 ? 0 : 1;
  return `${v.toFixed(digits)} ${UNITS[u]}`;
}

export type ServerStatus = "disabled" | "pending" | "no-data" | "unavailable" | "probe-failing" | "unreachable" | "healthy";

export const STATUS: Record<ServerStatus, { label: string; dot: string; text: string; border: string }> = {
  disabled: { label: "Disabled by operator", dot: "bg-slate-400", text: "text-slate-600", border: "border-slate-300" },
  pending: { label: "Waiting for first check", dot: "bg-sky-400", text: "text-sky-700", border: "border-sky-200" },
  "no-data": { label: "No data from server", dot: "bg-amber-500", text: "text-amber-700", border: "border-amber-300" },
  unavailable: { label: "Server unavailable", dot: "bg-red-600", text: "text-red-700", border: "border-red-300" },
  "probe-failing": { label: "Health probe failing", dot: "bg-red-500", text: "text-red-700", border: "border-red-300" },
  unreachable: { label: "Unreachable from your servers", dot: "bg-red-700", text: "text-red-800", border: "border-red-300" },
  healthy: { label: "Healthy", dot: "bg-green-600", text: "text-green-700", border: "border-green-300" },
};

export function statusInfo(status: string) {
  return STATUS[(status in STATUS ? status : "pending") as ServerStatus];
}

/** "US" → 🇺🇸; anything else → "". */
export function flagEmoji(code: string | null | undefined): string {
  if (!code || !/^[A-Za-z]{2}$/.test(code)) return "";
  return String.fromCodePoint(...[...code.toUpperCase()].map((c) => 0x1f1e6 + c.charCodeAt(0) - 65));
}

/** The flag to show before a route's name, unless its name already starts with it. */
export function routeFlagPrefix(name: string, flag: string | null): string {
  const emoji = flagEmoji(flag);
  return emoji && !name.startsWith(emoji) ? emoji : "";
}

export const ALGORITHM_LABEL: Record<string, string> = {
  "least-traffic": "Least loaded by traffic",
  "round-robin": "Round-robin (weighted)",
};

/** Distinct, readable colours for routes, by position. */
const PALETTE = ["#0284c7", "#7c3aed", "#db2777", "#059669", "#ea580c", "#4f46e5", "#0d9488", "#b45309", "#be123c", "#65a30d"];
export function routeColor(index: number): string {
  return PALETTE[((index % PALETTE.length) + PALETTE.length) % PALETTE.length]!;
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
