"use client";
import type { inferRouterOutputs } from "@trpc/server";
import { createContext, useContext } from "react";
import type { AppRouter } from "@/server/api/root";

export type TopologyData = inferRouterOutputs<AppRouter>["topology"]["get"];
export type ServerData = TopologyData["servers"][number];
export type InboundData = TopologyData["inbounds"][number];
export type RouteData = TopologyData["routes"][number];

/** A drop target: a route id, or null for the Unassigned zone. */
export type Target = string | null;

export interface Carry {
  inboundId: string;
  /** Index into `targets` (Unassigned first, then routes in position order). */
  index: number;
}

/** Indexes of the current topology, built once per change. */
export interface DiagramIndex {
  data: TopologyData;
  serverById: Map<string, ServerData>;
  inboundById: Map<string, InboundData>;
  routeById: Map<string, RouteData>;
  inboundsByServer: Map<string, InboundData[]>;
  inboundsByRoute: Map<string, InboundData[]>;
  unassigned: InboundData[];
  routeIndex: Map<string, number>;
  /** Unassigned (null) first, then route ids in position order. */
  targets: Target[];
}

export function buildIndex(data: TopologyData): DiagramIndex {
  const serverById = new Map(data.servers.map((s) => [s.id, s]));
  const routeById = new Map(data.routes.map((r) => [r.id, r]));
  const inboundById = new Map(data.inbounds.map((i) => [i.id, i]));
  const inboundsByServer = new Map<string, InboundData[]>();
  const inboundsByRoute = new Map<string, InboundData[]>();
  const unassigned: InboundData[] = [];
  for (const i of data.inbounds) {
    const s = inboundsByServer.get(i.serverId) ?? [];
    s.push(i);
    inboundsByServer.set(i.serverId, s);
    if (i.routeId && routeById.has(i.routeId)) {
      const r = inboundsByRoute.get(i.routeId) ?? [];
      r.push(i);
      inboundsByRoute.set(i.routeId, r);
    } else unassigned.push(i);
  }
  return {
    data,
    serverById,
    inboundById,
    routeById,
    inboundsByServer,
    inboundsByRoute,
    unassigned,
    routeIndex: new Map(data.routes.map((r, i) => [r.id, i])),
    targets: [null, ...data.routes.map((r) => r.id)],
  };
}

export interface DiagramApi {
  clusterId: string;
  index: DiagramIndex;
  canEdit: boolean;
  carry: Carry | null;
  /** Inbound whose chip is briefly highlighted (after "Show …" in the warnings). */
  highlight: string | null;
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
