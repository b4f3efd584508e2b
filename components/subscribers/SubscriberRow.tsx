"use client";
import Link from "next/link";
import { CopyButton } from "@/components/ui/CopyButton";
import type { SubscriberListRow } from "@/server/accounts/subscriber-list";
import { formatBytes } from "./format";
import { subscriptionLink } from "./LinkDialog";
import { expiryText, lastSeenText, resetSchedule, statusBadge, usagePercent } from "./list-view";
import { FlagText } from "@/components/ui/Flag";
import { smallButton, smallDangerButton } from "@/components/ui/buttons";


/** A per-row action; the page opens the matching dialog or runs it. */
export type RowAction = "link" | "edit" | "toggle" | "resetUsage" | "rotate" | "delete";

function UsageBar({ row }: { row: SubscriberListRow }) {
  const pct = usagePercent(row.trafficUsedBytes, row.trafficLimitBytes);
  if (pct === null) return null;
  const color = pct >= 100 ? "bg-red-500" : pct >= 80 ? "bg-amber-500" : "bg-sky-500";
  return (
    <div role="progressbar" aria-label={`Usage of ${row.name}`} aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct} className="ml-2 inline-block h-1.5 w-12 overflow-hidden rounded-full bg-slate-200 align-middle">
      <div className={`h-full ${color}`} style={{ width: `${pct}%` }} />
    </div>
  );
}

/**
 * Route → server, at most two lines (a row stays about 44 px tall); every route with its
 * inbound is in the tooltip, and on the subscriber's page (Explanation).
 */
const ROUTES_SHOWN = 2;

function RoutesCell({ row }: { row: SubscriberListRow }) {
  if (row.routes === null) return <span className="text-xs text-slate-400">not fetched yet</span>;
  if (row.routes.length === 0) return <span className="text-xs text-slate-400">no route now</span>;
  const routes = row.routes;
  return (
    <ul className="max-w-[18rem] text-xs leading-4" title={routes.map((r) => `${r.route} → ${r.inbound} on ${r.server}`).join("\n")}>
      {routes.slice(0, ROUTES_SHOWN).map((r, i) => (
        <li key={r.routeId} className="truncate">
          <span className="font-medium text-slate-700">
            <FlagText text={r.route} />
          </span>
          <span className="text-slate-400"> → </span>
          <span className="text-slate-600">{r.server}</span>
          {i === ROUTES_SHOWN - 1 && routes.length > ROUTES_SHOWN && <span className="ml-1.5 font-medium text-slate-500">+{routes.length - ROUTES_SHOWN} more</span>}
        </li>
      ))}
    </ul>
  );
}

/** Two lines: used / limit with its bar, then upload · download and a ↻ whose tooltip is the reset schedule. */
function UsageCell({ row }: { row: SubscriberListRow }) {
  const schedule = resetSchedule(row);
  return (
    <td className={`${cell} text-slate-600`} data-testid="subscriber-usage">
      <div className="whitespace-nowrap leading-5">
        {formatBytes(row.trafficUsedBytes)} / {row.trafficLimitBytes ? formatBytes(row.trafficLimitBytes) : "unlimited"}
        <UsageBar row={row} />
      </div>
      <div className="whitespace-nowrap text-xs leading-4 text-slate-500">
        <span title="Upload / download">
          ↑ {formatBytes(row.trafficUpBytes)} · ↓ {formatBytes(row.trafficDownBytes)}
        </span>
        {schedule && (
          <span className="ml-1.5 cursor-help" title={`${schedule} (00:00 UTC)`}>
            <span aria-hidden="true">↻</span>
            <span className="sr-only" data-testid="subscriber-reset">
              {schedule}
            </span>
          </span>
        )}
      </div>
    </td>
  );
}

/** Every cell's padding: a row is about 44 px tall with two lines of text. */
const cell = "px-2 py-1";

function Actions({ row, origin, toggling, onAction }: { row: SubscriberListRow; origin: string; toggling: boolean; onAction: (a: RowAction) => void }) {
  const button = (action: RowAction, label: string, text: string, className = smallButton) => (
    <button type="button" className={className} aria-label={label} title={label} disabled={action === "toggle" && toggling} onClick={() => onAction(action)}>
      {text}
    </button>
  );
  return (
    <td className="whitespace-nowrap px-2 py-1 text-right">
      {row.token && (
        <>
          {button("link", `Show link of ${row.name}`, "QR")}
          <CopyButton text={subscriptionLink(origin, row.token)} label="Copy" className={smallButton} />
        </>
      )}
      {button("edit", `Edit subscriber ${row.name}`, "Edit")}
      {button("toggle", `${row.enabled ? "Disable" : "Enable"} subscriber ${row.name}`, row.enabled ? "Disable" : "Enable")}
      {button("resetUsage", `Reset usage of ${row.name}`, "Reset")}
      {button("rotate", `Rotate link of ${row.name}`, "Rotate")}
      {button("delete", `Delete subscriber ${row.name}`, "Delete", smallDangerButton)}
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
        <td className="py-1 pl-3 pr-1">
          <input type="checkbox" aria-label={`Select ${row.name}`} checked={selected} onChange={onSelect} />
        </td>
      )}
      <td className={`${cell} font-medium text-slate-900`}>
        {/* The plan beside the name, within the name's width: the table stays 1440 px wide. */}
        <div className="flex max-w-[12rem] min-w-0 items-center gap-1">
          <Link
            href={`/clusters/${clusterId}/subscribers/${row.id}`}
            className="truncate hover:text-sky-700 hover:underline"
            title={`${row.name}: usage history, links, devices, edit and the balancer's explanation`}
          >
            {row.name}
          </Link>
          {row.planName && (
            <span className="max-w-[5rem] shrink-0 truncate rounded bg-slate-100 px-1.5 py-0.5 text-xs font-normal text-slate-700" data-testid="subscriber-plan" title={`Plan: ${row.planName}`}>
              {row.planName}
            </span>
          )}
        </div>
      </td>
      <td className={cell}>
        <span className={`whitespace-nowrap rounded-full px-2 py-0.5 text-xs font-medium ${badge.className}`} data-testid="subscriber-status">
          {badge.label}
        </span>
      </td>
      <td className={`${cell} whitespace-nowrap text-slate-600`} data-testid="subscriber-expiry">
        {expiryText(row)}
      </td>
      <UsageCell row={row} />
      <td className={`${cell} whitespace-nowrap`} data-testid="subscriber-online">
        {row.online ? (
          <span className="inline-flex items-center gap-1 text-xs font-medium text-green-800">
            <span aria-hidden className="h-2 w-2 rounded-full bg-green-500" />
            Online now
          </span>
        ) : (
          <span className="text-xs text-slate-500">Offline</span>
        )}
      </td>
      <td className={`${cell} whitespace-nowrap text-slate-600`} data-testid="subscriber-last-seen" title={row.lastSeenAt ? row.lastSeenAt.toISOString() : undefined}>
        {lastSeenText(row.lastSeenAt, nowMs)}
      </td>
      <td className={cell} data-testid="subscriber-routes">
        <RoutesCell row={row} />
      </td>
      <td className={`${cell} whitespace-nowrap text-xs text-slate-500`} title={row.createdAt.toISOString()}>
        {row.createdAt.toLocaleDateString("en-CA")}
      </td>
      {canEdit && <Actions row={row} origin={origin} toggling={toggling} onAction={onAction} />}
    </tr>
  );
}
