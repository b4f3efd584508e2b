"use client";
import { useUpdateNodeInternals, type NodeProps } from "@xyflow/react";
import { memo, useEffect, useRef } from "react";
import { useDiagram } from "../context";
import { InboundChip } from "../InboundChip";
import { formatBps, plural, statusStyle } from "@/core/format";
import { CHIP_GAP, SERVER_HEADER, SERVER_PAD } from "../layout";
import type { DiagramNode } from "./types";

/** A server: name, status, load, and its inbounds as chips. */
export const ServerNode = memo(function ServerNode({ id, data }: NodeProps<DiagramNode>) {
  const { index } = useDiagram();
  const server = index.serverById.get(data.refId ?? "");
  const inbounds = server ? (index.inboundsByServer.get(server.id) ?? []) : [];
  const updateInternals = useUpdateNodeInternals();
  const handlesKey = inbounds.map((i) => `${i.id}:${i.routeId ?? ""}`).join(",");
  // Chips moved, came or went: React Flow must re-measure where their edges start. Not on
  // mount (React Flow measures new nodes itself; doing it per node again thrashes layout).
  const lastKey = useRef(handlesKey);
  useEffect(() => {
    if (lastKey.current === handlesKey) return;
    lastKey.current = handlesKey;
    updateInternals(id);
  }, [handlesKey, id, updateInternals]);
  if (!server) return null;
  const st = statusStyle(server.status);
  return (
    <div
      className={`pointer-events-auto h-full w-full overflow-hidden rounded-xl border-2 bg-slate-50 shadow-sm ${st.border} ${server.status === "disabled" ? "opacity-75" : ""}`}
      data-server-id={server.id}
      data-status={server.status}
    >
      <div className="flex flex-col justify-center gap-0.5 px-3" style={{ height: SERVER_HEADER }}>
        <div className="flex items-baseline gap-2">
          <span className="truncate text-[15px] font-semibold text-slate-900" title={server.address}>
            {server.name}
          </span>
          <span className="truncate text-xs text-slate-400">{server.address}</span>
        </div>
        <div className={`flex items-center gap-1.5 text-xs font-medium ${st.text}`} title={server.statusReason ?? undefined}>
          <span aria-hidden className={`inline-block h-2.5 w-2.5 rounded-full ${st.dot}`} />
          <span data-testid="server-status">{st.label}</span>
        </div>
        <div className="flex gap-3 text-xs tabular-nums text-slate-600">
          <span>{plural(server.usersOnline, "user")} online</span>
          <span aria-label={`traffic ${formatBps(server.trafficBps)}`}>⇅ {formatBps(server.trafficBps)}</span>
        </div>
      </div>
      {inbounds.length === 0 ? (
        <p className="px-3 text-xs italic text-slate-400">No inbounds</p>
      ) : (
        <ul className="flex flex-col px-3" style={{ gap: CHIP_GAP, paddingBottom: SERVER_PAD }} aria-label={`Inbounds on ${server.name}`}>
          {inbounds.map((i) => (
            <InboundChip key={i.id} inbound={i} />
          ))}
        </ul>
      )}
    </div>
  );
});
