"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useCanEdit } from "@/components/AppShell";
import { ConfirmDialog } from "@/components/ui/Dialog";
import { ImpactDialog, ImpactSummary } from "@/components/ui/ImpactDialog";
import { impactOf, type Change, type Impact } from "@/core/impact";
import { buttonClass } from "@/components/ui/Field";
import { StatusBadge } from "@/components/ui/StatusBadge";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import type { AppRouter } from "@/server/api/root";
import type { inferRouterOutputs } from "@trpc/server";
import { AgentTokenDialog } from "./AgentTokenDialog";
import { InboundForm } from "./InboundForm";
import { CopyButton } from "@/components/ui/CopyButton";
import { ServerForm } from "./ServerForm";
import { PageSkeleton } from "@/components/ui/Skeleton";
import { routeFlagPrefix } from "@/core/format";
import { useClusterChanges } from "@/components/live/useClusterChanges";

type ServerRow = inferRouterOutputs<AppRouter>["servers"]["list"][number];
type InboundRow = ServerRow["inbounds"][number];

type DialogState =
  | { kind: "add-server" }
  | { kind: "edit-server"; server: ServerRow }
  | { kind: "delete-server"; server: ServerRow }
  | { kind: "disable-server"; server: ServerRow; impact: Impact }
  | { kind: "token"; serverName: string; token: string; rotated: boolean }
  | { kind: "rotate"; server: ServerRow }
  | { kind: "add-inbound"; server: ServerRow }
  | { kind: "edit-inbound"; server: ServerRow; inbound: InboundRow }
  | { kind: "delete-inbound"; inbound: InboundRow; server: ServerRow }
  | null;

