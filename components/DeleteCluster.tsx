"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { usePathname, useRouter } from "next/navigation";
import { useState } from "react";
import { useTRPC } from "@/lib/trpc";
import { errorMessage, fieldErrors } from "@/lib/errors";
import { plural } from "@/core/plural";
import { Dialog, DialogActions } from "@/components/ui/Dialog";
import { Field, inputClass, secondaryButtonClass } from "@/components/ui/Field";
import { FormAlert } from "@/components/ui/FormAlert";

/**
 * "Delete" on a cluster (any cluster, the demo included): a dialog that says what goes with it
 * and asks for the cluster's name typed out; the button stays disabled until it matches, and
 * the server checks the typed name again.
 */
export function DeleteClusterButton({ cluster, className }: { cluster: { id: string; name: string }; className?: string }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button
        type="button"
        aria-label={`Delete cluster ${cluster.name}`}
        className={`rounded px-2 py-1 text-xs font-medium text-slate-500 hover:bg-red-50 hover:text-red-800 ${className ?? ""}`}
        onClick={() => setOpen(true)}
      >
        Delete
      </button>
      {open && <DeleteClusterDialog cluster={cluster} onClose={() => setOpen(false)} />}
    </>
  );
}

function DeleteClusterDialog({ cluster, onClose }: { cluster: { id: string; name: string }; onClose: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const router = useRouter();
  const pathname = usePathname();
  const [typed, setTyped] = useState("");
  const impact = useQuery(trpc.clusters.deletionImpact.queryOptions({ clusterId: cluster.id }));
  const remove = useMutation(
    trpc.clusters.delete.mutationOptions({
      onSuccess: async () => {
        onClose();
        // Its pages are gone with it.
        if (pathname.startsWith(`/clusters/${cluster.id}`)) router.push("/clusters");
        await queryClient.invalidateQueries({ queryKey: trpc.clusters.list.queryKey() });
      },
    }),
  );
  const matches = typed.trim() === cluster.name;
  const n = impact.data;
  return (
    <Dialog title={`Delete cluster ${cluster.name}?`} onClose={onClose} size="sm">
      <form
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          if (matches) remove.mutate({ clusterId: cluster.id, confirmName: typed });
        }}
      >
        <div className="space-y-3 text-sm text-slate-700">
          <p>This deletes, for good:</p>
          {impact.error && <p role="alert" className="text-red-700">{errorMessage(impact.error)}</p>}
          {n ? (
            <ul className="list-disc pl-5" aria-label="What is deleted">
              <li>{plural(n.servers, "server")}: their agents are refused from now on and stop</li>
              <li>{plural(n.inbounds, "inbound")}</li>
              <li>{plural(n.routes, "route")}</li>
              <li>{plural(n.subscribers, "subscriber")}: their subscription links stop working</li>
            </ul>
          ) : (
            !impact.error && <p className="text-slate-500">Counting…</p>
          )}
          <Field label={`Type ${cluster.name} to confirm`} error={fieldErrors(remove.error).confirmName}>
            {(p) => <input {...p} data-autofocus autoComplete="off" className={inputClass} value={typed} onChange={(e) => setTyped(e.target.value)} />}
          </Field>
        </div>
        {remove.error && !fieldErrors(remove.error).confirmName && <FormAlert className="mt-3">{errorMessage(remove.error)}</FormAlert>}
        <DialogActions>
          <button type="button" className={secondaryButtonClass} onClick={onClose}>
            Cancel
          </button>
          <button
            type="submit"
            disabled={!matches || remove.isPending}
            className="inline-flex items-center justify-center rounded-md bg-red-600 px-4 py-2 text-sm font-semibold text-white shadow-sm hover:bg-red-700 disabled:cursor-not-allowed disabled:opacity-60"
          >
            {remove.isPending ? "Deleting…" : "Delete cluster"}
          </button>
        </DialogActions>
      </form>
    </Dialog>
  );
}
