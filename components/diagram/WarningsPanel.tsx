"use client";
import Link from "next/link";
import { useState } from "react";
import type { TopologyData } from "./topology-index";
import { plural } from "@/core/format";
import { FlagText } from "@/components/ui/Flag";

const PILLS_SHOWN = 12;

type Warning = TopologyData["warnings"][number];

/** Warnings about users getting no line, or none from an inbound: in red. */
const severe = (w: Warning) => w.kind === "no-available" || w.kind === "fallback-down" || w.kind === "inbound-unavailable";

/** The warning the collapsed panel names: the first severe one, else the first. */
export const worstWarning = (warnings: Warning[]): Warning | undefined => warnings.find(severe) ?? warnings[0];

/**
 * What to fix, above the diagram; each warning points at what it is about. Two or more fold
 * into one line (how many, and the worst) that expands, so the diagram keeps the window.
 */
export function WarningsPanel({
  clusterId,
  warnings,
  onShowInbound,
  onShowRoute,
}: {
  clusterId: string;
  warnings: Warning[];
  onShowInbound(id: string): void;
  onShowRoute(id: string): void;
}) {
  const [allPills, setAllPills] = useState(false);
  const [expanded, setExpanded] = useState(false);
  if (warnings.length === 0) {
    return (
      <section aria-label="Warnings" className="flex items-center gap-2 border-b border-slate-200 bg-white px-5 py-2 text-sm text-green-700">
        <span aria-hidden>✓</span> No warnings: every inbound is in a route and every route can fail over.
      </section>
    );
  }
  const foldable = warnings.length > 1;
  const worst = worstWarning(warnings)!;
  return (
    <section aria-label="Warnings" className="max-h-[28vh] overflow-auto border-b border-amber-200 bg-amber-50 px-5 py-2">
      <h2 className="sr-only">Warnings</h2>
      {foldable && (
        <button
          type="button"
          aria-expanded={expanded}
          aria-controls="warnings-list"
          onClick={() => setExpanded((v) => !v)}
          className="flex w-full min-w-0 items-center gap-2 text-left text-sm text-amber-900"
          data-testid="warnings-summary"
        >
          <span aria-hidden className={severe(worst) ? "text-red-600" : "text-amber-600"}>
            ⚠
          </span>
          <span className="shrink-0 font-semibold">{plural(warnings.length, "warning")}</span>
          {!expanded && (
            <span className={`min-w-0 truncate ${severe(worst) ? "text-red-800" : ""}`}>
              <span aria-hidden>— </span>
              <FlagText text={worst.message} />
            </span>
          )}
          <span className="ml-auto shrink-0 text-xs font-medium text-sky-700">{expanded ? "Hide" : "Show all"}</span>
        </button>
      )}
      <ul id="warnings-list" hidden={foldable && !expanded} className={`flex flex-col gap-1 text-sm ${foldable ? "mt-1" : ""}`}>
        {warnings.map((w) => (
          <li key={w.id} data-warning={w.kind} className="flex flex-wrap items-center gap-x-2 gap-y-1 text-amber-900">
            <span aria-hidden className={severe(w) ? "text-red-600" : "text-amber-600"}>
              ⚠
            </span>
            {/* On a phone the message shares the icon's line and wraps beside it, instead of dropping below it. */}
            <span className={`max-sm:min-w-0 max-sm:flex-1 max-sm:basis-0 ${severe(w) ? "font-medium text-red-800" : "font-medium"}`}>
              <FlagText text={w.message} />
            </span>
            {w.kind === "unassigned" ? (
              <span className="flex flex-wrap gap-1">
                {(allPills ? w.inbounds : w.inbounds.slice(0, PILLS_SHOWN)).map((i) => (
                  <button
                    key={i.id}
                    type="button"
                    onClick={() => onShowInbound(i.id)}
                    aria-label={`Show ${i.name}`}
                    className="rounded-full border border-amber-300 bg-white px-2 py-0.5 text-xs font-medium text-amber-900 hover:border-amber-500 hover:bg-amber-100"
                  >
                    <FlagText text={i.name} />
                  </button>
                ))}
                {w.inbounds.length > PILLS_SHOWN && (
                  <button
                    type="button"
                    onClick={() => setAllPills((v) => !v)}
                    aria-expanded={allPills}
                    className="px-1 text-xs font-medium text-sky-700 hover:underline"
                  >
                    {allPills ? "Show fewer" : `Show all ${w.inbounds.length}`}
                  </button>
                )}
              </span>
            ) : w.kind === "no-agent" ? (
              <Link href={`/clusters/${clusterId}/servers`} className="text-xs font-medium text-sky-700 underline-offset-2 hover:underline">
                Servers and agent tokens
              </Link>
            ) : w.kind === "inbound-unavailable" ? (
              <button
                type="button"
                onClick={() => onShowInbound(w.inboundId)}
                aria-label={`Show ${w.inboundName}`}
                className="text-xs font-medium text-sky-700 underline-offset-2 hover:underline"
              >
                Show inbound
              </button>
            ) : w.kind === "probes-disabled" ? (
              <Link href={`/clusters/${clusterId}/health`} className="text-xs font-medium text-sky-700 underline-offset-2 hover:underline">
                Probe settings
              </Link>
            ) : (
              <button
                type="button"
                onClick={() => onShowRoute(w.routeId)}
                aria-label={`Show route ${w.routeName}`}
                className="text-xs font-medium text-sky-700 underline-offset-2 hover:underline"
              >
                Show route
              </button>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
