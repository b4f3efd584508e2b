import type { NodeTypes } from "@xyflow/react";
import { DistributionNode } from "./DistributionNode";
import { RouteNode } from "./RouteNode";
import { ServerNode } from "./ServerNode";
import { UnassignedNode } from "./UnassignedNode";

/** Defined once, outside any component, so React Flow never remounts the nodes. */
export const nodeTypes: NodeTypes = {
  server: ServerNode,
  route: RouteNode,
  unassigned: UnassignedNode,
  distribution: DistributionNode,
};
