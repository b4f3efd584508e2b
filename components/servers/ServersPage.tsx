"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useCanEdit } from "@/components/AppShell";
import { impactOf, type Change, type Impact } from "@/core/impact";
import { buttonClass } from "@/components/ui/Field";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { PageSkeleton } from "@/components/ui/Skeleton";
import { useClusterChanges } from "@/components/live/useClusterChanges";
import { AllowedDestinations } from "./AllowedDestinations";
import { ServerCard } from "./ServerCard";
import { ServerDialogs } from "./ServerDialogs";
import { useRefreshServers } from "./useRefreshServers";
import { fallbackNotice, fleetSummary, type DialogState, type ServerRow } from "./servers-view";

export function ServersPage({ clusterId }: { clusterId: string }) {
  const trpc = useTRPC();
  const canEdit = useCanEdit();
  const queryClient = useQueryClient();
  const list = useQuery(trpc.servers.list.queryOptions({ clusterId }));
  // The whole cluster, for what a disable or delete would cost the routes (core/impact.ts).
  const topology = useQuery({ ...trpc.topology.get.queryOptions({ clusterId }), enabled: canEdit });
  const impact = (change: Change): Impact => (topology.data ? impactOf(change, topology.data) : { routes: [], users: 0 });
  // Another browser's change (or the monitor's verdict) shows without a reload.
  useClusterChanges(clusterId, ["topology", "health"], [trpc.servers.list.queryKey({ clusterId }), trpc.topology.get.queryKey({ clusterId })]);
  const [dialog, setDialog] = useState<DialogState>(null);
  const [notice, setNotice] = useState<{ text: string; error?: boolean } | null>(null);

  const refresh = useRefreshServers();
  const onError = (err: unknown) => setNotice({ text: errorMessage(err), error: true });
  const setEnabled = useMutation(
    trpc.servers.setEnabled.mutationOptions({
      onSuccess: async () => {
        setDialog((d) => (d?.kind === "disable-server" ? null : d));
        await refresh();
      },
      onError,
    }),
  );
  /** Enabling is always safe; disabling asks first when it leaves a route with no available inbound. */
  const toggle = async (s: ServerRow) => {
    if (s.enabled) {
      let t;
      try {
        t = await queryClient.fetchQuery(trpc.topology.get.queryOptions({ clusterId }));
      } catch (err) {
        onError(err);
        return;
      }
      const cost = impactOf({ kind: "disable-server", serverId: s.id }, t);
      if (cost.routes.length > 0) {
        setEnabled.reset();
        setDialog({ kind: "disable-server", server: s, impact: cost });
        return;
      }
    }
    setEnabled.mutate({ serverId: s.id, enabled: !s.enabled });
  };
  const setFallback = useMutation(
    trpc.inbounds.setFallback.mutationOptions({
      onSuccess: async (r) => {
        setNotice({ text: fallbackNotice(r) });
        await refresh();
      },
      onError,
    }),
  );

  const servers = list.data ?? [];

  return (
    <>
      <main className="mx-auto max-w-6xl p-4 sm:p-6">
        <div className="mb-5 flex flex-wrap items-end justify-between gap-3">
          <div>
            <h1 className="text-2xl font-semibold">Servers &amp; inbounds</h1>
            {list.data && <p className="text-sm text-slate-500">{fleetSummary(servers)}</p>}
          </div>
          {canEdit && (
            <button type="button" className={buttonClass} onClick={() => setDialog({ kind: "add-server" })}>
              <span aria-hidden="true">+</span> Add server
            </button>
          )}
        </div>

        {notice && (
          <div role={notice.error ? "alert" : "status"} className={`mb-4 flex items-start justify-between gap-3 rounded-md px-4 py-2.5 text-sm ${notice.error ? "bg-red-50 text-red-800" : "bg-emerald-50 text-emerald-900"}`}>
            <span>{notice.text}</span>
            <button type="button" className="text-xs underline" onClick={() => setNotice(null)}>
              Dismiss
            </button>
          </div>
        )}
        {list.error && (
          <p role="alert" className="text-red-700">
            {errorMessage(list.error)}
          </p>
        )}
        {list.isLoading && <PageSkeleton label="Loading servers" rows={4} />}
        {list.data && servers.length === 0 && (
          <div className="rounded-lg border border-dashed border-slate-300 bg-white p-8 text-center text-slate-600">
            No server yet. {canEdit && "Add the first one: its agent reports health and load, and its inbounds serve your users."}
          </div>
        )}

        <div className="flex flex-col gap-4">
          {servers.map((s) => (
            <ServerCard
              key={s.id}
              server={s}
              canEdit={canEdit}
              onDialog={setDialog}
              togglePending={setEnabled.isPending}
              onToggle={() => void toggle(s)}
              fallbackPending={setFallback.isPending}
              onToggleFallback={(i) => {
                setNotice(null);
                setFallback.mutate({ inboundId: i.id, isFallback: !i.isFallback });
              }}
            />
          ))}
        </div>

        <AllowedDestinations clusterId={clusterId} canEdit={canEdit} />
      </main>

      <ServerDialogs
        clusterId={clusterId}
        dialog={dialog}
        setDialog={setDialog}
        setNotice={setNotice}
        impact={impact}
        disable={{ pending: setEnabled.isPending, error: setEnabled.error, confirm: (serverId) => setEnabled.mutate({ serverId, enabled: false }) }}
      />
    </>
  );
}
