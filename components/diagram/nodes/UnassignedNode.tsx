"use client";
import { useDroppable } from "@dnd-kit/core";
import type { NodeProps } from "@xyflow/react";
import { memo } from "react";
import { selectCanEdit, selectIsCarryTarget, useDiagramStore } from "../store";
import { ITEM_HEIGHT, UNASSIGNED_HEADER } from "../layout";
import { useZoomLevel } from "../useZoomLevel";
import { COMPACT_FONT_PX } from "../viewport";
import { plural } from "@/core/format";
import type { UnassignedBox, UnassignedBoxData } from "./types";
import { useRowDrag } from "./useRowDrag";
import { FlagText } from "@/components/ui/Flag";

export const UNASSIGNED_DROP_ID = "unassigned-drop";

const selectIsCarriedHere = selectIsCarryTarget(null);

/** One unassigned inbound: drag it into a route. */
function UnassignedRow({ row: i }: { row: UnassignedBoxData["shown"][number] }) {
  const drag = useRowDrag("unassigned", i.id, i.name);
  return (
    <li ref={drag.ref} {...drag.listeners} className={`flex items-center gap-2 ${drag.className}`} style={{ height: ITEM_HEIGHT }} data-row-inbound={i.id}>
      <span aria-hidden className="h-1.5 w-1.5 shrink-0 rounded-full bg-amber-500" />
      <span className="truncate text-slate-800">
        <FlagText text={i.name} />
      </span>
      <span className="ml-auto shrink-0 truncate text-xs text-slate-500">{i.serverName}</span>
    </li>
  );
}

/** Inbounds in no route: invisible to users. Drop a chip here to take it out of every route. */
export const UnassignedNode = memo(function UnassignedNode({ data }: NodeProps<UnassignedBox>) {
  const canEdit = useDiagramStore(selectCanEdit);
  const carriedHere = useDiagramStore(selectIsCarriedHere);
  const { setNodeRef, isOver } = useDroppable({ id: UNASSIGNED_DROP_ID, data: { type: "unassigned", accepts: ["inbound"] }, disabled: !canEdit });
  const level = useZoomLevel();
  const { count, shown } = data;
  const dropping = isOver || carriedHere;
  return (
    <section
      ref={setNodeRef}
      aria-label="Unassigned inbounds"
      data-unassigned-zone
      data-drop-target={dropping || undefined}
      className={`pointer-events-auto h-full w-full overflow-hidden rounded-xl border-2 border-dashed transition-colors ${
        dropping ? "border-sky-500 bg-sky-50 ring-4 ring-sky-200" : count > 0 ? "border-amber-400 bg-amber-50/70" : "border-slate-300 bg-white/70"
      }`}
    >
      {level !== "full" ? (
        level === "compact" && (
          <div className="flex h-full flex-col justify-center gap-1 px-3" style={{ fontSize: COMPACT_FONT_PX, lineHeight: 1.2 }}>
            <div className="truncate font-semibold text-slate-800">Unassigned</div>
            <div className={`truncate ${count > 0 ? "text-amber-800" : "text-slate-500"}`}>{plural(count, "inbound")}</div>
          </div>
        )
      ) : (
        <>
          <header className="flex flex-col justify-center px-3" style={{ height: UNASSIGNED_HEADER }}>
            <h3 className="text-[15px] font-semibold text-slate-800">Unassigned</h3>
            <p className="text-xs text-slate-500">In no route — users can&apos;t see these</p>
          </header>
          {count === 0 ? (
            <p className="px-3 text-xs italic text-slate-400" style={{ height: ITEM_HEIGHT }}>
              Every inbound is in a route
            </p>
          ) : (
            <ul className="px-3 text-[13px]">
              {shown.map((i) => (
                <UnassignedRow key={i.id} row={i} />
              ))}
              {count > shown.length && (
                <li className="text-xs font-medium text-amber-800" style={{ height: ITEM_HEIGHT }}>
                  + {count - shown.length} more — the warnings above name them all
                </li>
              )}
            </ul>
          )}
        </>
      )}
    </section>
  );
});
