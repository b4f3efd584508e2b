"use client";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/lib/trpc";
import { errorMessage } from "@/lib/errors";
import { formatBytes } from "./format";

/** A subscriber's usage as each server reported it (issue 21): this period, and every kept day. */
export function UsageByServer({ subscriberId }: { subscriberId: string }) {
  const trpc = useTRPC();
  const usage = useQuery(trpc.subscribers.usageByServer.queryOptions({ subscriberId }, { refetchInterval: 10_000 }));
  return (
    <section aria-labelledby="usage-by-server" className="mt-8">
      <h2 id="usage-by-server" className="text-lg font-semibold">
        Usage by server
      </h2>
      <p className="mt-1 text-sm text-slate-500">What each server&apos;s agent reported for this subscriber. An owner can discard one server&apos;s reports on the cluster&apos;s health page.</p>
      {usage.error && (
        <p role="alert" className="mt-2 text-sm text-red-700">
          {errorMessage(usage.error)}
        </p>
      )}
      {usage.data && usage.data.length === 0 && <p className="mt-2 text-sm text-slate-600">No server has reported traffic for this subscriber yet.</p>}
      {usage.data && usage.data.length > 0 && (
        <table className="table-cards mt-2 w-full text-sm">
          <thead className="text-left text-xs uppercase tracking-wide text-slate-500">
            <tr>
              <th className="py-1.5 pr-3 font-medium">Server</th>
              <th className="py-1.5 pr-3 font-medium">This period</th>
              <th className="py-1.5 pr-3 font-medium">All kept days</th>
              <th className="py-1.5 font-medium">Days</th>
            </tr>
          </thead>
          <tbody>
            {usage.data.map((u) => (
              <tr key={u.serverId} aria-label={`Usage on ${u.server}`} className="border-t border-slate-100">
                <td className="py-1.5 pr-3 font-medium">{u.server}</td>
                <td data-label="This period" className="py-1.5 pr-3 tabular-nums" data-testid="period-usage">
                  {formatBytes(u.periodUpBytes + u.periodDownBytes)}
                </td>
                <td data-label="All kept days" className="py-1.5 pr-3 tabular-nums">
                  {formatBytes(u.upBytes + u.downBytes)}
                </td>
                <td data-label="Days" className="py-1.5 text-slate-600">
                  {u.firstDay === u.lastDay ? u.firstDay : `${u.firstDay} – ${u.lastDay}`}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
