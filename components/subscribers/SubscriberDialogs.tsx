"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { ConfirmDialog } from "@/components/ui/Dialog";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import type { SubscriberListRow } from "@/server/accounts/subscriber-list";
import { formatBytes } from "./format";
import { LinkDialog } from "./LinkDialog";
import { SubscriberForm } from "./SubscriberForm";

type Row = SubscriberListRow;
export type DialogState =
  | { kind: "new" }
  | { kind: "edit"; row: Row }
  | { kind: "link"; name: string; token: string }
  | { kind: "rotate"; row: Row }
  | { kind: "resetUsage"; row: Row }
  | { kind: "delete"; row: Row }
  | null;

/**
 * Refetches everything under `subscribers.*`: the list, and the usage periods the edit dialog
 * shows (a reset by hand closes one). The mutations await it, so a dialog closes (in the
 * per-call callback, which a closed dialog no longer receives) on rows already up to date.
 */
function useRefresh() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return () => queryClient.invalidateQueries({ queryKey: trpc.subscribers.pathKey() });
}

function RotateDialog({ row, onClose, onRotated }: { row: Row; onClose: () => void; onRotated: (token: string) => void }) {
  const trpc = useTRPC();
  const refresh = useRefresh();
  const rotate = useMutation(trpc.subscribers.rotateToken.mutationOptions({ onSuccess: refresh }));
  return (
    <ConfirmDialog
      title={`Rotate the link of ${row.name}?`}
      confirmLabel="Rotate link"
      pending={rotate.isPending}
      error={rotate.error ? errorMessage(rotate.error) : null}
      onClose={onClose}
      onConfirm={() => rotate.mutate({ subscriberId: row.id }, { onSuccess: (r) => onRotated(r.token) })}
    >
      <p>
        The current link stops working at once, and so do the servers it gave out (a new key: whoever copied the old link is cut off); {row.name} must add the new link in their
        VPN app. The devices listed are forgotten: each app is counted again at its first fetch with the new link.
      </p>
    </ConfirmDialog>
  );
}

function ResetUsageDialog({ row, onClose }: { row: Row; onClose: () => void }) {
  const trpc = useTRPC();
  const refresh = useRefresh();
  const reset = useMutation(trpc.subscribers.resetUsage.mutationOptions({ onSuccess: refresh }));
  return (
    <ConfirmDialog
      title={`Reset the usage of ${row.name}?`}
      confirmLabel="Reset usage"
      pending={reset.isPending}
      error={reset.error ? errorMessage(reset.error) : null}
      onClose={onClose}
      onConfirm={() => reset.mutate({ subscriberId: row.id }, { onSuccess: onClose })}
    >
      <p>
        Used traffic goes back to 0 ({formatBytes(row.trafficUsedBytes)} used now is kept as a previous period).
        {row.status === "limited" ? ` ${row.name} can connect again at once.` : ""}
      </p>
    </ConfirmDialog>
  );
}

function DeleteDialog({ row, onClose }: { row: Row; onClose: () => void }) {
  const trpc = useTRPC();
  const refresh = useRefresh();
  const remove = useMutation(trpc.subscribers.delete.mutationOptions({ onSuccess: refresh }));
  return (
    <ConfirmDialog
      title={`Delete subscriber ${row.name}?`}
      confirmLabel="Delete subscriber"
      pending={remove.isPending}
      error={remove.error ? errorMessage(remove.error) : null}
      onClose={onClose}
      onConfirm={() => remove.mutate({ subscriberId: row.id }, { onSuccess: onClose })}
    >
      <p>Their subscription link stops working. This cannot be undone.</p>
    </ConfirmDialog>
  );
}

/** The one dialog open on the subscribers page, if any; each confirmation runs its own mutation. */
export function SubscriberDialogs({ clusterId, dialog, setDialog }: { clusterId: string; dialog: DialogState; setDialog: (d: DialogState) => void }) {
  const close = () => setDialog(null);
  switch (dialog?.kind) {
    case "new":
      // The link dialog opens after the form has closed, so focus moves from one to the other.
      return <SubscriberForm clusterId={clusterId} onClose={close} onCreated={(r) => setTimeout(() => setDialog({ kind: "link", name: r.name, token: r.token }), 0)} />;
    case "edit":
      return <SubscriberForm clusterId={clusterId} subscriber={dialog.row} onClose={close} />;
    case "link":
      return <LinkDialog name={dialog.name} token={dialog.token} clusterId={clusterId} onClose={close} />;
    case "rotate":
      return <RotateDialog key={dialog.row.id} row={dialog.row} onClose={close} onRotated={(token) => setDialog({ kind: "link", name: dialog.row.name, token })} />;
    case "resetUsage":
      return <ResetUsageDialog key={dialog.row.id} row={dialog.row} onClose={close} />;
    case "delete":
      return <DeleteDialog key={dialog.row.id} row={dialog.row} onClose={close} />;
    default:
      return null;
  }
}