const small = "rounded px-2 py-1 text-xs font-medium text-slate-600 hover:bg-slate-100 hover:text-slate-900 disabled:opacity-50";
const ROLE: Record<string, string> = { master: "Master", node: "Node", both: "Master + node" };
const SECURITY: Record<string, string> = { reality: "Reality", tls: "TLS", none: "None" };

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

  const refresh = () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: trpc.servers.list.queryKey() }),
      queryClient.invalidateQueries({ queryKey: trpc.topology.get.queryKey() }),
    ]);
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
        setNotice({ text: r.isFallback ? `${r.name} is now its route's fallback.` : `${r.name} is no longer a fallback.` });
        await refresh();
      },
      onError,
    }),
  );
  const rotate = useMutation(
    trpc.servers.rotateToken.mutationOptions({
      onSuccess: (r) => setDialog({ kind: "token", serverName: r.name, token: r.agentToken, rotated: true }),
    }),
  );
  const [alsoInbounds, setAlsoInbounds] = useState(false);
  const deleteServer = useMutation(
    trpc.servers.delete.mutationOptions({
      onSuccess: async (r) => {
        setNotice({ text: r.deletedInbounds ? `Server deleted with its ${r.deletedInbounds} inbound${r.deletedInbounds === 1 ? "" : "s"}.` : "Server deleted." });
        setDialog(null);
        await refresh();
      },
    }),
  );
  const deleteInbound = useMutation(
    trpc.inbounds.delete.mutationOptions({
      onSuccess: async () => {
        setDialog(null);
        await refresh();
      },
    }),
  );

  const servers = list.data ?? [];
  const total = servers.reduce((n, s) => n + s.inbounds.length, 0);

  return (
    <>
      <main className="mx-auto max-w-6xl p-4 sm:p-6">
        <div className="mb-5 flex flex-wrap items-end justify-between gap-3">
          <div>
            <h1 className="text-2xl font-semibold">Servers &amp; inbounds</h1>
            {list.data && (
              <p className="text-sm text-slate-500">
                {servers.length} server{servers.length === 1 ? "" : "s"} · {total} inbound{total === 1 ? "" : "s"}
              </p>
            )}
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
            <section key={s.id} aria-label={`Server ${s.name}`} className={`rounded-lg border bg-white shadow-sm ${s.enabled ? "border-slate-200" : "border-slate-200 opacity-80"}`}>
              <header className="flex flex-wrap items-center gap-x-4 gap-y-2 border-b border-slate-100 px-4 py-3">
                <div className="min-w-0">
                  <h2 className="flex flex-wrap items-center gap-2 text-base font-semibold text-slate-900 [overflow-wrap:anywhere]">
                    {s.name} <StatusBadge status={s.status} title={s.statusReason} />
                  </h2>
                  <p className="mt-0.5 text-sm text-slate-500">
                    <span className="font-mono">{s.address}</span> · {ROLE[s.role]} · coefficient {s.coefficient}
                    {s.capacityMbps ? ` · ${s.capacityMbps.toLocaleString("en")} Mbit/s` : " · capacity learned"}
                  </p>
                </div>
                {canEdit && (
                  <div className="ml-auto flex flex-wrap items-center gap-1">
                    <button type="button" className={small} onClick={() => setDialog({ kind: "add-inbound", server: s })}>
                      + Inbound
                    </button>
                    <button type="button" className={small} aria-label={`Edit server ${s.name}`} onClick={() => setDialog({ kind: "edit-server", server: s })}>
                      Edit
                    </button>
                    <button
                      type="button"
                      className={small}
                      disabled={setEnabled.isPending}
                      aria-label={`${s.enabled ? "Disable" : "Enable"} server ${s.name}`}
                      onClick={() => void toggle(s)}
                    >
                      {s.enabled ? "Disable" : "Enable"}
                    </button>
                    <button type="button" className={small} aria-label={`Rotate agent token of ${s.name}`} onClick={() => setDialog({ kind: "rotate", server: s })}>
                      Rotate token
                    </button>
                    <button
                      type="button"
                      className={`${small} text-red-700 hover:bg-red-50 hover:text-red-800`}
                      aria-label={`Delete server ${s.name}`}
                      onClick={() => {
                        setAlsoInbounds(false);
                        deleteServer.reset();
                        setDialog({ kind: "delete-server", server: s });
                      }}
                    >
                      Delete
                    </button>
                  </div>
                )}
              </header>
              {s.inbounds.length === 0 ? (
                <p className="px-4 py-3 text-sm text-slate-500">No inbounds on this server.</p>
              ) : (
                <div className="overflow-x-auto">
                  <table className="table-cards w-full text-left text-sm">
                    <thead className="text-xs uppercase tracking-wide text-slate-500">
                      <tr>
                        <th className="px-4 py-2 font-medium">Inbound</th>
                        <th className="px-2 py-2 font-medium">Port</th>
                        <th className="px-2 py-2 font-medium">Security</th>
                        <th className="px-2 py-2 font-medium">SNI</th>
                        <th className="px-2 py-2 font-medium">Route</th>
                        {canEdit && <th className="px-4 py-2 text-right font-medium">Actions</th>}
                      </tr>
                    </thead>
                    <tbody className="divide-y divide-slate-100">
                      {s.inbounds.map((i) => (
                        <tr key={i.id} className="align-middle">
                          <td className="px-4 py-2 font-medium text-slate-900">{i.name}</td>
                          <td data-label="Port" className="px-2 py-2 font-mono">{i.port}</td>
                          <td data-label="Security" className="card-full px-2 py-2 max-sm:order-1">
                            {SECURITY[i.security]}
                            <InboundKeys inbound={i} />
                          </td>
                          <td data-label="SNI" className="px-2 py-2 text-slate-600">{i.sni ?? "—"}</td>
                          <td data-label="Route" className="px-2 py-2">
                            {i.routeName ? (
                              <span className="inline-flex items-center gap-1.5">
                                {routeFlagPrefix(i.routeName, i.routeFlag) && <span data-testid="route-flag">{routeFlagPrefix(i.routeName, i.routeFlag)}</span>}
                                {i.routeName}
                                {i.isFallback && <span className="rounded bg-violet-100 px-1.5 py-0.5 text-xs font-medium text-violet-800">fallback</span>}
                              </span>
                            ) : (
                              <span className="rounded bg-amber-50 px-1.5 py-0.5 text-xs font-medium text-amber-800 ring-1 ring-inset ring-amber-600/20">Unassigned</span>
                            )}
                          </td>
                          {canEdit && (
                            <td className="whitespace-nowrap px-4 py-2 text-right max-sm:order-2">
                              {i.routeId && (
                                <button
                                  type="button"
                                  className={small}
                                  aria-label={i.isFallback ? `Unmark ${i.name} as fallback` : `Mark ${i.name} as fallback`}
                                  disabled={setFallback.isPending}
                                  onClick={() => {
                                    setNotice(null);
                                    setFallback.mutate({ inboundId: i.id, isFallback: !i.isFallback });
                                  }}
                                >
                                  {i.isFallback ? "Unmark fallback" : "Mark fallback"}
                                </button>
                              )}
                              <button type="button" className={small} aria-label={`Edit inbound ${i.name}`} onClick={() => setDialog({ kind: "edit-inbound", server: s, inbound: i })}>
                                Edit
                              </button>
                              <button
                                type="button"
                                className={`${small} text-red-700 hover:bg-red-50`}
                                aria-label={`Delete inbound ${i.name}`}
                                onClick={() => {
                                  deleteInbound.reset();
                                  setDialog({ kind: "delete-inbound", server: s, inbound: i });
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
            </section>
          ))}
        </div>
      </main>

      {dialog?.kind === "add-server" && (
        <ServerForm clusterId={clusterId} onClose={() => setDialog(null)} onCreated={(r) => setDialog({ kind: "token", serverName: r.name, token: r.agentToken, rotated: false })} />
      )}
      {dialog?.kind === "edit-server" && <ServerForm clusterId={clusterId} server={dialog.server} onClose={() => setDialog(null)} />}
      {dialog?.kind === "token" && <AgentTokenDialog serverName={dialog.serverName} token={dialog.token} rotated={dialog.rotated} onClose={() => setDialog(null)} />}
      {dialog?.kind === "rotate" && (
        <ConfirmDialog
          title={`Rotate the agent token of ${dialog.server.name}?`}
          confirmLabel="Rotate token"
          pending={rotate.isPending}
          error={rotate.error ? errorMessage(rotate.error) : null}
          onClose={() => setDialog(null)}
          onConfirm={() => rotate.mutate({ serverId: dialog.server.id })}
        >
          <p>The current token stops working at once: restart the agent on {dialog.server.name} with the new one.</p>
        </ConfirmDialog>
      )}
      {dialog?.kind === "add-inbound" && (
        <InboundForm
          server={dialog.server}
          clusterId={clusterId}
          onClose={() => setDialog(null)}
          onCreated={(route, chosen) =>
            setNotice({
              text: chosen
                ? `Inbound created in route “${chosen}”.`
                : route
                  ? `Inbound created. As the cluster's first inbound, it was put in a new route “${route}”.`
                  : "Inbound created. It is unassigned until you put it in a route.",
            })
          }
        />
      )}
      {dialog?.kind === "edit-inbound" && <InboundForm server={dialog.server} inbound={dialog.inbound} onClose={() => setDialog(null)} />}
      {dialog?.kind === "delete-inbound" && (
        <ConfirmDialog
          title={`Delete inbound ${dialog.inbound.name}?`}
          confirmLabel="Delete inbound"
          pending={deleteInbound.isPending}
          error={deleteInbound.error ? errorMessage(deleteInbound.error) : null}
          onClose={() => setDialog(null)}
          onConfirm={() => deleteInbound.mutate({ inboundId: dialog.inbound.id })}
        >
          <p>
            Port {dialog.inbound.port} on {dialog.server.name} is removed
            {dialog.inbound.routeName ? `; users of ${dialog.inbound.routeName} on it move to the route's other inbounds.` : "."}
          </p>
          <ImpactSummary impact={impact({ kind: "delete-inbound", inboundId: dialog.inbound.id })} />
        </ConfirmDialog>
      )}
      {dialog?.kind === "delete-server" && (
        <ConfirmDialog
          title={`Delete server ${dialog.server.name}?`}
          confirmLabel={dialog.server.inbounds.length > 0 ? "Delete server and inbounds" : "Delete server"}
          pending={deleteServer.isPending}
          error={deleteServer.error ? errorMessage(deleteServer.error) : null}
          onClose={() => setDialog(null)}
          onConfirm={() => deleteServer.mutate({ serverId: dialog.server.id, deleteInbounds: alsoInbounds })}
        >
          {dialog.server.inbounds.length > 0 ? (
            <>
              <p>
                {dialog.server.name} still has {dialog.server.inbounds.length} inbound{dialog.server.inbounds.length === 1 ? "" : "s"}:{" "}
                {dialog.server.inbounds.map((i) => i.name).join(", ")}. A server with inbounds is only deleted together with them.
              </p>
              <label className="flex items-center gap-2 font-medium">
                <input type="checkbox" className="h-4 w-4 accent-red-600" checked={alsoInbounds} onChange={(e) => setAlsoInbounds(e.target.checked)} />
                Also delete its {dialog.server.inbounds.length} inbound{dialog.server.inbounds.length === 1 ? "" : "s"}
              </label>
            </>
          ) : (
            <p>Its agent token stops working. This cannot be undone.</p>
          )}
          <ImpactSummary impact={impact({ kind: "delete-server", serverId: dialog.server.id })} />
        </ConfirmDialog>
      )}
      {dialog?.kind === "disable-server" && (
        <ImpactDialog
          impact={dialog.impact}
          action={`Disable server ${dialog.server.name}`}
          confirmLabel="Disable server"
          pending={setEnabled.isPending}
          error={setEnabled.error ? errorMessage(setEnabled.error) : null}
          onClose={() => setDialog(null)}
          onConfirm={() => setEnabled.mutate({ serverId: dialog.server.id, enabled: false })}
        />
      )}
    </>
  );
}

/** What a client or the server's operator needs to copy: Reality's public key and short id, TLS paths. */
function InboundKeys({ inbound: i }: { inbound: InboundRow }) {
  const copy = "rounded px-1.5 py-0.5 text-xs text-indigo-700 hover:bg-indigo-50 focus:outline-none focus-visible:ring-2 focus-visible:ring-indigo-500";
  if (i.security === "reality") {
    return (
      <dl className="mt-1 grid grid-cols-[auto_1fr] items-center gap-x-2 text-xs text-slate-600">
        <dt>Public key</dt>
        <dd className="flex items-center gap-1">
          <code className="break-all font-mono" aria-label={`Public key of ${i.name}`}>{i.realityPublicKey ?? "—"}</code>
          {i.realityPublicKey && <CopyButton text={i.realityPublicKey} label="Copy" className={copy} />}
        </dd>
        <dt>Short id</dt>
        <dd className="flex items-center gap-1">
          <code className="font-mono" aria-label={`Short id of ${i.name}`}>{i.realityShortId || "(empty)"}</code>
          {i.realityShortId && <CopyButton text={i.realityShortId} label="Copy" className={copy} />}
          {i.realityShortIds.length > 1 && <span className="text-slate-400">+{i.realityShortIds.length - 1} more</span>}
        </dd>
        <dt>Dest</dt>
        <dd className="font-mono">{i.realityDest ?? (i.sni ? `${i.sni}:443` : "—")}</dd>
      </dl>
    );
  }
  if (i.security === "tls") {
    return (
      <dl className="mt-1 grid grid-cols-[auto_1fr] gap-x-2 text-xs text-slate-600">
        <dt>Certificate</dt>
        <dd className="break-all font-mono">{i.tlsCertificateFile ?? "— (not set: the agent cannot serve it)"}</dd>
        <dt>Key</dt>
        <dd className="break-all font-mono">{i.tlsKeyFile ?? "—"}</dd>
      </dl>
    );
  }
  return null;
}
