"use client";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { USAGE_HISTORY_DAYS } from "@/core/validation";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { formatBytes } from "./format";
import { usageByDay, usageByServer } from "./usage-history";

type Range = (typeof USAGE_HISTORY_DAYS)[number];

/** Usage per UTC day and per server over the last 7, 30 or 90 days (issue 25, point 6). */
export function UsageHistory({ subscriberId }: { subscriberId: string }) {
  const trpc = useTRPC();
  const [days, setDays] = useState<Range>(30);
  const history = useQuery({ ...trpc.subscribers.usageHistory.queryOptions({ subscriberId, days }), placeholderData: keepPreviousData, refetchInterval: 10_000 });
  const data = history.data;
  const byDay = data ? usageByDay(data.from, data.to, data.rows) : [];
  const byServer = data ? usageByServer(data.rows) : [];
  const max = Math.max(1, ...byDay.map((d) => d.upBytes + d.downBytes));
  const total = byDay.reduce((n, d) => n + d.upBytes + d.downBytes, 0);
  return (
    <section aria-labelledby="usage-history">
      <div className="flex flex-wrap items-center justify-between gap-3">
        <h2 id="usage-history" className="text-lg font-semibold">
          Usage history
        </h2>
        <div role="radiogroup" aria-label="Range" className="inline-flex overflow-hidden rounded-md border border-slate-300 text-sm">
          {USAGE_HISTORY_DAYS.map((n) => (
            <button
              key={n}
              type="button"
              role="radio"
              aria-checked={days === n}
              onClick={() => setDays(n)}
              className={`px-3 py-1 ${days === n ? "bg-slate-900 text-white" : "bg-white text-slate-700 hover:bg-slate-100"}`}
            >
              {n} days
            </button>
          ))}
        </div>
      </div>
      <p className="mt-1 text-sm text-slate-500">
        What the servers&apos; agents reported, per UTC day. {data && <span data-testid="usage-history-total">{formatBytes(total)} in the last {days} days.</span>}
      </p>
      {history.error && (
        <p role="alert" className="mt-2 text-sm text-red-700">
          {errorMessage(history.error)}
        </p>
      )}
      {data && (
        <>
          {/* One bar per day, the heights relative to the busiest day; each names its day and bytes. */}
          <div role="list" aria-label="Usage per day" className="mt-3 flex h-32 items-end gap-px rounded-md border border-slate-200 bg-white p-2">
            {byDay.map((d) => {
              const bytes = d.upBytes + d.downBytes;
              const label = `${d.day}: ${formatBytes(bytes)}${d.servers.length ? ` (${d.servers.map((s) => `${s.server} ${formatBytes(s.bytes)}`).join(", ")})` : ""}`;
              return (
                <div key={d.day} role="listitem" aria-label={label} title={label} className="flex h-full min-w-0 flex-1 items-end">
                  <div className={`w-full rounded-t-sm ${bytes > 0 ? "bg-sky-500" : "bg-slate-200"}`} style={{ height: bytes > 0 ? `${Math.max(3, (bytes / max) * 100)}%` : "2px" }} />
                </div>
              );
            })}
          </div>
          <div className="mt-1 flex justify-between text-xs text-slate-500">
            <span>{data.from}</span>
            <span>{data.to}</span>
          </div>

          <h3 className="mt-5 text-sm font-semibold text-slate-700">By server, last {days} days</h3>
          {byServer.length === 0 ? (
            <p className="mt-1 text-sm text-slate-600">No traffic in these days.</p>
          ) : (
            <table className="table-cards mt-1 w-full text-sm" aria-label={`Usage by server, last ${days} days`}>
              <thead className="text-left text-xs uppercase tracking-wide text-slate-500">
                <tr>
                  <th className="py-1.5 pr-3 font-medium">Server</th>
                  <th className="py-1.5 pr-3 font-medium">Upload</th>
                  <th className="py-1.5 pr-3 font-medium">Download</th>
                  <th className="py-1.5 pr-3 font-medium">Total</th>
                  <th className="py-1.5 font-medium">Days with traffic</th>
                </tr>
              </thead>
              <tbody>
                {byServer.map((s) => (
                  <tr key={s.serverId} aria-label={`History on ${s.server}`} className="border-t border-slate-100">
                    <td className="py-1.5 pr-3 font-medium">{s.server}</td>
                    <td data-label="Upload" className="py-1.5 pr-3 tabular-nums">
                      {formatBytes(s.upBytes)}
                    </td>
                    <td data-label="Download" className="py-1.5 pr-3 tabular-nums">
                      {formatBytes(s.downBytes)}
                    </td>
                    <td data-label="Total" className="py-1.5 pr-3 tabular-nums" data-testid="history-server-total">
                      {formatBytes(s.upBytes + s.downBytes)}
                    </td>
                    <td data-label="Days with traffic" className="py-1.5 tabular-nums">
                      {s.days}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}

          <h3 className="mt-5 text-sm font-semibold text-slate-700">By day</h3>
          {byDay.every((d) => d.upBytes + d.downBytes === 0) ? (
            <p className="mt-1 text-sm text-slate-600">No traffic in these days.</p>
          ) : (
            <table className="table-cards mt-1 w-full text-sm" aria-label={`Usage by day, last ${days} days`}>
              <thead className="text-left text-xs uppercase tracking-wide text-slate-500">
                <tr>
                  <th className="py-1.5 pr-3 font-medium">Day (UTC)</th>
                  <th className="py-1.5 pr-3 font-medium">Total</th>
                  <th className="py-1.5 font-medium">Servers</th>
                </tr>
              </thead>
              <tbody>
                {[...byDay]
                  .reverse()
                  .filter((d) => d.upBytes + d.downBytes > 0)
                  .map((d) => (
                    <tr key={d.day} aria-label={`Usage on ${d.day}`} className="border-t border-slate-100">
                      <td className="py-1.5 pr-3 tabular-nums">{d.day}</td>
                      <td data-label="Total" className="py-1.5 pr-3 tabular-nums" data-testid="history-day-total">
                        {formatBytes(d.upBytes + d.downBytes)}
                      </td>
                      <td data-label="Servers" className="py-1.5 text-slate-600">
                        {d.servers.map((s) => `${s.server} ${formatBytes(s.bytes)}`).join(" · ")}
                      </td>
                    </tr>
                  ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  );
}
