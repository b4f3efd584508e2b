"use client";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import Link from "next/link";
import { useDeferredValue, useEffect, useState } from "react";
import { useCanEdit, useDashboardOrigin } from "@/components/AppShell";
import { CopyButton } from "@/components/ui/CopyButton";
import { ConfirmDialog } from "@/components/ui/Dialog";
import { buttonClass, inputClass, secondaryButtonClass } from "@/components/ui/Field";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import type { AppRouter } from "@/server/api/root";
import type { SubscriberSortKey, SubscriberStatus } from "@/core/validation";
import { BulkDialog, type BulkKind } from "./BulkDialog";
import { LinkDialog, subscriptionLink } from "./LinkDialog";
import { SubscriberForm } from "./SubscriberForm";

type Page = inferRouterOutputs<AppRouter>["subscribers"]["page"];
type Row = Page["items"][number];
type DialogState = { kind: "new" } | { kind: "edit"; row: Row } | { kind: "link"; name: string; token: string } | { kind: "rotate"; row: Row } | { kind: "delete"; row: Row } | null;

const small = "rounded px-2 py-1 text-xs font-medium text-slate-600 hover:bg-slate-100 hover:text-slate-900 disabled:opacity-50";
const PAGE_SIZES = [25, 50, 100, 200];
const STATUS_LABEL: Record<SubscriberStatus, string> = { active: "Active", limited: "Limited", expired: "Expired", disabled: "Disabled" };
const STATUS_CLASS: Record<SubscriberStatus, string> = {
  active: "bg-green-100 text-green-800",
  limited: "bg-red-50 text-red-800",
  expired: "bg-amber-50 text-amber-800",
  disabled: "bg-slate-100 text-slate-700",
};
const SORT_LABEL: Record<SubscriberSortKey, string> = { name: "name", usage: "usage", lastSeen: "last seen", expiry: "expiry", created: "created" };
/** The direction a column sorts in on its first click: the most telling rows first. */
const FIRST_DIR: Record<SubscriberSortKey, "asc" | "desc"> = { name: "asc", usage: "desc", lastSeen: "desc", expiry: "asc", created: "desc" };

