"use client";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import Link from "next/link";
import { useDeferredValue, useState } from "react";
import { useCanEdit, useDashboardOrigin } from "@/components/AppShell";
import { CopyButton } from "@/components/ui/CopyButton";
import { ConfirmDialog } from "@/components/ui/Dialog";
import { buttonClass, inputClass } from "@/components/ui/Field";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import type { AppRouter } from "@/server/api/root";
import { LinkDialog, subscriptionLink } from "./LinkDialog";
import { SubscriberForm } from "./SubscriberForm";
import { formatBytes as bytes, formatUtcDay } from "./format";
import { useClusterChanges } from "@/components/live/useClusterChanges";

type Row = inferRouterOutputs<AppRouter>["subscribers"]["list"][number];
type DialogState = { kind: "new" } | { kind: "edit"; row: Row } | { kind: "link"; name: string; token: string } | { kind: "rotate"; row: Row } | { kind: "reset"; row: Row } | { kind: "delete"; row: Row } | null;

const small = "rounded px-2 py-1 text-xs font-medium text-slate-600 hover:bg-slate-100 hover:text-slate-900 disabled:opacity-50";

const WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/** "Resets monthly on day 15", "Resets weekly on Mon", "Resets daily"; null for never. */
function resetSchedule(s: Pick<Row, "trafficResetStrategy" | "trafficResetDay">): string | null {
  switch (s.trafficResetStrategy) {
    case "daily":
      return "Resets daily";
    case "weekly":
      return `Resets weekly on ${WEEKDAYS[(s.trafficResetDay ?? 1) - 1]}`;
    case "monthly":
      return `Resets monthly on day ${s.trafficResetDay}`;
    default:
      return null;
  }
}

