"use client";
import { StatusBadge } from "@/components/ui/StatusBadge";
import { InboundRow } from "./InboundRow";
import { capacityText, ROLE_LABEL, type DialogState, type InboundRow as Inbound, type ServerRow } from "./servers-view";
import { smallButton } from "@/components/ui/buttons";

/** One server: its status and details, its actions, and the table of its inbounds. */
export function ServerCard(props: {
  server: ServerRow;
  canEdit: boolean;
  /** Opens one of the page's dialogs about this server or one of its inbounds. */
  onDialog(dialog: NonNullable<DialogState>): void;
  togglePending: boolean;
  onToggle(): void;
  fallbackPending: boolean;
  onToggleFallback(inbound: Inbound): void;
}) {
  const { server: s, canEdit, onDialog } = props;
  return (
    <section aria-label={`Server ${s.name}`} className={`rounded-lg border bg-white shadow-sm ${s.enabled ? "border-slate-200" : "border-slate-200 opacity-80"}`}>
      <header className="flex flex-wrap items-center gap-x-4 gap-y-2 border-b border-slate-100 px-4 py-3">
        <div className="min-w-0">
          <h2 className="flex flex-wrap items-center gap-2 text-base font-semibold text-slate-900 [overflow-wrap:anywhere]">
            {s.name} <StatusBadge status={s.status} title={s.statusReason} />
          </h2>
          <p className="mt-0.5 text-sm text-slate-500">
            <span className="font-mono">{s.address}</span> · {ROLE_LABEL[s.role]} · coefficient {s.coefficient}
            {capacityText(s.capacityMbps)}
          </p>
        </div>
        {canEdit && (
          <div className="ml-auto flex flex-wrap items-center gap-1">
            <button type="button" className={smallButton} onClick={() => onDialog({ kind: "add-inbound", server: s })}>
              + Inbound
            </button>
            <button type="button" className={smallButton} aria-label={`Edit server ${s.name}`} onClick={() => onDialog({ kind: "edit-server", server: s })}>
              Edit
            </button>
            <button type="button" className={smallButton} disabled={props.togglePending} aria-label={`${s.enabled ? "Disable" : "Enable"} server ${s.name}`} onClick={props.onToggle}>
              {s.enabled ? "Disable" : "Enable"}
            </button>
            <button type="button" className={smallButton} aria-label={`Rotate agent token of ${s.name}`} onClick={() => onDialog({ kind: "rotate", server: s })}>
              Rotate token
            </button>
            <button
              type="button"
              className={`${smallButton} text-red-700 hover:bg-red-50 hover:text-red-800`}
              aria-label={`Delete server ${s.name}`}
              onClick={() => onDialog({ kind: "delete-server", server: s })}
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
                <InboundRow
                  key={i.id}
                  inbound={i}
                  canEdit={canEdit}
                  fallbackPending={props.fallbackPending}
                  onToggleFallback={() => props.onToggleFallback(i)}
                  onEdit={() => onDialog({ kind: "edit-inbound", server: s, inbound: i })}
                  onDelete={() => onDialog({ kind: "delete-inbound", server: s, inbound: i })}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
