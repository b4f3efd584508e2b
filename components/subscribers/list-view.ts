/**
 * What the subscribers list writes in its cells: the status badge, the expiry, the reset
 * schedule, last seen, the usage bar's share, sorting and the page range. Pure, so the rules
 * are unit-tested and the components only lay them out.
 */
import type { SubscriberSortKey, SubscriberStatus } from "@/core/validation";
import type { SubscriberListRow } from "@/server/accounts/subscriber-list";
import { formatUtcDay } from "./format";

/** The one label per status: the badge and the status filter both use it. */
export const STATUS_LABELS: Readonly<Record<SubscriberStatus, string>> = { active: "Active", limited: "Limit reached", expired: "Expired", disabled: "Disabled" };

const BADGE_CLASS: Readonly<Record<SubscriberStatus | "onHold", string>> = {
  active: "bg-green-100 text-green-800",
  onHold: "bg-sky-50 text-sky-800",
  limited: "bg-red-50 text-red-800",
  expired: "bg-amber-50 text-amber-800",
  disabled: "bg-slate-100 text-slate-700",
};

/**
 * The badge of a row. An active subscriber who has not connected yet (hold days set) is
 * "On hold": their expiry starts at first use. Disabled, expired and limited say so first.
 */
export function statusBadge(row: Pick<SubscriberListRow, "status" | "holdDays">): { label: string; className: string } {
  if (row.status === "active" && row.holdDays !== null) return { label: "On hold", className: BADGE_CLASS.onHold };
  return { label: STATUS_LABELS[row.status], className: BADGE_CLASS[row.status] };
}

/** "30 d from first connection" while on hold; else the expiry as yyyy-mm-dd, or "Never". */
export function expiryText(row: Pick<SubscriberListRow, "holdDays" | "expiresAt">): string {
  if (row.holdDays !== null) return `${row.holdDays} d from first connection`;
  return row.expiresAt ? row.expiresAt.toLocaleDateString("en-CA") : "Never";
}

const WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/**
 * "Resets monthly on day 31 · next 31 Dec 2026", "Resets weekly on Mon", "Resets daily";
 * null when usage never resets. Weekly days run 1 = Monday … 7 = Sunday, as the form sets them.
 */
export function resetSchedule(row: Pick<SubscriberListRow, "trafficResetStrategy" | "trafficResetDay" | "nextResetAt">): string | null {
  let text: string;
  switch (row.trafficResetStrategy) {
    case "daily":
      text = "Resets daily";
      break;
    case "weekly":
      text = `Resets weekly on ${WEEKDAYS[(row.trafficResetDay ?? 1) - 1] ?? "Mon"}`;
      break;
    case "monthly":
      text = `Resets monthly on day ${row.trafficResetDay ?? 1}`;
      break;
    default:
      return null;
  }
  return row.nextResetAt ? `${text} · next ${formatUtcDay(row.nextResetAt)}` : text;
}

/** "Never", "just now", "5 min ago", "3 h ago", "2 d ago"; a time ahead of `nowMs` is "just now". */
export function lastSeenText(at: Date | null, nowMs: number): string {
  if (!at) return "Never";
  const s = Math.max(0, (nowMs - at.getTime()) / 1000);
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** The usage bar's share in whole percent, capped at 100; null when there is no limit. */
export function usagePercent(usedBytes: number, limitBytes: number | null): number | null {
  if (!limitBytes || limitBytes <= 0) return null;
  return Math.min(100, Math.max(0, Math.round((usedBytes / limitBytes) * 100)));
}

export type SortState = { key: SubscriberSortKey; dir: "asc" | "desc" };

export const SORT_LABELS: Readonly<Record<SubscriberSortKey, string>> = { name: "name", usage: "usage", lastSeen: "last seen", expiry: "expiry", created: "created" };

/** The direction a column sorts in on its first click: the most telling rows first. */
const FIRST_DIR: Readonly<Record<SubscriberSortKey, "asc" | "desc">> = { name: "asc", usage: "desc", lastSeen: "desc", expiry: "asc", created: "desc" };

/** A click on a column header: the same column turns round, another starts at its first direction. */
export function nextSort(current: SortState, key: SubscriberSortKey): SortState {
  if (current.key === key) return { key, dir: current.dir === "asc" ? "desc" : "asc" };
  return { key, dir: FIRST_DIR[key] };
}

/** "51–60 of 60" (the rows shown, 1-based); "0 of 60" on an empty page. */
export function pageRange(page: number, pageSize: number, shown: number, total: number): string {
  const n = (v: number) => v.toLocaleString("en");
  if (shown === 0) return `0 of ${n(total)}`;
  const first = (page - 1) * pageSize + 1;
  return `${n(first)}–${n(first + shown - 1)} of ${n(total)}`;
}
