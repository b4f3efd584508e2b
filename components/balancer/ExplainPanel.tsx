"use client";
import { useQuery } from "@tanstack/react-query";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { PageSkeleton } from "@/components/ui/Skeleton";
import { routeFlagPrefix } from "@/core/format";
import { FlagText } from "@/components/ui/Flag";

const REASON_TEXT: Record<string, { label: string; className: string }> = {
  best: { label: "Best score", className: "bg-emerald-100 text-emerald-800" },
  sticky: { label: "Kept (sticky)", className: "bg-sky-100 text-sky-800" },
  fallback: { label: "Fallback", className: "bg-amber-100 text-amber-800" },
  panic: { label: "Panic: nothing available", className: "bg-red-100 text-red-800" },
  none: { label: "No server enabled", className: "bg-slate-200 text-slate-700" },
};

const EXCLUDED_TEXT: Record<string, string> = {
  "server-disabled": "server disabled",
  "server-down": "server not available",
  "fallback-reserve": "fallback: held in reserve",
};

function formatScore(score: number | null): string {
  if (score === null) return "—";
  if (score >= 1e6) return `${(score / 1e6).toFixed(score >= 1e8 ? 0 : 1)} Mbit/s free per user`;
  if (score >= 1e3) return `${(score / 1e3).toFixed(0)} kbit/s free per user`;
  return score.toFixed(3);
}

/**
 * What one subscriber's app gets right now, route by route, and why (a dry run of the balancer):
 * the Explanation tab of the subscriber's page (components/subscribers/SubscriberDetail.tsx).
 */
export function ExplainPanel({ subscriberId }: { subscriberId: string }) {
  const trpc = useTRPC();
  const explain = useQuery(trpc.balancer.explain.queryOptions({ subscriberId }, { refetchInterval: 5000 }));
  return (
    <>
      {explain.error && (
        <p role="alert" className="mt-4 text-red-700">
          {errorMessage(explain.error)}
        </p>
      )}
      {explain.isLoading && <PageSkeleton className="mt-4" label="Loading the explanation" rows={4} />}
      {explain.data && (
        <>
          <h2 className="mt-2 text-xl font-semibold">What {explain.data.subscriber.name}&apos;s app gets right now</h2>
          <p className="mt-1 text-sm text-slate-500">
            One line per route that has inbounds, in the order the app shows them. Scores are recomputed every few seconds; nothing here changes the assignment.
            {!explain.data.subscriber.enabled && " This subscriber is disabled: the link answers 404."}
          </p>
          {explain.data.stale && (
            <p role="status" className="mt-3 rounded bg-amber-50 px-3 py-2 text-sm text-amber-900">
              The database is unreachable: this is the last good snapshot.
            </p>
          )}
          {explain.data.routes.length === 0 && <p className="mt-6 text-slate-600">No route has inbounds yet: the subscription is empty.</p>}
          <ol className="mt-6 flex flex-col gap-5">
            {explain.data.routes.map((r) => {
              const reason = REASON_TEXT[r.reason] ?? REASON_TEXT.none!;
              return (
                <li key={r.routeId} aria-label={`Route ${r.route}`} className="rounded-lg border border-slate-200 bg-white shadow-sm">
                  <div className="flex flex-wrap items-center gap-3 border-b border-slate-100 px-4 py-3">
                    <h3 className="text-lg font-semibold">
                      {routeFlagPrefix(r.route, r.flag) && (
                        <span data-testid="route-flag" className="mr-1.5">
                          <FlagText text={routeFlagPrefix(r.route, r.flag)} />
                        </span>
                      )}
                      <FlagText text={r.route} />
                    </h3>
                    <span className="text-slate-400">→</span>
                    <span className="font-medium" data-testid="chosen-inbound">
                      {r.chosen ? (
                        <>
                          <FlagText text={r.chosen.inbound} /> on {r.chosen.server}
                        </>
                      ) : (
                        "nothing"
                      )}
                    </span>
                    <span className={`rounded px-2 py-0.5 text-xs font-semibold ${reason.className}`}>{reason.label}</span>
                  </div>
                  <p className="px-4 pt-2 text-sm text-slate-700">{r.explanation}</p>
                  <table className="table-cards mt-2 w-full text-sm">
                    <thead className="text-left text-xs uppercase tracking-wide text-slate-500">
                      <tr>
                        <th className="px-4 py-1.5 font-medium">Candidate</th>
                        <th className="px-3 py-1.5 font-medium">Score</th>
                        <th className="px-3 py-1.5 font-medium">Why</th>
                      </tr>
                    </thead>
                    <tbody>
                      {r.candidates.map((c) => (
                        <tr key={c.inboundId} className={c.chosen ? "bg-emerald-50 font-medium" : "border-t border-slate-100"}>
                          <td className="px-4 py-1.5">
                            {c.chosen && <span aria-label="chosen">✓ </span>}
                            {c.name} <span className="text-xs font-normal text-slate-500">on {c.serverName}</span>
                          </td>
                          <td data-label="Score" className="px-3 py-1.5 tabular-nums">{formatScore(c.score)}</td>
                          <td data-label="Why" className="px-3 py-1.5 text-slate-600">{c.excluded ? EXCLUDED_TEXT[c.excluded] : c.note}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </li>
              );
            })}
          </ol>
        </>
      )}
    </>
  );
}
