import type { Node } from "@xyflow/react";
import type { BoxKind } from "../layout";

export type DiagramNode = Node<{ refId: string | null }, BoxKind>;
