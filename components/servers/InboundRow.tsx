"use client";
import { routeFlagPrefix } from "@/core/format";
import { protocolSummary } from "@/core/inbound-protocols";
import { InboundKeys } from "./InboundKeys";
import { SECURITY_LABEL, type InboundRow as Inbound } from "./servers-view";
import { smallButton, smallDangerButton } from "@/components/ui/buttons";
import { FlagText } from "@/components/ui/Flag";

/** One inbound of a server's table; on a phone the row is a card whose cells carry their data-label. */
export function InboundRow(props: {
  inbound: Inbound;
  canEdit: boolean;
  fallbackPending: boolean;
  onToggleFallback(): void;
  onEdit(): void;
  onDelete(): void;
}) {
  const { inbound: i, canEdit } = props;
  const flag = routeFlagPrefix(i.routeName ?? "", i.routeFlag);
  return (
    <tr className="align-middle">
      <td className="px-4 py-2 font-medium text-slate-900">
        <FlagText text={i.name} />
      </td>
      <td data-label="Port" className="px-2 py-2 font-mono">{i.port}</td>
      <td data-label="Security" className="card-full px-2 py-2 max-sm:order-1">
        {SECURITY_LABEL[i.security]}
        {/* The protocol and transport it serves (issue 26), e.g. "VMess·ws". */}
        <div className="text-xs text-slate-500" data-testid="inbound-protocol">
          {protocolSummary({ protocol: i.protocol, transport: i.transport, security: "none" })}
        </div>
        <InboundKeys inbound={i} />
      </td>
      <td data-label="SNI" className="px-2 py-2 text-slate-600">{i.sni ?? "—"}</td>
      <td data-label="Route" className="px-2 py-2">
        {i.routeName ? (
          <span className="inline-flex items-center gap-1.5">
            {flag && (
              <span data-testid="route-flag">
                <FlagText text={flag} />
              </span>
            )}
            <FlagText text={i.routeName} />
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
              className={smallButton}
              aria-label={i.isFallback ? `Unmark ${i.name} as fallback` : `Mark ${i.name} as fallback`}
              disabled={props.fallbackPending}
              onClick={props.onToggleFallback}
            >
              {i.isFallback ? "Unmark fallback" : "Mark fallback"}
            </button>
          )}
          <button type="button" className={smallButton} aria-label={`Edit inbound ${i.name}`} onClick={props.onEdit}>
            Edit
          </button>
          <button type="button" className={smallDangerButton} aria-label={`Delete inbound ${i.name}`} onClick={props.onDelete}>
            Delete
          </button>
        </td>
      )}
    </tr>
  );
}
