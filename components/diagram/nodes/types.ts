import type { Node } from "@xyflow/react";
import type { RoutePanic } from "@/core/panic";
import type { FlowServer, InboundTraffic } from "../flow";

/*
 * What each kind of box draws, built by the flow builder (../flow: buildNodes) from the
 * topology. A node re-renders only when its own data object changes, and the builder keeps
 * that object when its content did not: so the data holds everything the box shows, and
 * nothing it does not (a version number that moved would re-render it for nothing).
 */

/** An inbound's chip in its server's box. */
export type ChipData = {
  id: string;
  name: string;
  port: number;
  users: number;
  isFallback: boolean;
  /** Why its server does not serve it now (issue 25): drawn unavailable, never handed out; null = served. */
  unavailable: string | null;
  /** "VMess·ws·TLS": protocol·transport·security (core/inbound-protocols.ts protocolSummary); null when unknown. */
  kind: string | null;
  /** The route it is in with that route's colour; null in none (or in one that is gone). */
  route: { id: string; name: string; color: string } | null;
};

/** The server's own row as the topology has it, and its chips. */
export type ServerBoxData = FlowServer & {
  /** In chip order. */
  chips: ChipData[];
};

/** One inbound's row in its route's box: its server's state, its users, its traffic now. */
export type RouteRowData = {
  id: string;
  name: string;
  isFallback: boolean;
  /** Why its server does not serve it now (issue 25); null = served. */
  unavailable: string | null;
  users: number;
  traffic: InboundTraffic;
  server: { name: string; status: string; statusReason: string | null; trafficBps: number } | null;
};

export type RouteBoxData = {
  id: string;
  name: string;
  flag: string | null;
  algorithm: string;
  /** Place in the order, from 0; `last` when no route comes after it. */
  position: number;
  last: boolean;
  color: string;
  panic: RoutePanic | null;
  members: RouteRowData[];
};

export type UnassignedBoxData = {
  count: number;
  /** The first UNASSIGNED_MAX_ITEMS, with their server's name. */
  shown: Array<{ id: string; name: string; serverName: string | null }>;
};

export type DistributionBoxData = {
  /** Routes with members: each is a line of the subscription. */
  lines: number;
};

export type ServerBox = Node<ServerBoxData, "server">;
export type RouteBox = Node<RouteBoxData, "route">;
export type UnassignedBox = Node<UnassignedBoxData, "unassigned">;
export type DistributionBox = Node<DistributionBoxData, "distribution">;
export type DiagramNode = ServerBox | RouteBox | UnassignedBox | DistributionBox;