function bytes(n: number): string {
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(0)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(n < 10 * 1024 ** 3 ? 2 : 1)} GB`;
}

/** "just now", "5 min ago", "3 h ago", "2 d ago". */
function timeAgo(d: Date): string {
  const s = Math.max(0, (Date.now() - d.getTime()) / 1000);
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

function UsageBar({ row }: { row: Row }) {
  if (!row.trafficLimitBytes) return null;
  const pct = Math.min(100, Math.round((row.trafficUsedBytes / row.trafficLimitBytes) * 100));
  const color = pct >= 100 ? "bg-red-500" : pct >= 80 ? "bg-amber-500" : "bg-sky-500";
  return (
    <div role="progressbar" aria-label={`Usage of ${row.name}`} aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct} className="my-1 h-1.5 w-32 overflow-hidden rounded-full bg-slate-200">
      <div className={`h-full ${color}`} style={{ width: `${pct}%` }} />
    </div>
  );
}

function RoutesCell({ row }: { row: Row }) {
  if (row.routes === null) return <span className="text-xs text-slate-400">not fetched yet</span>;
  if (row.routes.length === 0) return <span className="text-xs text-slate-400">no route now</span>;
  return (
    <ul className="space-y-0.5 text-xs">
      {row.routes.map((r) => (
        <li key={r.routeId} title={`${r.route}: inbound ${r.inbound} on server ${r.server}`}>
          <span className="font-medium text-slate-700">{r.route}</span>
          <span className="text-slate-400"> → </span>
          <span className="text-slate-600">
            {r.server} · {r.inbound}
          </span>
        </li>
      ))}
    </ul>
  );
}

export function SubscribersPage({ clusterId }: { clusterId: string }) {
  const trpc = useTRPC();
  const canEdit = useCanEdit();
  const origin = useDashboardOrigin();
  const queryClient = useQueryClient();
  const [search, setSearch] = useState("");
  const deferred = useDeferredValue(search.trim());
  const [status, setStatus] = useState<SubscriberStatus | "">("");
  const [online, setOnline] = useState(false);
  const [sort, setSort] = useState<{ key: SubscriberSortKey; dir: "asc" | "desc" }>({ key: "created", dir: "desc" });
  const [pageNo, setPageNo] = useState(1);
  const [pageSize, setPageSize] = useState(50);
  // Selected ids on the pages seen; or every subscriber the filter matches.
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [allMatching, setAllMatching] = useState(false);
  const [bulk, setBulk] = useState<BulkKind | null>(null);
  const filter = { search: deferred || undefined, status: status || undefined, online: online || undefined };
  // Refetched every 10 s: usage, "online now" and "last seen" move with agent reports.
  const list = useQuery({
    ...trpc.subscribers.page.queryOptions({ clusterId, ...filter, sort: sort.key, dir: sort.dir, page: pageNo, pageSize }),
    placeholderData: keepPreviousData,
    refetchInterval: 10_000,
  });
  const [dialog, setDialog] = useState<DialogState>(null);
  const [error, setError] = useState<string | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.subscribers.pathKey() });
  const setEnabled = useMutation(trpc.subscribers.setEnabled.mutationOptions({ onSuccess: refresh, onError: (e) => setError(errorMessage(e)) }));
  const rotate = useMutation(
    trpc.subscribers.rotateToken.mutationOptions({
      onSuccess: async (r, vars) => {
        await refresh();
        const row = dialog?.kind === "rotate" ? dialog.row : null;
        setDialog(row && row.id === vars.subscriberId ? { kind: "link", name: row.name, token: r.token } : null);
      },
    }),
  );
  const remove = useMutation(
    trpc.subscribers.delete.mutationOptions({
      onSuccess: async () => {
        setDialog(null);
        await refresh();
      },
    }),
  );
  const data = list.data;
  const rows = data?.items ?? [];
  const total = data?.total ?? 0;
  const pageCount = data?.pageCount ?? 1;
  const filtered = !!(deferred || status || online);
  // Past the end (rows deleted meanwhile): go to the last page there is.
  const lastPage = data && data.page > data.pageCount ? data.pageCount : null;
  useEffect(() => {
    if (lastPage !== null) setPageNo(lastPage);
  }, [lastPage]);

  /** Any change of what is listed starts again at page 1 with nothing selected. */
  const clearSelection = () => {
    setSelected(new Set());
    setAllMatching(false);
  };
  const changed = <T,>(set: (v: T) => void) => (v: T) => {
    set(v);
    setPageNo(1);
    clearSelection();
  };
  const sortBy = (key: SubscriberSortKey) => {
    setSort((s) => (s.key === key ? { key, dir: s.dir === "asc" ? "desc" : "asc" } : { key, dir: FIRST_DIR[key] }));
    setPageNo(1);
  };
  const pageIds = rows.map((r) => r.id);
  const pageAllSelected = pageIds.length > 0 && pageIds.every((id) => selected.has(id));
  const selectedCount = allMatching ? total : selected.size;
  const toggle = (id: string) => {
    setAllMatching(false);
    setSelected((s) => {
      const next = new Set(s);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  };
  const togglePage = () => {
    setAllMatching(false);
    setSelected((s) => {
      const next = new Set(s);
      for (const id of pageIds) {
        if (pageAllSelected) next.delete(id);
        else next.add(id);
      }
      return next;
    });
  };

  const sortHeader = (k: SubscriberSortKey, label: string, className?: string) => {
    const active = sort.key === k;
    return (
      <th className={className ?? "px-3 py-2.5 font-medium"} aria-sort={active ? (sort.dir === "asc" ? "ascending" : "descending") : "none"}>
        <button type="button" className={`inline-flex items-center gap-1 uppercase tracking-wide hover:text-slate-900 ${active ? "text-slate-900" : ""}`} aria-label={`Sort by ${SORT_LABEL[k]}`} onClick={() => sortBy(k)}>
          {label}
          <span aria-hidden className="text-[10px]">
            {active ? (sort.dir === "asc" ? "▲" : "▼") : "↕"}
          </span>
        </button>
      </th>
    );
  };

  return (
    <>
      <main className="mx-auto max-w-7xl p-6">
        <div className="mb-4 flex flex-wrap items-end justify-between gap-3">
          <div>
            <h1 className="text-2xl font-semibold">Subscribers</h1>
            <p className="text-sm text-slate-500">Each subscriber’s VPN app fetches one line per route from their subscription link.</p>
          </div>
          {canEdit && (
            <button type="button" className={buttonClass} onClick={() => setDialog({ kind: "new" })}>
              <span aria-hidden="true">+</span> New subscriber
            </button>
          )}
        </div>
        <div className="mb-3 flex flex-wrap items-center gap-3">
          <label className="sr-only" htmlFor="subscriber-search">
            Search subscribers
          </label>
          <input
            id="subscriber-search"
            type="search"
            className={`${inputClass} w-72`}
            placeholder="Name, token start or VLESS UUID"
            value={search}
            onChange={(e) => changed(setSearch)(e.target.value)}
          />
          <label className="flex items-center gap-2 text-sm text-slate-600">
            Status
            <select className={inputClass} value={status} onChange={(e) => changed(setStatus)(e.target.value as SubscriberStatus | "")}>
              <option value="">All</option>
              <option value="active">Active</option>
              <option value="limited">Limited</option>
              <option value="expired">Expired</option>
              <option value="disabled">Disabled</option>
            </select>
          </label>
          <label className="flex items-center gap-2 text-sm text-slate-600">
            <input type="checkbox" checked={online} onChange={(e) => changed(setOnline)(e.target.checked)} />
            Online now only
          </label>
          {data && (
            <span className="ml-auto text-sm text-slate-500" data-testid="subscriber-total">
              {total.toLocaleString("en")} {filtered ? "matching" : total === 1 ? "subscriber" : "subscribers"}
            </span>
          )}
        </div>
        {error && (
          <p role="alert" className="mb-3 rounded-md bg-red-50 px-3 py-2 text-sm text-red-700">
            {error}
          </p>
        )}
        {list.error && (
          <p role="alert" className="text-red-700">
            {errorMessage(list.error)}
          </p>
        )}
        {canEdit && selectedCount > 0 && (
          <div role="toolbar" aria-label="Bulk actions" className="mb-3 flex flex-wrap items-center gap-2 rounded-md border border-sky-200 bg-sky-50 px-3 py-2 text-sm">
            <span className="font-medium text-sky-900" data-testid="selection-count">
              {allMatching ? `All ${total.toLocaleString("en")} matching selected` : `${selectedCount.toLocaleString("en")} selected`}
            </span>
            {!allMatching && pageAllSelected && total > selected.size && (
              <button type="button" className={small} onClick={() => setAllMatching(true)}>
                Select all {total.toLocaleString("en")} matching
              </button>
            )}
            <button type="button" className={small} onClick={clearSelection}>
              Clear selection
            </button>
            <span className="mx-1 h-4 w-px bg-sky-200" />
            <button type="button" className={secondaryButtonClass} onClick={() => setBulk("enable")}>
              Enable
            </button>
            <button type="button" className={secondaryButtonClass} onClick={() => setBulk("disable")}>
              Disable
            </button>
            <button type="button" className={secondaryButtonClass} onClick={() => setBulk("extend")}>
              Extend expiry…
            </button>
            <button type="button" className={secondaryButtonClass} onClick={() => setBulk("resetUsage")}>
              Reset usage
            </button>
            <button type="button" className={`${secondaryButtonClass} text-red-700`} onClick={() => setBulk("delete")}>
              Delete
            </button>
          </div>
        )}
        {list.isLoading && <p className="text-slate-500">Loading…</p>}
        {data && rows.length === 0 && (
          <div className="rounded-lg border border-dashed border-slate-300 bg-white p-8 text-center text-slate-600">
            {deferred ? `No subscriber matches “${deferred}”.` : filtered ? "No subscriber matches these filters." : total > 0 ? "Nothing on this page." : "No subscriber yet."}
          </div>
        )}
        {rows.length > 0 && (
          <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white shadow-sm">
            <table className="w-full text-left text-sm">
              <thead className="border-b border-slate-200 bg-slate-50 text-xs uppercase tracking-wide text-slate-500">
                <tr>
                  {canEdit && (
                    <th className="w-8 pl-4 pr-1 py-2.5">
                      <input type="checkbox" aria-label="Select every subscriber on this page" checked={pageAllSelected} onChange={togglePage} />
                    </th>
                  )}
                  {sortHeader("name", "Name", "px-4 py-2.5 font-medium")}
                  <th className="px-3 py-2.5 font-medium">Status</th>
                  {sortHeader("expiry", "Expires")}
                  {sortHeader("usage", "Usage")}
                  <th className="px-3 py-2.5 font-medium">Online</th>
                  {sortHeader("lastSeen", "Last seen")}
                  <th className="px-3 py-2.5 font-medium">Server per route</th>
                  {sortHeader("created", "Created")}
                  {canEdit && <th className="px-4 py-2.5 text-right font-medium">Actions</th>}
                </tr>
              </thead>
              <tbody className="divide-y divide-slate-100">
                {rows.map((s) => (
                  <tr key={s.id} data-testid="subscriber-row" className={selected.has(s.id) || allMatching ? "bg-sky-50/50" : undefined}>
                    {canEdit && (
                      <td className="pl-4 pr-1 py-2.5">
                        <input type="checkbox" aria-label={`Select ${s.name}`} checked={allMatching || selected.has(s.id)} onChange={() => toggle(s.id)} />
                      </td>
                    )}
                    <td className="px-4 py-2.5 font-medium text-slate-900">
                      <Link href={`/clusters/${clusterId}/subscribers/${s.id}`} className="hover:text-sky-700 hover:underline" title="What this subscriber's app gets right now, and why">
                        {s.name}
                      </Link>
                    </td>
                    <td className="px-3 py-2.5">
                      <span className={`rounded-full px-2 py-0.5 text-xs font-medium ${STATUS_CLASS[s.status]}`} data-testid="subscriber-status">
                        {STATUS_LABEL[s.status]}
                      </span>
                    </td>
                    <td className="px-3 py-2.5 text-slate-600">{s.expiresAt ? s.expiresAt.toLocaleDateString("en-CA") : "Never"}</td>
                    <td className="px-3 py-2.5 text-slate-600" data-testid="subscriber-usage">
                      <div>
                        {bytes(s.trafficUsedBytes)} / {s.trafficLimitBytes ? bytes(s.trafficLimitBytes) : "unlimited"}
                      </div>
                      <UsageBar row={s} />
                      <div className="text-xs text-slate-500" title="Upload / download">
                        ↑ {bytes(s.trafficUpBytes)} · ↓ {bytes(s.trafficDownBytes)}
                      </div>
                    </td>
                    <td className="px-3 py-2.5" data-testid="subscriber-online">
                      {s.online ? (
                        <span className="inline-flex items-center gap-1 text-xs font-medium text-green-800">
                          <span aria-hidden className="h-2 w-2 rounded-full bg-green-500" />
                          Online now
                        </span>
                      ) : (
                        <span className="text-xs text-slate-500">Offline</span>
                      )}
                    </td>
                    <td className="px-3 py-2.5 text-slate-600" data-testid="subscriber-last-seen" title={s.lastSeenAt ? s.lastSeenAt.toISOString() : undefined}>
                      {s.lastSeenAt ? timeAgo(s.lastSeenAt) : "Never"}
                    </td>
                    <td className="px-3 py-2.5" data-testid="subscriber-routes">
                      <RoutesCell row={s} />
                    </td>
                    <td className="px-3 py-2.5 text-xs text-slate-500" title={s.createdAt.toISOString()}>
                      {s.createdAt.toLocaleDateString("en-CA")}
                    </td>
                    {canEdit && (
                      <td className="whitespace-nowrap px-4 py-2 text-right">
                        {s.token && (
                          <>
                            <button type="button" className={small} aria-label={`Show link of ${s.name}`} onClick={() => setDialog({ kind: "link", name: s.name, token: s.token! })}>
                              Link &amp; QR
                            </button>
                            <CopyButton text={subscriptionLink(origin, s.token)} label="Copy link" className={small} />
                          </>
                        )}
                        <button type="button" className={small} aria-label={`Edit subscriber ${s.name}`} onClick={() => setDialog({ kind: "edit", row: s })}>
                          Edit
                        </button>
                        <button
                          type="button"
                          className={small}
                          aria-label={`${s.enabled ? "Disable" : "Enable"} subscriber ${s.name}`}
                          disabled={setEnabled.isPending}
                          onClick={() => setEnabled.mutate({ subscriberId: s.id, enabled: !s.enabled })}
                        >
                          {s.enabled ? "Disable" : "Enable"}
                        </button>
                        <button
                          type="button"
                          className={small}
                          aria-label={`Rotate link of ${s.name}`}
                          onClick={() => {
                            rotate.reset();
                            setDialog({ kind: "rotate", row: s });
                          }}
                        >
                          Rotate link
                        </button>
                        <button
                          type="button"
                          className={`${small} text-red-700 hover:bg-red-50`}
                          aria-label={`Delete subscriber ${s.name}`}
                          onClick={() => {
                            remove.reset();
                            setDialog({ kind: "delete", row: s });
                          }}
                        >
                          Delete
                        </button>
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {data && total > 0 && (
          <nav aria-label="Pages" className="mt-3 flex flex-wrap items-center gap-3 text-sm text-slate-600">
            <span data-testid="page-range">
              {rows.length > 0 ? `${((data.page - 1) * data.pageSize + 1).toLocaleString("en")}–${((data.page - 1) * data.pageSize + rows.length).toLocaleString("en")}` : "0"} of {total.toLocaleString("en")}
            </span>
            <button type="button" className={secondaryButtonClass} disabled={pageNo <= 1} onClick={() => setPageNo((p) => Math.max(1, p - 1))}>
              Previous page
            </button>
            <span>
              Page {data.page.toLocaleString("en")} of {pageCount.toLocaleString("en")}
            </span>
            <button type="button" className={secondaryButtonClass} disabled={pageNo >= pageCount} onClick={() => setPageNo((p) => Math.min(pageCount, p + 1))}>
              Next page
            </button>
            <label className="ml-auto flex items-center gap-2">
              Per page
              <select className={inputClass} value={pageSize} onChange={(e) => changed(setPageSize)(Number(e.target.value))}>
                {PAGE_SIZES.map((n) => (
                  <option key={n} value={n}>
                    {n}
                  </option>
                ))}
              </select>
            </label>
          </nav>
        )}
      </main>

      {bulk && (
        <BulkDialog
          kind={bulk}
          clusterId={clusterId}
          count={selectedCount}
          selection={allMatching ? { matching: filter } : { ids: [...selected] }}
          onClose={() => setBulk(null)}
          onDone={async () => {
            setBulk(null);
            clearSelection();
            await refresh();
          }}
        />
      )}
      {dialog?.kind === "new" && <SubscriberForm clusterId={clusterId} onClose={() => setDialog(null)} onCreated={(r) => setTimeout(() => setDialog({ kind: "link", name: r.name, token: r.token }), 0)} />}
      {dialog?.kind === "edit" && <SubscriberForm clusterId={clusterId} subscriber={dialog.row} onClose={() => setDialog(null)} />}
      {dialog?.kind === "link" && <LinkDialog name={dialog.name} token={dialog.token} clusterId={clusterId} onClose={() => setDialog(null)} />}
      {dialog?.kind === "rotate" && (
        <ConfirmDialog
          title={`Rotate the link of ${dialog.row.name}?`}
          confirmLabel="Rotate link"
          pending={rotate.isPending}
          error={rotate.error ? errorMessage(rotate.error) : null}
          onClose={() => setDialog(null)}
          onConfirm={() => rotate.mutate({ subscriberId: dialog.row.id })}
        >
          <p>The current link stops working at once; {dialog.row.name} must add the new link in their VPN app.</p>
        </ConfirmDialog>
      )}
      {dialog?.kind === "delete" && (
        <ConfirmDialog
          title={`Delete subscriber ${dialog.row.name}?`}
          confirmLabel="Delete subscriber"
          pending={remove.isPending}
          error={remove.error ? errorMessage(remove.error) : null}
          onClose={() => setDialog(null)}
          onConfirm={() => remove.mutate({ subscriberId: dialog.row.id })}
        >
          <p>Their subscription link stops working. This cannot be undone.</p>
        </ConfirmDialog>
      )}
    </>
  );
}
