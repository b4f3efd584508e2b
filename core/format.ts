/**
 * How the product writes numbers, statuses, flags and algorithms for people. Pure and
 * browser-safe: the diagram, the health page, the servers page and the server all use these,
 * so a label or a rounding reads the same everywhere.
 */
import { STATUS_LABELS, type ServerStatus } from "./status";
import { HEARTBEAT_INTERVAL_S, LATE_AFTER_MISSED, SUSPECT_AFTER_MISSED, type HeartbeatPhase } from "./heartbeat";

const UNITS = ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"];

/** 12_300_000 → "12.3 Mbit/s"; 250_000_000 → "250 Mbit/s"; whole bits below 1 kbit/s. */
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

export { plural } from "./plural";

/** "12 s", "5 min", "3 h", "2 days"; a negative or unknown span is "0 s". */
export function span(ms: number): string {
  const s = Number.isFinite(ms) ? Math.max(0, Math.round(ms / 1000)) : 0;
  if (s < 90) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m} min`;
  const h = Math.round(m / 60);
  if (h < 36) return `${h} h`;
  return `${Math.round(h / 24)} days`;
}

/** "12 s ago", "5 min ago", "3 h ago", "2 days ago"; null → "never"; a future time → "0 s ago". */
export function ago(at: Date | string | null | undefined, nowMs: number): string {
  if (!at) return "never";
  return `${span(nowMs - new Date(at).getTime())} ago`;
}

/** What the heartbeat line means, for its tooltip. */
export const HEARTBEAT_EXPLAINED = `The agent sends a heartbeat every ${HEARTBEAT_INTERVAL_S} s. Silent for ${LATE_AFTER_MISSED * HEARTBEAT_INTERVAL_S} s, the panel probes its port; silent for ${SUSPECT_AFTER_MISSED * HEARTBEAT_INTERVAL_S} s with those probes failing, its users move at their next fetch. A silent agent whose port still answers (a busy machine) keeps its users, and so does every server while more than half of them fall silent at once (the panel's own network).`;

/**
 * The health page's line for a server's heartbeats (the fast failover path, core/heartbeat.ts),
 * from the panel's view as of its answer: its phase, the silence then, and a confirmed loss.
 */
export function heartbeatLine(h: { phase: HeartbeatPhase; silenceMs: number | null; lost: boolean }): { text: string; tone: "ok" | "warn" | "bad" | "muted" } {
  const silent = span(h.silenceMs ?? 0);
  if (h.lost) return { tone: "bad", text: `no heartbeat for ${silent} and the fast probes failed: out of rotation until one arrives` };
  switch (h.phase) {
    case "never":
      return { tone: "muted", text: "no heartbeats from this agent: only reports and probes can take it out of rotation" };
    case "alive":
      return { tone: "ok", text: `heartbeats arriving (every ${HEARTBEAT_INTERVAL_S} s)` };
    case "late":
      return { tone: "warn", text: `heartbeat late: none for ${silent} · fast probes under way` };
    case "suspect":
      return { tone: "warn", text: `no heartbeat for ${silent} · its users move only if the fast probes fail too` };
    case "stale":
      return { tone: "warn", text: `no heartbeat for ${silent}: reports and probes decide, as for an agent without heartbeats` };
  }
}

/** "US" or "us" → 🇺🇸 (two regional indicator symbols); anything but two letters → "". */
export function flagEmoji(code: string | null | undefined): string {
  if (!code || !/^[A-Za-z]{2}$/.test(code)) return "";
  return String.fromCodePoint(...[...code.toUpperCase()].map((c) => 0x1f1e6 + c.charCodeAt(0) - 65));
}

/** The flag to show before a route's name, unless its name already starts with it. */
export function routeFlagPrefix(name: string, flag: string | null | undefined): string {
  const emoji = flagEmoji(flag);
  return emoji && !name.startsWith(emoji) ? emoji : "";
}

/**
 * What name VPN apps give a route's line (issue 25): the chosen inbound's (the default, DESIGN §1:
 * the route is the operator's signboard) or the route's own, for one stable name.
 */
export const LINE_NAMES = ["inbound", "route"] as const;
export type LineName = (typeof LINE_NAMES)[number];
export const DEFAULT_LINE_NAME: LineName = "inbound";

/** The name a route's line gets in the app when the route names it: its flag (unless the name starts with it) and its name. */
export function routeLineName(name: string, flag: string | null | undefined): string {
  const prefix = routeFlagPrefix(name, flag);
  return prefix ? `${prefix} ${name}` : name;
}

/** The load-balancing algorithms of a route (DESIGN §2); the first is the default. */
export const ALGORITHMS = ["least-traffic", "round-robin"] as const;
export type Algorithm = (typeof ALGORITHMS)[number];
export const DEFAULT_ALGORITHM: Algorithm = "least-traffic";

export const ALGORITHM_LABELS: Readonly<Record<Algorithm, string>> = {
  "least-traffic": "Least loaded by traffic",
  "round-robin": "Round-robin (weighted)",
};

/** One sentence per algorithm saying where a new user goes. */
export const ALGORITHM_SENTENCES: Readonly<Record<Algorithm, string>> = {
  "least-traffic": "Each new user goes to the server with the most free bandwidth per user, learned from its traffic and link capacity.",
  "round-robin": "Each new user goes to the server with the fewest users relative to its coefficient, so a server with 2.0 takes twice as many.",
};

/** The label of an algorithm; an unknown value is shown as it is. */
export function algorithmLabel(algorithm: string): string {
  return (ALGORITHM_LABELS as Record<string, string>)[algorithm] ?? algorithm;
}

export interface StatusStyle {
  label: string;
  /** Tailwind classes: the status dot, the label's text, a box border, a pill badge. */
  dot: string;
  text: string;
  border: string;
  badge: string;
}

const STATUS_COLOURS: Readonly<Record<ServerStatus, Omit<StatusStyle, "label">>> = {
  disabled: { dot: "bg-slate-400", text: "text-slate-600", border: "border-slate-300", badge: "bg-slate-100 text-slate-700 ring-slate-500/20" },
  pending: { dot: "bg-sky-400", text: "text-sky-700", border: "border-sky-200", badge: "bg-sky-50 text-sky-800 ring-sky-600/20" },
  "no-data": { dot: "bg-amber-500", text: "text-amber-700", border: "border-amber-300", badge: "bg-amber-50 text-amber-800 ring-amber-600/20" },
  unavailable: { dot: "bg-red-600", text: "text-red-700", border: "border-red-300", badge: "bg-red-50 text-red-800 ring-red-600/20" },
  "probe-failing": { dot: "bg-red-500", text: "text-red-700", border: "border-red-300", badge: "bg-red-50 text-red-800 ring-red-600/20" },
  unreachable: { dot: "bg-red-700", text: "text-red-800", border: "border-red-300", badge: "bg-red-50 text-red-800 ring-red-600/20" },
  healthy: { dot: "bg-green-600", text: "text-green-700", border: "border-green-300", badge: "bg-green-100 text-green-800 ring-green-600/20" },
};

/** Label and colours of a status (DESIGN §3); an unknown value is shown as `pending`. */
export function statusStyle(status: string): StatusStyle {
  const s = (status in STATUS_COLOURS ? status : "pending") as ServerStatus;
  return { label: STATUS_LABELS[s], ...STATUS_COLOURS[s] };
}

/** Distinct, readable colours for routes, by position. */
const PALETTE = ["#0284c7", "#7c3aed", "#db2777", "#059669", "#ea580c", "#4f46e5", "#0d9488", "#b45309", "#be123c", "#65a30d"];
export function routeColor(index: number): string {
  return PALETTE[((index % PALETTE.length) + PALETTE.length) % PALETTE.length]!;
}
