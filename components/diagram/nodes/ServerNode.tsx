"use client";
import { Handle, Position, useUpdateNodeInternals, type NodeProps } from "@xyflow/react";
import { memo, useEffect, useRef } from "react";
import { InboundChip } from "../InboundChip";
import { formatBps, plural, statusStyle } from "@/core/format";
import { CHIP_GAP, CHIP_HEIGHT, chipTop, SERVER_HEADER, SERVER_PAD } from "../layout";
import { useZoomLevel } from "../useZoomLevel";
import { COMPACT_FONT_PX } from "../viewport";
import type { ChipData, ServerBox } from "./types";

/**
 * Where each chip's edge starts while the chips are not drawn (zoomed out): the same spots
 * as the chips' own handles, so the edges do not jump when the zoom crosses the threshold.
 */
function ChipHandles({ chips }: { chips: readonly ChipData[] }) {
  return chips.map((c, k) => (
    <Handle
      key={c.id}
      type="source"
      id={`ib:${c.id}`}
      position={Position.Right}
      isConnectable={false}
      className="!pointer-events-none !h-2 !w-2 !min-w-0 !border-0"
      style={{ top: chipTop(k) + CHIP_HEIGHT / 2, right: -1, background: c.route?.color ?? "transparent" }}
    />
  ));
}

/**
 * A server: name, status, load, and its inbounds as chips. Zoomed out, a compact summary in
 * large type (name, status dot, inbound count); further out, its status colour only.
 */
export const ServerNode = memo(function ServerNode({ id, data: server }: NodeProps<ServerBox>) {
  const { chips } = server;
  const updateInternals = useUpdateNodeInternals();
  const level = useZoomLevel();
  const handlesKey = chips.map((c) => `${c.id}:${c.route?.id ?? ""}`).join(",");
  // Chips moved, came or went: React Flow must re-measure where their edges start. Not on
  // mount (React Flow measures new nodes itself; doing it per node again thrashes layout).
  const lastKey = useRef(handlesKey);
  useEffect(() => {
    if (lastKey.current === handlesKey) return;
    lastKey.current = handlesKey;
    updateInternals(id);
  }, [handlesKey, id, updateInternals]);
  const st = statusStyle(server.status);
  if (level !== "full") {
    return (
      <div
        role="group"
        aria-label={`${server.name}: ${st.label}, ${plural(chips.length, "inbound")}`}
        className={`pointer-events-auto relative h-full w-full overflow-hidden rounded-xl border-2 bg-slate-50 shadow-sm ${st.border} ${server.status === "disabled" ? "opacity-75" : ""}`}
        data-server-id={server.id}
        data-status={server.status}
        data-zoom-level={level}
      >
        {level === "compact" ? (
          <div className="flex flex-col gap-1 px-3 pt-2" style={{ fontSize: COMPACT_FONT_PX, lineHeight: 1.2 }} data-testid="server-compact">
            <div className="truncate font-semibold text-slate-900" title={server.address}>
              {server.name}
            </div>
            <div className="flex items-center gap-2 text-slate-600" title={server.statusReason ?? st.label}>
              <span aria-hidden className={`inline-block h-6 w-6 shrink-0 rounded-full ${st.dot}`} />
              <span className="truncate">{plural(chips.length, "inbound")}</span>
            </div>
          </div>
        ) : (
          <span aria-hidden className={`absolute left-3 top-3 h-10 w-10 rounded-full ${st.dot}`} />
        )}
        <ChipHandles chips={chips} />
      </div>
    );
  }
  return (
    <div
      className={`pointer-events-auto h-full w-full overflow-hidden rounded-xl border-2 bg-slate-50 shadow-sm ${st.border} ${server.status === "disabled" ? "opacity-75" : ""}`}
      data-server-id={server.id}
      data-status={server.status}
      data-zoom-level={level}
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
      {chips.length === 0 ? (
        <p className="px-3 text-xs italic text-slate-400">No inbounds</p>
      ) : (
        <ul className="flex flex-col px-3" style={{ gap: CHIP_GAP, paddingBottom: SERVER_PAD }} aria-label={`Inbounds on ${server.name}`}>
          {chips.map((c) => (
            <InboundChip key={c.id} chip={c} />
          ))}
        </ul>
      )}
    </div>
  );
});
