"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { useTRPC } from "@/lib/trpc";
import { errorMessage, fieldErrors } from "@/lib/errors";
import { useCanEdit } from "@/components/AppShell";
import { Field, buttonClass, inputClass, secondaryButtonClass } from "@/components/ui/Field";
import { Dialog, DialogActions } from "@/components/ui/Dialog";
import { DeleteDemoButton, DemoBadge } from "@/components/DemoCluster";
import { DeleteClusterButton } from "@/components/DeleteCluster";

export function ClusterList() {
  const trpc = useTRPC();
  const canEdit = useCanEdit();
  const queryClient = useQueryClient();
  const clusters = useQuery(trpc.clusters.list.queryOptions());
  const [name, setName] = useState("");
  const [renaming, setRenaming] = useState<{ id: string; name: string } | null>(null);
  const create = useMutation(
    trpc.clusters.create.mutationOptions({
      onSuccess: async () => {
        setName("");
        await queryClient.invalidateQueries({ queryKey: trpc.clusters.list.queryKey() });
      },
    }),
  );
  return (
    <main className="mx-auto max-w-4xl p-4 sm:p-6">
      <h1 className="mb-4 text-2xl font-semibold">Clusters</h1>
      {clusters.error && <p role="alert" className="text-red-700">{errorMessage(clusters.error)}</p>}
      {clusters.isLoading && <p className="text-slate-500">Loading…</p>}
      <ul className="grid grid-cols-1 gap-3 sm:grid-cols-2">
        {clusters.data?.map((c) => (
          <li key={c.id} className="relative">
            <Link
              href={`/clusters/${c.id}`}
              className={`block rounded-lg border border-slate-200 bg-white p-4 shadow-sm hover:border-sky-400 ${canEdit ? "pr-36" : ""} ${c.demo ? "pb-12" : ""}`}
            >
              <div className="flex min-w-0 items-center gap-2 text-lg font-semibold">
                <span className="min-w-0 truncate">{c.name}</span>
                {c.demo && <DemoBadge />}
              </div>
              <div className="mt-1 text-sm text-slate-500">
                {c.servers} servers · {c.inbounds} inbounds · {c.routes} routes · {c.subscribers} subscribers
              </div>
              {c.demo && <div className="mt-1 text-xs text-slate-500">Simulated agents on this machine: statuses, users and traffic move by themselves.</div>}
            </Link>
            {canEdit && c.demo && <DeleteDemoButton cluster={c} className="absolute bottom-3 right-3" />}
            {canEdit && (
              <div className="absolute right-3 top-3 flex gap-1">
                <button
                  type="button"
                  aria-label={`Rename cluster ${c.name}`}
                  className="rounded px-2 py-1 text-xs font-medium text-slate-500 hover:bg-slate-100 hover:text-slate-900"
                  onClick={() => setRenaming({ id: c.id, name: c.name })}
                >
                  Rename
                </button>
                <DeleteClusterButton cluster={c} />
              </div>
            )}
          </li>
        ))}
      </ul>
      {clusters.data?.length === 0 && <p className="text-slate-500">No cluster yet.</p>}
      {canEdit && (
        <form
          className="mt-8 flex max-w-md items-end gap-2"
          onSubmit={(e) => {
            e.preventDefault();
            create.mutate({ name });
          }}
        >
          {/* min-w-0: the input's intrinsic width must not push the button past a phone's edge. */}
          <div className="min-w-0 flex-1">
            <Field label="New cluster name" error={fieldErrors(create.error).name ?? (create.error ? errorMessage(create.error) : undefined)}>
              {(p) => <input {...p} className={inputClass} value={name} onChange={(e) => setName(e.target.value)} placeholder="e.g. Europe" />}
            </Field>
          </div>
          <button className={`${buttonClass} shrink-0`} disabled={create.isPending}>
            Create cluster
          </button>
        </form>
      )}
      {renaming && <RenameDialog cluster={renaming} onClose={() => setRenaming(null)} />}
    </main>
  );
}

function RenameDialog({ cluster, onClose }: { cluster: { id: string; name: string }; onClose: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState(cluster.name);
  const rename = useMutation(
    trpc.clusters.rename.mutationOptions({
      onSuccess: async () => {
        await Promise.all([
          queryClient.invalidateQueries({ queryKey: trpc.clusters.list.queryKey() }),
          queryClient.invalidateQueries({ queryKey: trpc.clusters.get.queryKey() }),
          queryClient.invalidateQueries({ queryKey: trpc.topology.get.queryKey() }),
        ]);
        onClose();
      },
    }),
  );
  return (
    <Dialog title={`Rename cluster ${cluster.name}`} onClose={onClose} size="sm">
      <form
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          rename.mutate({ clusterId: cluster.id, name });
        }}
      >
        <Field label="Name" error={fieldErrors(rename.error).name ?? (rename.error ? errorMessage(rename.error) : undefined)}>
          {(p) => <input {...p} data-autofocus className={inputClass} value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <DialogActions>
          <button type="button" className={secondaryButtonClass} onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className={buttonClass} disabled={rename.isPending}>
            {rename.isPending ? "Saving…" : "Rename"}
          </button>
        </DialogActions>
      </form>
    </Dialog>
  );
}
