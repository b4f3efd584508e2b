"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { useTRPC } from "@/lib/trpc";
import { errorMessage } from "@/lib/errors";
import { ConfirmDialog } from "@/components/ui/Dialog";

/** Says a cluster is the live demo: its agents are simulated on this machine. */
export function DemoBadge() {
  return (
    <span
      className="shrink-0 rounded bg-violet-100 px-1.5 py-0.5 text-xs font-semibold text-violet-800"
      title="A demo: its servers' agents are simulated inside this app, on this machine"
      data-testid="demo-badge"
    >
      Demo
    </span>
  );
}

/**
 * "Delete demo": removes the demo cluster and everything in it, and stops its simulated
 * agents, after a confirmation. The server refuses any cluster but the demo.
 */
export function DeleteDemoButton({ cluster, className }: { cluster: { id: string; name: string }; className?: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const router = useRouter();
  const [confirming, setConfirming] = useState(false);
  const remove = useMutation(
    trpc.clusters.deleteDemo.mutationOptions({
      onSuccess: async () => {
        setConfirming(false);
        router.push("/clusters");
        await queryClient.invalidateQueries({ queryKey: trpc.clusters.list.queryKey() });
      },
    }),
  );
  return (
    <>
      <button
        type="button"
        onClick={() => setConfirming(true)}
        className={`shrink-0 rounded-md border border-slate-300 bg-white px-2 py-1 text-xs font-medium text-slate-700 hover:border-red-400 hover:bg-red-50 hover:text-red-800 ${className ?? ""}`}
      >
        Delete demo
      </button>
      {confirming && (
        <ConfirmDialog
          title={`Delete the demo cluster ${cluster.name}?`}
          confirmLabel="Delete demo"
          pending={remove.isPending}
          error={remove.error ? errorMessage(remove.error) : null}
          onConfirm={() => remove.mutate({ clusterId: cluster.id })}
          onClose={() => setConfirming(false)}
        >
          <p>
            Its simulated agents stop, and its servers, inbounds, routes and subscribers are deleted. Your own clusters are not touched.
          </p>
          <p>The demo does not come back on the next start.</p>
        </ConfirmDialog>
      )}
    </>
  );
}
