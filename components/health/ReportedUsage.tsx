"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "@/server/api/root";
import { useTRPC } from "@/lib/trpc";
import { errorMessage, formErrors } from "@/lib/errors";
import { Dialog, FormFooter } from "@/components/ui/Dialog";
import { Field, inputClass, secondaryButtonClass } from "@/components/ui/Field";
import { useOperator } from "@/components/shell/operator";
import { formatBytes } from "@/components/subscribers/format";

type Quarantined = inferRouterOutputs<AppRouter>["monitoring"]["health"]["quarantine"][number];

const DAY_MS = 86_400_000;
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * Issue 21: traffic the folds kept aside (quarantined batches, with server, time and reason),
 * and what each server reported over a period, with the owner's "Discard" for one server.
 */
export function ReportedUsage({ clusterId, quarantine }: { clusterId: string; quarantine: Quarantined[] }) {
  const trpc = useTRPC();
  const me = useOperator();
  const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  const [from, setFrom] = useState(() => utcDay(today - 29 * DAY_MS));
  const [to, setTo] = useState(() => utcDay(today + DAY_MS));
  const usage = useQuery(trpc.monitoring.usageByServer.queryOptions({ clusterId, from, to }, { enabled: from < to }));
  const [discarding, setDiscarding] = useState<{ id: string; name: string } | null>(null);
  const [done, setDone] = useState<string | null>(null);
  return (
    <section aria-labelledby="reported-usage" className="flex flex-col gap-4">
      <h2 id="reported-usage" className="text-lg font-semibold">
        Reported usage by server
      </h2>
      {quarantine.length > 0 && (
        <div role="region" aria-label="Quarantined traffic" className="rounded-md border border-red-200 bg-red-50 p-3 text-sm text-red-900">
          <p className="font-medium">Traffic batches that could not be counted (kept aside; everyone else&apos;s traffic is counted):</p>
          <table className="mt-2 w-full text-xs">
            <thead className="text-left uppercase tracking-wide text-red-700">
              <tr>
                <th className="py-1 pr-3">Server</th>
                <th className="py-1 pr-3">Reported</th>
                <th className="py-1 pr-3">Not applied to</th>
                <th className="py-1">Reason</th>
              </tr>
            </thead>
            <tbody>
              {quarantine.map((q) => (
                <tr key={q.id} data-testid="quarantined-batch" className="border-t border-red-100 align-top">
                  <td className="py-1 pr-3">{q.server ?? "several servers"}</td>
                  <td className="py-1 pr-3">{new Date(q.seenAt).toISOString().replace("T", " ").slice(0, 19)} UTC</td>
                  <td className="py-1 pr-3">
                    {q.stage === "totals" ? "totals and per-day usage" : "per-day usage"} ({q.subscribers} subscribers)
                  </td>
                  <td className="py-1 break-words font-mono">{q.reason}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div className="flex flex-wrap items-end gap-3 text-sm">
        <label className="flex flex-col gap-1">
          <span className="font-medium text-slate-700">From (UTC day)</span>
          <input type="date" className={inputClass} value={from} onChange={(e) => setFrom(e.target.value)} />
        </label>
        <label className="flex flex-col gap-1">
          <span className="font-medium text-slate-700">To (exclusive)</span>
          <input type="date" className={inputClass} value={to} onChange={(e) => setTo(e.target.value)} />
        </label>
      </div>
      {usage.error && (
        <p role="alert" className="text-sm text-red-700">
          {errorMessage(usage.error)}
        </p>
      )}
      {done && (
        <p role="status" className="rounded bg-emerald-50 px-3 py-2 text-sm text-emerald-900">
          {done}
        </p>
      )}
      <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
        <table className="table-cards min-w-full text-sm">
          <thead className="bg-slate-50 text-left text-xs uppercase tracking-wide text-slate-500">
            <tr>
              <th className="px-3 py-2">Server</th>
              <th className="px-3 py-2">Subscribers</th>
              <th className="px-3 py-2">Reported traffic</th>
              {me.role === "owner" && <th className="px-3 py-2">Owner</th>}
            </tr>
          </thead>
          <tbody>
            {(usage.data ?? []).map((u) => (
              <tr key={u.serverId} aria-label={`Usage reported by ${u.server}`} className="border-t border-slate-100">
                <td className="px-3 py-2 font-medium">{u.server}</td>
                <td data-label="Subscribers" className="px-3 py-2 tabular-nums">
                  {u.subscribers}
                </td>
                <td data-label="Reported traffic" className="px-3 py-2 tabular-nums" data-testid="reported-bytes">
                  {formatBytes(u.upBytes + u.downBytes)} <span className="text-xs text-slate-500">(↑ {formatBytes(u.upBytes)} · ↓ {formatBytes(u.downBytes)})</span>
                </td>
                {me.role === "owner" && (
                  <td className="px-3 py-2">
                    <button type="button" className={secondaryButtonClass} disabled={u.upBytes + u.downBytes === 0} onClick={() => setDiscarding({ id: u.serverId, name: u.server })}>
                      Discard…
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {discarding && (
        <DiscardDialog
          clusterId={clusterId}
          server={discarding}
          from={from}
          to={to}
          onClose={() => setDiscarding(null)}
          onDone={(msg) => {
            setDiscarding(null);
            setDone(msg);
          }}
        />
      )}
    </section>
  );
}

function DiscardDialog({
  clusterId,
  server,
  from: initialFrom,
  to: initialTo,
  onClose,
  onDone,
}: {
  clusterId: string;
  server: { id: string; name: string };
  from: string;
  to: string;
  onClose: () => void;
  onDone: (message: string) => void;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [from, setFrom] = useState(initialFrom);
  const [to, setTo] = useState(initialTo);
  const discard = useMutation(
    trpc.monitoring.discardReportedUsage.mutationOptions({
      onSuccess: async (r) => {
        await Promise.all([
          queryClient.invalidateQueries({ queryKey: trpc.monitoring.usageByServer.queryKey() }),
          queryClient.invalidateQueries({ queryKey: trpc.subscribers.page.queryKey() }),
        ]);
        onDone(
          `Discarded ${formatBytes(r.upBytes + r.downBytes)} reported by ${server.name} for ${r.subscribers} subscriber${r.subscribers === 1 ? "" : "s"}; ${formatBytes(r.givenBackBytes)} given back, ${r.reenabled} back under their limit.`,
        );
      },
    }),
  );
  const { errors, general } = formErrors(discard.error);
  return (
    <Dialog
      title={`Discard usage reported by ${server.name}`}
      description="What this server reported for the cluster's subscribers over the period is deleted and taken off their current usage; those it brings under their limit can connect again. Recorded in the audit log."
      onClose={onClose}
    >
      <form
        className="grid gap-4 sm:grid-cols-2"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          discard.mutate({ clusterId, serverId: server.id, from, to });
        }}
      >
        <Field label="From (UTC day)" error={errors.from}>
          {(p) => <input {...p} type="date" className={inputClass} value={from} onChange={(e) => setFrom(e.target.value)} />}
        </Field>
        <Field label="To (UTC day, exclusive)" error={errors.to}>
          {(p) => <input {...p} type="date" className={inputClass} value={to} onChange={(e) => setTo(e.target.value)} />}
        </Field>
        <FormFooter wide error={general} pending={discard.isPending} submitLabel="Discard usage" onCancel={onClose} />
      </form>
    </Dialog>
  );
}
