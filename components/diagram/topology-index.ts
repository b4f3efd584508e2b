import type { inferRouterOutputs } from "@trpc/server";
import { routePanic, type RoutePanic } from "@/core/panic";
import { groupTopology, type TopologyGroups } from "@/core/topology";
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

export const chipDomId = (inboundId: string) => `chip-${inboundId}`;
export const routeDomId = (routeId: string) => `route-box-${routeId}`;
