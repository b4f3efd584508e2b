"use client";
import { useClusterChanges } from "@/components/live/useClusterChanges";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useDeferredValue, useEffect, useState } from "react";
import { useCanEdit, useDashboardOrigin } from "@/components/AppShell";
import { buttonClass, secondaryButtonClass } from "@/components/ui/Field";
import type { SubscriberSortKey } from "@/core/validation";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import type { SubscriberListRow } from "@/server/accounts/subscriber-list";
import { BulkDialog, type BulkKind } from "./BulkDialog";
import { ImportDialog } from "./ImportDialog";
import { BulkToolbar } from "./BulkToolbar";
import { nextSort, type SortState } from "./list-view";
import { SubscriberDialogs, type DialogState } from "./SubscriberDialogs";
import { SubscriberFilters, type FilterValues } from "./SubscriberFilters";
import type { RowAction } from "./SubscriberRow";
import { SubscriberPager, SubscriberTable } from "./SubscriberTable";
import { FormAlert } from "@/components/ui/FormAlert";
import { PlansPanel } from "./PlansPanel";

/** The subscribers list: filters, sort, paging and selection here; the server pages. */
export function SubscribersPage({ clusterId }: { clusterId: string }) {
  const trpc = useTRPC();
  const canEdit = useCanEdit();
  const origin = useDashboardOrigin();
  const queryClient = useQueryClient();
  const [filters, setFilters] = useState<FilterValues>({ search: "", status: "", online: false, planId: "" });
  const deferred = useDeferredValue(filters.search.trim());
  const [sort, setSort] = useState<SortState>({ key: "created", dir: "desc" });
  const [pageNo, setPageNo] = useState(1);
  const [pageSize, setPageSize] = useState(50);
  // Selected ids on the pages seen; or every subscriber the filter matches.
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [allMatching, setAllMatching] = useState(false);
  const [bulk, setBulk] = useState<BulkKind | null>(null);
  const [dialog, setDialog] = useState<DialogState>(null);
  const [importing, setImporting] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const filter = { search: deferred || undefined, status: filters.status || undefined, online: filters.online || undefined, planId: filters.planId || undefined };
  // Another browser's change shows at once; usage, "online now" and "last seen" move with
  // agent reports, refetched every 10 s.
  useClusterChanges(clusterId, ["subscribers", "traffic"], [trpc.subscribers.pathKey(), trpc.plans.pathKey()]);
  // Plans and routes are topology: another browser's edit of a plan shows at once too.
  useClusterChanges(clusterId, ["topology"], [trpc.plans.pathKey(), trpc.topology.pathKey(), trpc.subscribers.pathKey()]);
  const plans = useQuery(trpc.plans.list.queryOptions({ clusterId }));
  const list = useQuery({
    ...trpc.subscribers.page.queryOptions({ clusterId, ...filter, sort: sort.key, dir: sort.dir, page: pageNo, pageSize }),
    placeholderData: keepPreviousData,
    refetchInterval: 10_000,
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.subscribers.pathKey() });
  const setEnabled = useMutation(trpc.subscribers.setEnabled.mutationOptions({ onSuccess: refresh, onError: (e) => setError(errorMessage(e)) }));
  const data = list.data;
  const rows = data?.items ?? [];
  const total = data?.total ?? 0;
  const filtered = !!(deferred || filters.status || filters.online || filters.planId);
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
  const relist = () => {
    setPageNo(1);
    clearSelection();
  };
  const sortBy = (key: SubscriberSortKey) => {
    setSort((s) => nextSort(s, key));
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
  const onAction = (action: RowAction, row: SubscriberListRow) => {
    if (action === "toggle") setEnabled.mutate({ subscriberId: row.id, enabled: !row.enabled });
    else if (action === "link") setDialog(row.token ? { kind: "link", name: row.name, token: row.token } : null);
    else setDialog({ kind: action, row });
  };

  return (
    <>
      <main className="mx-auto max-w-screen-2xl p-4 sm:p-6">
        <div className="mb-4 flex flex-wrap items-end justify-between gap-3">
          <div>
            <h1 className="text-2xl font-semibold">Subscribers</h1>
            <p className="text-sm text-slate-500">Each subscriber’s VPN app fetches one line per route from their subscription link.</p>
          </div>
          {canEdit && (
            <div className="flex gap-2">
              <button type="button" className={secondaryButtonClass} onClick={() => setImporting(true)}>
                Import
              </button>
              <button type="button" className={buttonClass} onClick={() => setDialog({ kind: "new" })}>
                <span aria-hidden="true">+</span> New subscriber
              </button>
            </div>
          )}
        </div>
        <PlansPanel clusterId={clusterId} canEdit={canEdit} />
        <SubscriberFilters
          plans={plans.data ?? []}
          value={filters}
          onChange={(next) => {
            setFilters(next);
            relist();
          }}
          total={data ? total : null}
          filtered={filtered}
        />
        {error && <FormAlert className="mb-3">{error}</FormAlert>}
        {list.error && (
          <p role="alert" className="text-red-700">
            {errorMessage(list.error)}
          </p>
        )}
        {canEdit && selectedCount > 0 && (
          <BulkToolbar
            total={total}
            selectedCount={selectedCount}
            allMatching={allMatching}
            canSelectAllMatching={pageAllSelected && total > selected.size}
            onSelectAllMatching={() => setAllMatching(true)}
            onClear={clearSelection}
            onAction={setBulk}
          />
        )}
        {list.isLoading && <p className="text-slate-500">Loading…</p>}
        {data && rows.length === 0 && (
          <div className="rounded-lg border border-dashed border-slate-300 bg-white p-8 text-center text-slate-600">
            {deferred ? `No subscriber matches “${deferred}”.` : filtered ? "No subscriber matches these filters." : total > 0 ? "Nothing on this page." : "No subscriber yet."}
          </div>
        )}
        {rows.length > 0 && (
          <SubscriberTable
            rows={rows}
            clusterId={clusterId}
            canEdit={canEdit}
            sort={sort}
            onSort={sortBy}
            isSelected={(id) => allMatching || selected.has(id)}
            pageAllSelected={pageAllSelected}
            onToggle={toggle}
            onTogglePage={togglePage}
            nowMs={list.dataUpdatedAt || Date.now()}
            origin={origin}
            toggling={setEnabled.isPending}
            onAction={onAction}
          />
        )}
        {data && total > 0 && (
          <SubscriberPager
            page={data.page}
            requested={pageNo}
            pageSize={data.pageSize}
            pageCount={data.pageCount}
            shown={rows.length}
            total={total}
            onPage={setPageNo}
            onPageSize={(n) => {
              setPageSize(n);
              relist();
            }}
          />
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
            await Promise.all([refresh(), queryClient.invalidateQueries({ queryKey: trpc.plans.pathKey() })]);
          }}
        />
      )}
      <SubscriberDialogs clusterId={clusterId} dialog={dialog} setDialog={setDialog} />
      {importing && <ImportDialog clusterId={clusterId} onClose={() => setImporting(false)} onImported={() => void refresh()} />}
    </>
  );
}
