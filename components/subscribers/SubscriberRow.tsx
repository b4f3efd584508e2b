"use client";
import Link from "next/link";
import { CopyButton } from "@/components/ui/CopyButton";
import type { SubscriberListRow } from "@/server/accounts/subscriber-list";
import { formatBytes } from "./format";
import { subscriptionLink } from "./LinkDialog";
import { expiryText, lastSeenText, resetSchedule, statusBadge, usagePercent } from "./list-view";
import { FlagText } from "@/components/ui/Flag";

export const smallButton = "rounded px-2 py-1 text-xs font-medium text-slate-600 hover:bg-slate-100 hover:text-slate-900 disabled:opacity-50";

/** A per-row action; the page opens the matching dialog or runs it. */
export type RowAction = "link" | "edit" | "toggle" | "resetUsage" | "rotate" | "delete";

function UsageBar({ row }: { row: SubscriberListRow }) {
  const pct = usagePercent(row.trafficUsedBytes, row.trafficLimitBytes);
  if (pct === null) return null;
  const color = pct >= 100 ? "bg-red-500" : pct >= 80 ? "bg-amber-500" : "bg-sky-500";
  return (
    <div role="progressbar" aria-label={`Usage of ${row.name}`} aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct} className="my-1 h-1.5 w-32 overflow-hidden rounded-full bg-slate-200">
      <div className={`h-full ${color}`} style={{ width: `${pct}%` }} />
    </div>
  );
}

function RoutesCell({ row }: { row: SubscriberListRow }) {
  if (row.routes === null) return <span className="text-xs text-slate-400">not fetched yet</span>;
  if (row.routes.length === 0) return <span className="text-xs text-slate-400">no route now</span>;
  return (
    <ul className="space-y-0.5 text-xs">
      {row.routes.map((r) => (
        <li key={r.routeId} title={`${r.route}: inbound ${r.inbound} on server ${r.server}`}>
          <span className="font-medium text-slate-700">
            <FlagText text={r.route} />
          </span>
          <span className="text-slate-400"> → </span>
          <span className="text-slate-600">
            {r.server} · <FlagText text={r.inbound} />
          </span>
        </li>
      ))}
    </ul>
  );
}

function UsageCell({ row }: { row: SubscriberListRow }) {
  const schedule = resetSchedule(row);
  return (
    <td className="px-3 py-2.5 text-slate-600" data-testid="subscriber-usage">
      <div>
        {formatBytes(row.trafficUsedBytes)} / {row.trafficLimitBytes ? formatBytes(row.trafficLimitBytes) : "unlimited"}
      </div>
      <UsageBar row={row} />
      <div className="text-xs text-slate-500" title="Upload / download">
        ↑ {formatBytes(row.trafficUpBytes)} · ↓ {formatBytes(row.trafficDownBytes)}
      </div>
      {schedule && (
        <div className="text-xs text-slate-500" data-testid="subscriber-reset" title="Resets happen at 00:00 UTC">
          {schedule}
        </div>
      )}
    </td>
  );
}

function Actions({ row, origin, toggling, onAction }: { row: SubscriberListRow; origin: string; toggling: boolean; onAction: (a: RowAction) => void }) {
  const button = (action: RowAction, label: string, text: string, extra = "") => (
    <button type="button" className={`${smallButton} ${extra}`} aria-label={label} disabled={action === "toggle" && toggling} onClick={() => onAction(action)}>
      {text}
    </button>
  );
  return (
    <td className="whitespace-nowrap px-4 py-2 text-right">
      {row.token && (
        <>
          {button("link", `Show link of ${row.name}`, "Link & QR")}
          <CopyButton text={subscriptionLink(origin, row.token)} label="Copy link" className={smallButton} />
        </>
      )}
      {button("edit", `Edit subscriber ${row.name}`, "Edit")}
      {button("toggle", `${row.enabled ? "Disable" : "Enable"} subscriber ${row.name}`, row.enabled ? "Disable" : "Enable")}
      {button("resetUsage", `Reset usage of ${row.name}`, "Reset usage")}
      {button("rotate", `Rotate link of ${row.name}`, "Rotate link")}
      {button("delete", `Delete subscriber ${row.name}`, "Delete", "text-red-700 hover:bg-red-50")}
    </td>
  );
}

/** One subscriber: status, expiry, usage with its bar and reset schedule, presence, routes, actions. */
export function SubscriberRow({
  row,
  clusterId,
  canEdit,
  selected,
  onSelect,
  nowMs,
  origin,
  toggling,
  onAction,
}: {
  row: SubscriberListRow;
  clusterId: string;
  canEdit: boolean;
  selected: boolean;
  onSelect: () => void;
  /** When the rows were read: "last seen" counts from it. */
  nowMs: number;
  origin: string;
  toggling: boolean;
  onAction: (a: RowAction) => void;
}) {
  const badge = statusBadge(row);
  return (
    <tr data-testid="subscriber-row" className={selected ? "bg-sky-50/50" : undefined}>
      {canEdit && (
        <td className="pl-4 pr-1 py-2.5">
          <input type="checkbox" aria-label={`Select ${row.name}`} checked={selected} onChange={onSelect} />
        </td>
      )}
      <td className="px-4 py-2.5 font-medium text-slate-900">
        <Link href={`/clusters/${clusterId}/subscribers/${row.id}`} className="hover:text-sky-700 hover:underline" title="What this subscriber's app gets right now, and why">
          {row.name}
        </Link>
      </td>
      <td className="px-3 py-2.5">
        <span className={`whitespace-nowrap rounded-full px-2 py-0.5 text-xs font-medium ${badge.className}`} data-testid="subscriber-status">
          {badge.label}
        </span>
      </td>
      <td className="px-3 py-2.5 text-slate-600" data-testid="subscriber-expiry">
        {expiryText(row)}
      </td>
      <UsageCell row={row} />
      <td className="px-3 py-2.5" data-testid="subscriber-online">
        {row.online ? (
          <span className="inline-flex items-center gap-1 text-xs font-medium text-green-800">
            <span aria-hidden className="h-2 w-2 rounded-full bg-green-500" />
            Online now
          </span>
        ) : (
          <span className="text-xs text-slate-500">Offline</span>
        )}
      </td>
      <td className="px-3 py-2.5 text-slate-600" data-testid="subscriber-last-seen" title={row.lastSeenAt ? row.lastSeenAt.toISOString() : undefined}>
        {lastSeenText(row.lastSeenAt, nowMs)}
      </td>
      <td className="px-3 py-2.5" data-testid="subscriber-routes">
        <RoutesCell row={row} />
      </td>
      <td className="px-3 py-2.5 text-xs text-slate-500" title={row.createdAt.toISOString()}>
        {row.createdAt.toLocaleDateString("en-CA")}
      </td>
      {canEdit && <Actions row={row} origin={origin} toggling={toggling} onAction={onAction} />}
    </tr>
  );
}
