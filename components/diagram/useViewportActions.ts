"use client";
import { useReactFlow } from "@xyflow/react";
import { useCallback, useMemo } from "react";
import type { DiagramIndex, Target } from "./topology-index";
import { chipDomId } from "./topology-index";
import { routeNodeId, serverNodeId, UNASSIGNED_NODE_ID, type Layout } from "./layout";
import type { DiagramNode } from "./nodes/types";
import type { DiagramStore } from "./store";
import { boxCenter, chipCenter, fitViewport, revealBox, showZoom } from "./viewport";

/** How long the highlight of a shown inbound lasts. */
const HIGHLIGHT_MS = 2500;

/** Moving the view: fit, keep a target in view, show an inbound or a route (warnings' "Show"). */
export function useViewportActions(opts: {
  container: React.RefObject<HTMLDivElement | null>;
  layout: Layout;
  index: DiagramIndex;
  store: DiagramStore;
}) {
  const { container, layout, index, store } = opts;
  const rf = useReactFlow<DiagramNode>();
  const boxById = useMemo(() => new Map(layout.boxes.map((b) => [b.id, b])), [layout]);
  const servers = index.data.servers.length;
  const routes = index.data.routes.length;

  const fitToLayout = useCallback(
    (duration = 0, mode: "readable" | "all" = "readable") => {
      const el = container.current;
      if (!el) return;
      void rf.setViewport(fitViewport(layout, { width: el.clientWidth, height: el.clientHeight }, { servers, routes }, mode), { duration });
    },
    [container, layout, rf, routes, servers],
  );

  const reveal = useCallback(
    (t: Target) => {
      const el = container.current;
      const box = boxById.get(t === null ? UNASSIGNED_NODE_ID : routeNodeId(t));
      if (!el || !box) return;
      const to = revealBox(box, rf.getViewport(), { width: el.clientWidth, height: el.clientHeight });
      if (to) void rf.setCenter(to.center.x, to.center.y, { zoom: to.zoom, duration: 250 });
    },
    [boxById, container, rf],
  );

  const showInbound = useCallback(
    (inboundId: string) => {
      const inbound = index.inboundById.get(inboundId);
      const box = inbound && boxById.get(serverNodeId(inbound.serverId));
      if (!inbound || !box) return;
      const pos = (index.inboundsByServer.get(inbound.serverId) ?? []).findIndex((i) => i.id === inboundId);
      const c = chipCenter(box, pos);
      void rf.setCenter(c.x, c.y, { zoom: showZoom(rf.getZoom()), duration: 300 });
      store.setState({ highlight: inboundId });
      const started = performance.now();
      const tryFocus = () => {
        const el = document.getElementById(chipDomId(inboundId));
        if (el) el.focus({ preventScroll: true });
        else if (performance.now() - started < 1500) requestAnimationFrame(tryFocus);
      };
      setTimeout(tryFocus, 320);
      setTimeout(() => {
        if (store.getState().highlight === inboundId) store.setState({ highlight: null });
      }, HIGHLIGHT_MS);
    },
    [boxById, index, rf, store],
  );

  const showRoute = useCallback(
    (routeId: string) => {
      const box = boxById.get(routeNodeId(routeId));
      if (!box) return;
      const c = boxCenter(box);
      void rf.setCenter(c.x, c.y, { zoom: showZoom(rf.getZoom()), duration: 300 });
      // The box flashes once the pan has landed (a CSS animation keyed on the store's flag).
      store.setState({ highlightRoute: null });
      setTimeout(() => store.setState({ highlightRoute: routeId }), 300);
      setTimeout(() => {
        if (store.getState().highlightRoute === routeId) store.setState({ highlightRoute: null });
      }, 300 + HIGHLIGHT_MS);
    },
    [boxById, rf, store],
  );

  return { fitToLayout, reveal, showInbound, showRoute };
}
