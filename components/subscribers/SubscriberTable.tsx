"use client";
import { inputClass, secondaryButtonClass } from "@/components/ui/Field";
import type { SubscriberSortKey } from "@/core/validation";
import type { SubscriberListRow } from "@/server/accounts/subscriber-list";
import { pageRange, SORT_LABELS, type SortState } from "./list-view";
import { SubscriberRow, type RowAction } from "./SubscriberRow";

export const PAGE_SIZES = [25, 50, 100, 200];

function SortHeader({ k, label, sort, onSort, className = "whitespace-nowrap px-2 py-2 font-medium" }: { k: SubscriberSortKey; label: string; sort: SortState; onSort: (k: SubscriberSortKey) => void; className?: string }) {
  const active = sort.key === k;
  return (
    <th className={className} aria-sort={active ? (sort.dir === "asc" ? "ascending" : "descending") : "none"}>
      <button type="button" className={`inline-flex items-center gap-1 uppercase tracking-wide hover:text-slate-900 ${active ? "text-slate-900" : ""}`} aria-label={`Sort by ${SORT_LABELS[k]}`} onClick={() => onSort(k)}>
        {label}
        <span aria-hidden className="text-[10px]">
          {active ? (sort.dir === "asc" ? "▲" : "▼") : "↕"}
        </span>
      </button>
    </th>
  );
}

/** One page of subscribers as a table; the sortable columns sort on the server. */
export function SubscriberTable({
  rows,
  clusterId,
  canEdit,
  sort,
  onSort,
  isSelected,
  pageAllSelected,
  onToggle,
  onTogglePage,
  nowMs,
  origin,
  toggling,
  onAction,
}: {
  rows: SubscriberListRow[];
  clusterId: string;
  canEdit: boolean;
  sort: SortState;
  onSort: (k: SubscriberSortKey) => void;
  isSelected: (id: string) => boolean;
  pageAllSelected: boolean;
  onToggle: (id: string) => void;
  onTogglePage: () => void;
  nowMs: number;
  origin: string;
  toggling: boolean;
  onAction: (a: RowAction, row: SubscriberListRow) => void;
}) {
  const header = (k: SubscriberSortKey, label: string, className?: string) => <SortHeader k={k} label={label} sort={sort} onSort={onSort} className={className} />;
  return (
    <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white shadow-sm">
      <table className="w-full text-left text-sm">
        <thead className="border-b border-slate-200 bg-slate-50 text-xs uppercase tracking-wide text-slate-500">
          <tr>
            {canEdit && (
              <th className="w-8 py-2 pl-3 pr-1">
                <input type="checkbox" aria-label="Select every subscriber on this page" checked={pageAllSelected} onChange={onTogglePage} />
              </th>
            )}
            {header("name", "Name")}
            <th className="px-2 py-2 font-medium">Status</th>
            {header("expiry", "Expires")}
            {header("usage", "Usage")}
            <th className="px-2 py-2 font-medium">Online</th>
            {header("lastSeen", "Last seen")}
            <th className="px-2 py-2 font-medium">Server per route</th>
            {header("created", "Created")}
            {canEdit && <th className="px-2 py-2 text-right font-medium">Actions</th>}
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-100">
          {rows.map((s) => (
            <SubscriberRow
              key={s.id}
              row={s}
              clusterId={clusterId}
              canEdit={canEdit}
              selected={isSelected(s.id)}
              onSelect={() => onToggle(s.id)}
              nowMs={nowMs}
              origin={origin}
              toggling={toggling}
              onAction={(a) => onAction(a, s)}
            />
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** "51–60 of 60", previous and next, and the page size. */
export function SubscriberPager({
  page,
  requested,
  pageSize,
  pageCount,
  shown,
  total,
  onPage,
  onPageSize,
}: {
  /** The page the rows shown are from. */
  page: number;
  /** The page asked for: it runs ahead of `page` while the next one loads. */
  requested: number;
  pageSize: number;
  pageCount: number;
  shown: number;
  total: number;
  onPage: (page: number) => void;
  onPageSize: (size: number) => void;
}) {
  return (
    <nav aria-label="Pages" className="mt-3 flex flex-wrap items-center gap-3 text-sm text-slate-600">
      <span data-testid="page-range">{pageRange(page, pageSize, shown, total)}</span>
      <button type="button" className={secondaryButtonClass} disabled={requested <= 1} onClick={() => onPage(Math.max(1, requested - 1))}>
        Previous page
      </button>
      <span>
        Page {page.toLocaleString("en")} of {pageCount.toLocaleString("en")}
      </span>
      <button type="button" className={secondaryButtonClass} disabled={requested >= pageCount} onClick={() => onPage(Math.min(pageCount, requested + 1))}>
        Next page
      </button>
      <label className="ml-auto flex items-center gap-2">
        Per page
        <select className={inputClass} value={pageSize} onChange={(e) => onPageSize(Number(e.target.value))}>
          {PAGE_SIZES.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </label>
    </nav>
  );
}
