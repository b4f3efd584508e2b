"use client";
import type { inferRouterOutputs } from "@trpc/server";
import { createContext, useContext } from "react";
import { routePanic, type RoutePanic } from "@/core/panic";
import { groupTopology, type Target, type TopologyGroups } from "@/core/topology";
import { inboundTraffic, type InboundTraffic } from "./flow";
import type { AppRouter } from "@/server/api/root";

export type { Target } from "@/core/topology";
export type TopologyData = inferRouterOutputs<AppRouter>["topology"]["get"];
export type ServerData = TopologyData["servers"][number];
export type InboundData = TopologyData["inbounds"][number];
export type RouteData = TopologyData["routes"][number];

/** Lookups of the current topology, built once per change. */
export interface DiagramIndex extends TopologyGroups<ServerData, InboundData, RouteData> {
  data: TopologyData;
  /** Routes in panic (core/panic), with why. */
  panicByRoute: Map<string, RoutePanic>;
  /** The traffic each inbound carries now (see inboundTraffic). */
  trafficByInbound: Map<string, InboundTraffic>;
}

export function buildIndex(data: TopologyData): DiagramIndex {
  const groups = groupTopology(data);
  const panicByRoute = new Map<string, RoutePanic>();
  for (const [routeId, members] of groups.inboundsByRoute) {
    const panic = routePanic(members, (id) => groups.serverById.get(id)?.status);
    if (panic) panicByRoute.set(routeId, panic);
  }
  return { data, ...groups, panicByRoute, trafficByInbound: inboundTraffic(data.servers, data.inbounds) };
}

/**
 * What every node reads and changes only when the topology does. The keyboard carry and
 * the highlight change on every key press: they live in the diagram store (./store).
 */
export interface DiagramApi {
  clusterId: string;
  index: DiagramIndex;
  canEdit: boolean;
  move(inboundId: string, to: Target): void;
  moveRoute(routeId: string, delta: number): void;
  startCarry(inboundId: string): void;
  targetName(t: Target): string;
}

export const DiagramContext = createContext<DiagramApi | null>(null);

export function useDiagram(): DiagramApi {
  const api = useContext(DiagramContext);
  if (!api) throw new Error("useDiagram outside the diagram");
  return api;
}

export const chipDomId = (inboundId: string) => `chip-${inboundId}`;
export const routeDomId = (routeId: string) => `route-box-${routeId}`;
