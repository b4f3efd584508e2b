"use client";
import { useDraggable } from "@dnd-kit/core";
import { selectCanEdit, useDiagramStore } from "../store";

/**
 * An inbound's row inside a route box or the Unassigned box, draggable like its chip in the
 * server box (the chip stays the keyboard's way: rows add no tab stop). `nodrag nopan` keeps
 * React Flow from panning the canvas when the drag starts on a row.
 */
export function useRowDrag(where: "route" | "unassigned", inboundId: string, name: string) {
  const canEdit = useDiagramStore(selectCanEdit);
  const { setNodeRef, listeners, isDragging } = useDraggable({
    id: `row:${where}:${inboundId}`,
    data: { type: "inbound", inboundId, name },
    disabled: !canEdit,
  });
  return {
    ref: setNodeRef,
    listeners: canEdit ? listeners : undefined,
    className: `${canEdit ? "nodrag nopan cursor-grab touch-none active:cursor-grabbing" : ""} ${isDragging ? "opacity-40" : ""}`,
  };
}
