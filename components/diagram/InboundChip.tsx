"use client";
import { useDraggable } from "@dnd-kit/core";
import { Handle, Position } from "@xyflow/react";
import { memo } from "react";
import { CHIP_HEIGHT } from "./layout";
import { chipDomId } from "./topology-index";
import { MoveMenu } from "./MoveMenu";
import type { ChipData } from "./nodes/types";
import { plural } from "@/core/format";
import { selectActions, selectCanEdit, selectIsCarried, selectIsHighlighted, useDiagramStore, useDiagramStoreApi } from "./store";
import { FlagText } from "@/components/ui/Flag";

export const inboundDragId = (id: string) => `inbound:${id}`;

/**
 * One inbound inside its server box: a button named exactly like the inbound (drag it, or
 * press Space/Enter to pick it up from the keyboard), its users, and the "Move to…" menu.
 * The handle on its right edge is where its edge to the route starts.
 */
export const InboundChip = memo(function InboundChip({ chip: inbound }: { chip: ChipData }) {
  const canEdit = useDiagramStore(selectCanEdit);
  const { startCarry } = useDiagramStore(selectActions);
  const store = useDiagramStoreApi();
  // Only this chip's own answers: picking up or highlighting another chip re-renders nothing here.
  const carried = useDiagramStore(selectIsCarried(inbound.id));
  const highlighted = useDiagramStore(selectIsHighlighted(inbound.id));
  const { setNodeRef, listeners, isDragging } = useDraggable({
    id: inboundDragId(inbound.id),
    data: { type: "inbound", inboundId: inbound.id, name: inbound.name },
    disabled: !canEdit,
  });
  const { route, unavailable } = inbound;
  const color = route?.color ?? "#94a3b8";
  const descId = `${chipDomId(inbound.id)}-desc`;
  return (
    <li
      className={`relative flex items-center gap-1 rounded-md border pr-1 shadow-sm transition-shadow ${unavailable ? "border-dashed bg-red-50" : "bg-white"} ${
        carried || highlighted ? "border-sky-500 ring-2 ring-sky-400" : unavailable ? "border-red-400" : "border-slate-200"
      } ${isDragging ? "opacity-40" : ""}`}
      style={{ height: CHIP_HEIGHT, borderLeft: `4px solid ${color}` }}
      data-inbound-id={inbound.id}
      data-available={!unavailable}
    >
      <button
        ref={setNodeRef}
        id={chipDomId(inbound.id)}
        type="button"
        aria-describedby={descId}
        aria-pressed={canEdit ? carried : undefined}
        {...(canEdit ? listeners : {})}
        onKeyDown={(e) => {
          if (!canEdit || store.getState().carry) return;
          if (e.key === " " || e.key === "Enter") {
            e.preventDefault();
            e.stopPropagation();
            startCarry(inbound.id);
          }
        }}
        className={`nodrag nopan h-full min-w-[45%] flex-1 truncate rounded-l px-2 text-left text-[13px] font-medium text-slate-800 focus-visible:outline-2 focus-visible:outline-offset-1 focus-visible:outline-sky-600 ${
          canEdit ? "cursor-grab touch-none active:cursor-grabbing" : "cursor-default"
        }`}
        title={unavailable ? `${inbound.name} — unavailable: ${unavailable}` : inbound.name}
      >
        <span className={unavailable ? "text-red-800 line-through decoration-red-400" : undefined}>
          <FlagText text={inbound.name} />
        </span>
      </button>
      {inbound.kind && (
        // The name comes first: in a narrow server box the kind gives way (its full text in the title).
        <span className="min-w-0 truncate font-mono text-xs leading-none text-slate-500" title={`Protocol·transport·security: ${inbound.kind}`} aria-hidden data-testid="inbound-kind">
          {inbound.kind}
        </span>
      )}
      {unavailable && (
        // Its server does not serve it (issue 25): never handed out, whatever the server's dot says.
        <span
          role="img"
          aria-label={`Unavailable: ${unavailable}`}
          title={`Unavailable: ${unavailable}. The balancer hands it to no one until its server serves it again.`}
          className="grid h-4 w-4 shrink-0 place-items-center rounded-full bg-red-600 text-[10px] font-bold leading-none text-white"
          data-testid="inbound-unavailable"
        >
          !
        </span>
      )}
      <span
        className="shrink-0 rounded bg-slate-100 px-1.5 py-0.5 text-xs tabular-nums text-slate-600"
        title={plural(inbound.users, "user")}
        aria-hidden
      >
        <svg viewBox="0 0 20 20" className="mr-0.5 inline h-3 w-3 -translate-y-px" fill="currentColor">
          <path d="M10 10a4 4 0 1 0 0-8 4 4 0 0 0 0 8Zm-7 8a7 7 0 0 1 14 0H3Z" />
        </svg>
        {inbound.users}
      </span>
      <span id={descId} className="sr-only">
        {inbound.kind ? `${inbound.kind}, ` : ""}
        {plural(inbound.users, "user")}, port {inbound.port}, {route ? `in route ${route.name}` : "not in any route"}
        {inbound.isFallback ? ", fallback" : ""}
        {unavailable ? `, unavailable: ${unavailable}` : ""}
        {canEdit ? ". Drag to a route, or press Space to pick up and arrow keys to choose a route." : "."}
      </span>
      {canEdit && <MoveMenu inbound={inbound} current={route?.id ?? null} />}
      <Handle
        type="source"
        id={`ib:${inbound.id}`}
        position={Position.Right}
        isConnectable={false}
        className="!pointer-events-none !h-2 !w-2 !min-w-0 !border-0"
        style={{ background: route ? color : "transparent", right: -13 }}
      />
    </li>
  );
});
