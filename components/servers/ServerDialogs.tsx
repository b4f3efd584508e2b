"use client";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { ConfirmDialog } from "@/components/ui/Dialog";
import { ImpactDialog, ImpactSummary } from "@/components/ui/ImpactDialog";
import type { Change, Impact } from "@/core/impact";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { AgentTokenDialog } from "./AgentTokenDialog";
import { InboundForm } from "./InboundForm";
import { ServerForm } from "./ServerForm";
import { deletedServerNotice, inboundCreatedNotice, plural, type DialogState, type InboundRow, type ServerRow } from "./servers-view";
import { FlagText } from "@/components/ui/Flag";
import { useRefreshServers } from "./useRefreshServers";

type Notice = { text: string; error?: boolean };

/** The dialog the servers page has open, if any. Each confirmation owns its request, so it opens without an old error. */
export function ServerDialogs(props: {
  clusterId: string;
  dialog: DialogState;
  setDialog(d: DialogState): void;
  setNotice(n: Notice): void;
  /** What a change would cost the routes, from the cluster's topology. */
  impact(change: Change): Impact;
  disable: { pending: boolean; error: unknown; confirm(serverId: string): void };
}) {
  const { clusterId, dialog, setDialog } = props;
  const close = () => setDialog(null);
  switch (dialog?.kind) {
    case "add-server":
      return <ServerForm clusterId={clusterId} onClose={close} onCreated={(r) => setDialog({ kind: "token", serverName: r.name, token: r.agentToken, rotated: false })} />;
    case "edit-server":
      return <ServerForm clusterId={clusterId} server={dialog.server} onClose={close} />;
    case "token":
      return <AgentTokenDialog serverName={dialog.serverName} token={dialog.token} rotated={dialog.rotated} onClose={close} />;
    case "rotate":
      return <RotateTokenDialog server={dialog.server} setDialog={setDialog} />;
    case "add-inbound":
      return (
        <InboundForm server={dialog.server} clusterId={clusterId} onClose={close} onCreated={(route, chosen) => props.setNotice({ text: inboundCreatedNotice(route, chosen) })} />
      );
    case "edit-inbound":
      return <InboundForm server={dialog.server} inbound={dialog.inbound} onClose={close} />;
    case "delete-inbound":
      return <DeleteInboundDialog server={dialog.server} inbound={dialog.inbound} impact={props.impact({ kind: "delete-inbound", inboundId: dialog.inbound.id })} onClose={close} />;
    case "delete-server":
      return (
        <DeleteServerDialog
          server={dialog.server}
          impact={props.impact({ kind: "delete-server", serverId: dialog.server.id })}
          onClose={close}
          onDeleted={(deletedInbounds) => props.setNotice({ text: deletedServerNotice(deletedInbounds) })}
        />
      );
    case "disable-server":
      return (
        <ImpactDialog
          impact={dialog.impact}
          action={`Disable server ${dialog.server.name}`}
          confirmLabel="Disable server"
          pending={props.disable.pending}
          error={props.disable.error ? errorMessage(props.disable.error) : null}
          onClose={close}
          onConfirm={() => props.disable.confirm(dialog.server.id)}
        />
      );
    default:
      return null;
  }
}

function RotateTokenDialog({ server, setDialog }: { server: ServerRow; setDialog(d: DialogState): void }) {
  const trpc = useTRPC();
  const rotate = useMutation(
    trpc.servers.rotateToken.mutationOptions({
      onSuccess: (r) => setDialog({ kind: "token", serverName: r.name, token: r.agentToken, rotated: true }),
    }),
  );
  return (
    <ConfirmDialog
      title={`Rotate the agent token of ${server.name}?`}
      confirmLabel="Rotate token"
      pending={rotate.isPending}
      error={rotate.error ? errorMessage(rotate.error) : null}
      onClose={() => setDialog(null)}
      onConfirm={() => rotate.mutate({ serverId: server.id })}
    >
      <p>The current token stops working at once: restart the agent on {server.name} with the new one.</p>
    </ConfirmDialog>
  );
}

function DeleteInboundDialog({ server, inbound, impact, onClose }: { server: ServerRow; inbound: InboundRow; impact: Impact; onClose(): void }) {
  const trpc = useTRPC();
  const refresh = useRefreshServers();
  const deleteInbound = useMutation(
    trpc.inbounds.delete.mutationOptions({
      onSuccess: async () => {
        onClose();
        await refresh();
      },
    }),
  );
  return (
    <ConfirmDialog
      title={`Delete inbound ${inbound.name}?`}
      confirmLabel="Delete inbound"
      pending={deleteInbound.isPending}
      error={deleteInbound.error ? errorMessage(deleteInbound.error) : null}
      onClose={onClose}
      onConfirm={() => deleteInbound.mutate({ inboundId: inbound.id })}
    >
      <p>
        Port {inbound.port} on {server.name} is removed
        {inbound.routeName ? (
          <>
            ; users of <FlagText text={inbound.routeName} /> on it move to the route&apos;s other inbounds.
          </>
        ) : (
          "."
        )}
      </p>
      <ImpactSummary impact={impact} />
    </ConfirmDialog>
  );
}

/** A server with inbounds is only deleted together with them, which the operator ticks explicitly. */
function DeleteServerDialog(props: { server: ServerRow; impact: Impact; onClose(): void; onDeleted(deletedInbounds: number): void }) {
  const { server, onClose } = props;
  const trpc = useTRPC();
  const refresh = useRefreshServers();
  const [alsoInbounds, setAlsoInbounds] = useState(false);
  const deleteServer = useMutation(
    trpc.servers.delete.mutationOptions({
      onSuccess: async (r) => {
        props.onDeleted(r.deletedInbounds);
        onClose();
        await refresh();
      },
    }),
  );
  const count = server.inbounds.length;
  return (
    <ConfirmDialog
      title={`Delete server ${server.name}?`}
      confirmLabel={count > 0 ? "Delete server and inbounds" : "Delete server"}
      pending={deleteServer.isPending}
      error={deleteServer.error ? errorMessage(deleteServer.error) : null}
      onClose={onClose}
      onConfirm={() => deleteServer.mutate({ serverId: server.id, deleteInbounds: alsoInbounds })}
    >
      {count > 0 ? (
        <>
          <p>
            {server.name} still has {plural(count, "inbound")}: {server.inbounds.map((i) => i.name).join(", ")}. A server with inbounds is only deleted together with them.
          </p>
          <label className="flex items-center gap-2 font-medium">
            <input type="checkbox" className="h-4 w-4 accent-red-600" checked={alsoInbounds} onChange={(e) => setAlsoInbounds(e.target.checked)} />
            Also delete its {plural(count, "inbound")}
          </label>
        </>
      ) : (
        <p>Its agent token stops working. This cannot be undone.</p>
      )}
      <ImpactSummary impact={props.impact} />
    </ConfirmDialog>
  );
}
