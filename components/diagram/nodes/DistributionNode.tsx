"use client";
import { Handle, Position, type NodeProps } from "@xyflow/react";
import { memo } from "react";
import { useZoomLevel } from "../useZoomLevel";
import { COMPACT_FONT_PX } from "../viewport";
import type { DistributionBox } from "./types";

/** Where every non-empty route's pipe ends: the subscription users' apps fetch. */
export const DistributionNode = memo(function DistributionNode({ data: { lines } }: NodeProps<DistributionBox>) {
  const level = useZoomLevel();
  return (
    <section
      aria-label="Subscription — what users' apps fetch"
      className="fixed-palette pointer-events-auto flex h-full w-full flex-col justify-center rounded-2xl border-2 border-slate-800 bg-slate-900 px-4 text-white shadow-lg"
      data-testid="distribution"
    >
      <Handle type="target" id="in" position={Position.Left} isConnectable={false} className="!h-3 !w-3 !border-2 !border-white !bg-slate-900" />
      {level === "full" ? (
        <>
          <p className="text-sm text-slate-300">
            <strong className="text-[15px] font-semibold text-white">Subscription</strong> — what users&apos; apps fetch
          </p>
          <div className="mt-2 text-xs text-slate-200">
            {lines === 1 ? "1 line" : `${lines} lines`} — one per non-empty route
          </div>
        </>
      ) : (
        level === "compact" && (
          <div style={{ fontSize: COMPACT_FONT_PX, lineHeight: 1.2 }}>
            <div className="font-semibold">Subscription</div>
            <div className="text-slate-200">{lines === 1 ? "1 line" : `${lines} lines`}</div>
          </div>
        )
      )}
    </section>
  );
});
