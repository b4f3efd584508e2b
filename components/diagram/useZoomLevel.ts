"use client";
import { useStore, type ReactFlowState } from "@xyflow/react";
import { zoomLevel, type ZoomLevel } from "./viewport";

// Module-level, so its identity is stable: each node re-renders only when the answer
// changes (a threshold is crossed), not on every frame of a zoom.
const selectZoomLevel = (s: ReactFlowState): ZoomLevel => zoomLevel(s.transform[2]);

/** What the boxes show at the current zoom (full detail, compact summary, colours only). */
export function useZoomLevel(): ZoomLevel {
  return useStore(selectZoomLevel);
}
