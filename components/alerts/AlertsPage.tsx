"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useOperator } from "@/components/AppShell";
import { ConfirmDialog } from "@/components/ui/Dialog";
import { buttonClass } from "@/components/ui/Field";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import type { Target } from "./alert-view";
import { TargetCard } from "./TargetCard";
import { TargetDialog } from "./TargetDialog";
import { FormAlert } from "@/components/ui/FormAlert";

/** Admins' page: where alerts go, whether they arrive, and a test button per target. */
export function AlertsPage() {
  const trpc = useTRPC();
  const me = useOperator();
  const queryClient = useQueryClient();
  const allowed = me.role !== "viewer";
  const list = useQuery({ ...trpc.alerts.list.queryOptions(undefined, { enabled: allowed }), refetchInterval: 2000 });
  const [editing, setEditing] = useState<Target | "new" | null>(null);
  const [removing, setRemoving] = useState<Target | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.alerts.list.queryKey() });
  const sendTest = useMutation(trpc.alerts.sendTest.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(
    trpc.alerts.delete.mutationOptions({
      onSuccess: async () => {
        setRemoving(null);
        await refresh();
      },
    }),
  );
  if (!allowed) return <main className="mx-auto max-w-3xl p-4 sm:p-6 text-slate-600">Only admins and the owner manage alerts.</main>;
  const targets = (list.data ?? []) as Target[];
  return (
    <main className="mx-auto max-w-5xl p-4 sm:p-6">
      <div className="mb-5 flex items-end justify-between gap-4">
        <div>
          <h1 className="mb-1 text-2xl font-semibold">Alerts</h1>
          <p className="text-sm text-slate-500">Webhooks and Telegram chats told when servers go down or come back, routes panic, subscribers run out, or an agent rejects its config.</p>
        </div>
        <button type="button" className={buttonClass} onClick={() => setEditing("new")}>
          Add target
        </button>
      </div>
      {list.error && (
        <p role="alert" className="text-red-700">
          {errorMessage(list.error)}
        </p>
      )}
      {sendTest.error && <FormAlert className="mb-3">{errorMessage(sendTest.error)}</FormAlert>}
      {list.data && targets.length === 0 && <p className="rounded-lg border border-dashed border-slate-300 bg-white p-6 text-sm text-slate-500">No alert targets yet.</p>}
      <ul className="flex flex-col gap-3">
        {targets.map((t) => (
          <TargetCard
            key={t.id}
            target={t}
            testPending={sendTest.isPending}
            onSendTest={() => sendTest.mutate({ targetId: t.id })}
            onEdit={() => setEditing(t)}
            onDelete={() => setRemoving(t)}
          />
        ))}
      </ul>
      {editing && <TargetDialog target={editing === "new" ? null : editing} onClose={() => setEditing(null)} />}
      {removing && (
        <ConfirmDialog
          title={`Delete ${removing.name}?`}
          confirmLabel="Delete"
          pending={remove.isPending}
          error={remove.error ? errorMessage(remove.error) : undefined}
          onConfirm={() => remove.mutate({ targetId: removing.id })}
          onClose={() => setRemoving(null)}
        >
          Alerts stop going there; its pending deliveries are dropped.
        </ConfirmDialog>
      )}
    </main>
  );
}
