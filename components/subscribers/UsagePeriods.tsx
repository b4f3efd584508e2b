"use client";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/lib/trpc";
import { formatBytes, formatUtcDay } from "./format";

const REASONS: Record<string, string> = { schedule: "Scheduled", manual: "Reset by hand", bulk: "Bulk reset" };

/** A subscriber's finished usage periods, newest first as the server gives them; nothing until one exists. */
export function UsagePeriods({ subscriberId }: { subscriberId: string }) {
  const trpc = useTRPC();
  const periods = useQuery(trpc.subscribers.usagePeriods.queryOptions({ subscriberId }));
  if (!periods.data || periods.data.length === 0) return null;
  return (
    <section aria-label="Previous periods">
      <h3 className="mb-1 text-sm font-medium text-slate-700">Previous periods</h3>
      <table className="w-full text-left text-xs text-slate-600" data-testid="usage-periods">
        <thead className="text-slate-500">
          <tr>
            <th className="py-1 font-medium">Period</th>
            <th className="py-1 font-medium">Used</th>
            <th className="py-1 font-medium">Ended by</th>
          </tr>
        </thead>
        <tbody>
          {periods.data.map((p) => (
            <tr key={`${p.periodEnd.toISOString()}-${p.reason}`} data-testid="usage-period">
              <td className="py-1">
                {formatUtcDay(p.periodStart)} – {formatUtcDay(p.periodEnd)}
              </td>
              <td className="py-1">{formatBytes(p.upBytes + p.downBytes)}</td>
              <td className="py-1">{REASONS[p.reason] ?? p.reason}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
