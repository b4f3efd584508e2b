"use client";
import { useInfiniteQuery } from "@tanstack/react-query";
import { useState } from "react";
import { secondaryButtonClass } from "@/components/ui/Field";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { PageSkeleton } from "@/components/ui/Skeleton";

const PAGE = 50;

function when(d: Date): string {
  return d.toLocaleString("en-GB", { year: "numeric", month: "short", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

/** Who changed what and when in this cluster, newest first, with before/after. */
export function AuditPage({ clusterId }: { clusterId: string }) {
  const trpc = useTRPC();
  const query = useInfiniteQuery(
    trpc.audit.list.infiniteQueryOptions({ clusterId, limit: PAGE }, { getNextPageParam: (last) => last.nextCursor ?? undefined, initialCursor: null }),
  );
  const items = query.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <>
      <main className="mx-auto max-w-5xl p-4 sm:p-6">
        <h1 className="text-2xl font-semibold">Audit log</h1>
        <p className="mb-5 text-sm text-slate-500">Every change made in this cluster: who, what and when, with the values before and after.</p>
        {query.error && (
          <p role="alert" className="text-red-700">
            {errorMessage(query.error)}
          </p>
        )}
        {query.isLoading && <PageSkeleton label="Loading the audit log" />}
        {query.data && items.length === 0 && <p className="text-slate-500">Nothing has changed yet.</p>}
        <ol className="divide-y divide-slate-100 overflow-hidden rounded-lg border border-slate-200 bg-white shadow-sm">
          {items.map((e) => (
            <AuditEntry key={e.id} entry={e} />
          ))}
        </ol>
        {query.hasNextPage && (
          <div className="mt-4 flex justify-center">
            <button type="button" className={secondaryButtonClass} disabled={query.isFetchingNextPage} onClick={() => query.fetchNextPage()}>
              {query.isFetchingNextPage ? "Loading…" : "Load more"}
            </button>
          </div>
        )}
      </main>
    </>
  );
}

function AuditEntry({
  entry,
}: {
  entry: { id: number; at: Date; operatorName: string; action: string; summary: string; before: unknown; after: unknown };
}) {
  const [open, setOpen] = useState(false);
  const hasDetail = entry.before != null || entry.after != null;
  const detailId = `audit-detail-${entry.id}`;
  return (
    <li className="px-4 py-3" data-testid="audit-entry">
      <div className="flex flex-wrap items-baseline gap-x-3 gap-y-1">
        <time dateTime={entry.at.toISOString()} className="w-44 shrink-0 font-mono text-xs text-slate-500">
          {when(entry.at)}
        </time>
        <span className="text-sm font-medium text-slate-700">{entry.operatorName}</span>
        <span className="min-w-0 flex-1 text-sm text-slate-900 [overflow-wrap:anywhere]">{entry.summary}</span>
        <span className="rounded bg-slate-100 px-1.5 py-0.5 font-mono text-xs text-slate-600">{entry.action}</span>
        {hasDetail && (
          <button type="button" className="text-xs font-medium text-sky-700 hover:underline" aria-expanded={open} aria-controls={detailId} onClick={() => setOpen((o) => !o)}>
            {open ? "Hide details" : "Details"}
          </button>
        )}
      </div>
      {open && (
        <div id={detailId} className="mt-2 grid gap-2 sm:grid-cols-2">
          <Json label="Before" value={entry.before} />
          <Json label="After" value={entry.after} />
        </div>
      )}
    </li>
  );
}

function Json({ label, value }: { label: string; value: unknown }) {
  return (
    <div className="min-w-0">
      <div className="mb-1 text-xs font-semibold uppercase tracking-wide text-slate-500">{label}</div>
      <pre className="max-h-64 overflow-auto rounded-md bg-slate-50 p-2 text-xs text-slate-800 ring-1 ring-slate-200">{value == null ? "—" : JSON.stringify(value, null, 2)}</pre>
    </div>
  );
}
