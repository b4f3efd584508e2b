"use client";
import { useReactFlow } from "@xyflow/react";
import { useEffect } from "react";
import { routeNodeId, type Layout } from "./layout";
import type { DiagramNode } from "./nodes/types";
import type { DiagramStore } from "./store";
import { revealBox } from "./viewport";

/** How long a created or edited route stays highlighted. */
const ROUTE_HIGHLIGHT_MS = 3000;

/**
 * Pans to a route asked for through the store's `focusRoute` (the route wizard sets it)
 * once the refetched layout has its box, and highlights the box. The pan brings the box
 * into the viewport, which is what makes React Flow render it (onlyRenderVisibleElements).
 */
export function useRouteFocus(opts: { container: React.RefObject<HTMLDivElement | null>; layout: Layout; store: DiagramStore }) {
  const { container, layout, store } = opts;
  const rf = useReactFlow<DiagramNode>();
  useEffect(() => {
    const tryFocus = () => {
      const routeId = store.getState().focusRoute;
      const el = container.current;
      if (!routeId || !el) return;
      const box = layout.boxes.find((b) => b.id === routeNodeId(routeId));
      // Not laid out yet: the refetch after the write is still on its way.
      if (!box) return;
      // Already on screen: only the highlight, the view stays where the operator left it.
      const to = revealBox(box, rf.getViewport(), { width: el.clientWidth, height: el.clientHeight });
      if (to) void rf.setCenter(to.center.x, to.center.y, { zoom: to.zoom, duration: 300 });
      store.setState({ focusRoute: null, highlightRoute: routeId });
      // Not cleared when the layout changes (live updates): it only ends this highlight.
      setTimeout(() => {
        if (store.getState().highlightRoute === routeId) store.setState({ highlightRoute: null });
      }, ROUTE_HIGHLIGHT_MS);
    };
    tryFocus();
    const off = store.subscribe((s, prev) => {
      if (s.focusRoute && s.focusRoute !== prev.focusRoute) tryFocus();
    });
    return off;
  }, [container, layout, rf, store]);
}