/** "just now", "5 min ago", "3 h ago", "2 d ago". */
function timeAgo(d: Date): string {
  const s = Math.max(0, (Date.now() - d.getTime()) / 1000);
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export function SubscribersPage({ clusterId }: { clusterId: string }) {
  const trpc = useTRPC();
  const canEdit = useCanEdit();
  const origin = useDashboardOrigin();
  const queryClient = useQueryClient();
  const [search, setSearch] = useState("");
  const deferred = useDeferredValue(search.trim());
  // Refetched every 10 s: usage, "online now" and "last seen" move with agent reports.
  useClusterChanges(clusterId, ["subscribers", "traffic"], [trpc.subscribers.pathKey()]);
  const list = useQuery({ ...trpc.subscribers.list.queryOptions({ clusterId, search: deferred || undefined }), placeholderData: keepPreviousData, refetchInterval: 10_000 });
  const [dialog, setDialog] = useState<DialogState>(null);
  const [error, setError] = useState<string | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.subscribers.list.queryKey() });
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
  const resetUsage = useMutation(
    trpc.subscribers.resetUsage.mutationOptions({
      onSuccess: async () => {
        setDialog(null);
        await refresh();
        await queryClient.invalidateQueries({ queryKey: trpc.subscribers.usagePeriods.queryKey() });
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
  const rows = list.data ?? [];

  return (
    <>
      <main className="mx-auto max-w-6xl p-6">
        <div className="mb-5 flex flex-wrap items-end justify-between gap-3">
          <div>
            <h1 className="text-2xl font-semibold">Subscribers</h1>
            <p className="text-sm text-slate-500">Each subscriber’s VPN app fetches one line per route from their subscription link.</p>
          </div>
          <div className="flex items-center gap-2">
            <label className="sr-only" htmlFor="subscriber-search">
              Search subscribers
            </label>
            <input id="subscriber-search" type="search" className={`${inputClass} w-56`} placeholder="Search by name" value={search} onChange={(e) => setSearch(e.target.value)} />
            {canEdit && (
              <button type="button" className={buttonClass} onClick={() => setDialog({ kind: "new" })}>
                <span aria-hidden="true">+</span> New subscriber
              </button>
            )}
          </div>
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
        {list.isLoading && <p className="text-slate-500">Loading…</p>}
        {list.data && rows.length === 0 && (
          <div className="rounded-lg border border-dashed border-slate-300 bg-white p-8 text-center text-slate-600">
            {deferred ? `No subscriber matches “${deferred}”.` : "No subscriber yet."}
          </div>
        )}
        {rows.length > 0 && (
          <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white shadow-sm">
            <table className="w-full text-left text-sm">
              <thead className="border-b border-slate-200 bg-slate-50 text-xs uppercase tracking-wide text-slate-500">
                <tr>
                  <th className="px-4 py-2.5 font-medium">Name</th>
                  <th className="px-3 py-2.5 font-medium">Status</th>
                  <th className="px-3 py-2.5 font-medium">Expires</th>
                  <th className="px-3 py-2.5 font-medium">Usage</th>
                  <th className="px-3 py-2.5 font-medium">Online</th>
                  <th className="px-3 py-2.5 font-medium">Last seen</th>
                  {canEdit && <th className="px-4 py-2.5 text-right font-medium">Actions</th>}
                </tr>
              </thead>
              <tbody className="divide-y divide-slate-100">
                {rows.map((s) => (
                  <tr key={s.id} data-testid="subscriber-row">
                    <td className="px-4 py-2.5 font-medium text-slate-900">
                      <Link href={`/clusters/${clusterId}/subscribers/${s.id}`} className="hover:text-sky-700 hover:underline" title="What this subscriber's app gets right now, and why">
                        {s.name}
                      </Link>
                    </td>
                    <td className="px-3 py-2.5">
                      {!s.enabled ? (
                        <span className="rounded-full bg-slate-100 px-2 py-0.5 text-xs font-medium text-slate-700">Disabled</span>
                      ) : s.expired ? (
                        <span className="rounded-full bg-amber-50 px-2 py-0.5 text-xs font-medium text-amber-800">Expired</span>
                      ) : s.limited ? (
                        <span className="rounded-full bg-red-50 px-2 py-0.5 text-xs font-medium text-red-800">Limit reached</span>
                      ) : s.holdDays !== null ? (
                        <span className="rounded-full bg-sky-50 px-2 py-0.5 text-xs font-medium text-sky-800">On hold</span>
                      ) : (
                        <span className="rounded-full bg-green-100 px-2 py-0.5 text-xs font-medium text-green-800">Active</span>
                      )}
                    </td>
                    <td className="px-3 py-2.5 text-slate-600" data-testid="subscriber-expiry">
                      {s.holdDays !== null ? `${s.holdDays} d from first connection` : s.expiresAt ? s.expiresAt.toLocaleDateString("en-CA") : "Never"}
                    </td>
                    <td className="px-3 py-2.5 text-slate-600" data-testid="subscriber-usage">
                      <div>
                        {bytes(s.trafficUsedBytes)} / {s.trafficLimitBytes ? bytes(s.trafficLimitBytes) : "unlimited"}
                      </div>
                      <div className="text-xs text-slate-500" title="Upload / download">
                        ↑ {bytes(s.trafficUpBytes)} · ↓ {bytes(s.trafficDownBytes)}
                      </div>
                      {resetSchedule(s) && (
                        <div className="text-xs text-slate-500" data-testid="subscriber-reset" title="Resets happen at 00:00 UTC">
                          {resetSchedule(s)}
                          {s.nextResetAt ? ` · next ${formatUtcDay(s.nextResetAt)}` : ""}
                        </div>
                      )}
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
                          aria-label={`Reset usage of ${s.name}`}
                          onClick={() => {
                            resetUsage.reset();
                            setDialog({ kind: "reset", row: s });
                          }}
                        >
                          Reset usage
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
      </main>

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
      {dialog?.kind === "reset" && (
        <ConfirmDialog
          title={`Reset the usage of ${dialog.row.name}?`}
          confirmLabel="Reset usage"
          pending={resetUsage.isPending}
          error={resetUsage.error ? errorMessage(resetUsage.error) : null}
          onClose={() => setDialog(null)}
          onConfirm={() => resetUsage.mutate({ subscriberId: dialog.row.id })}
        >
          <p>
            Used traffic goes back to 0 ({bytes(dialog.row.trafficUsedBytes)} used now is kept as a previous period).
            {dialog.row.limited ? ` ${dialog.row.name} can connect again at once.` : ""}
          </p>
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
