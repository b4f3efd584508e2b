"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { useTRPC } from "@/lib/trpc";
import { errorMessage } from "@/lib/errors";
import { inputClass, secondaryButtonClass } from "@/components/ui/Field";
import { PROBE_PROTOCOLS, probeOverrideSchema, type ProbeOverride } from "@/core/monitoring-contract";

interface Row {
  id: string;
  name: string;
  override: ProbeOverride | null;
}

/** Per-server overrides of the most used probe fields (empty = inherit the cluster's). */
export function ProbeOverrides({ clusterId, servers }: { clusterId: string; servers: ReadonlyArray<Row> }) {
  return (
    <section aria-labelledby="probe-overrides">
      <h2 id="probe-overrides" className="mb-1 text-lg font-semibold">
        Per-server overrides
      </h2>
      <p className="mb-3 text-xs text-slate-500">Empty fields inherit the cluster&apos;s probe.</p>
      {/* relative: the header's sr-only label is absolutely positioned, and without a positioned
          ancestor here it escapes this scroll box and widens the whole page on a phone. */}
      <div className="relative overflow-x-auto rounded-lg border border-slate-200 bg-white" data-testid="overrides-card">
        <table className="w-full text-sm">
          <thead className="bg-slate-50 text-left text-xs uppercase tracking-wide text-slate-500">
            <tr>
              <th className="px-2 py-2">Server</th>
              <th className="px-2 py-2">Probes</th>
              <th className="px-2 py-2">Protocol</th>
              <th className="px-2 py-2">Port</th>
              <th className="px-2 py-2">Path</th>
              <th className="px-2 py-2">Interval (s)</th>
              <th className="px-2 py-2">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {servers.map((s) => (
              <OverrideRow key={s.id} clusterId={clusterId} row={s} />
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function OverrideRow({ clusterId, row }: { clusterId: string; row: Row }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const o = row.override ?? {};
  const initial = () => ({
    enabled: o.enabled === undefined ? "" : o.enabled ? "on" : "off",
    protocol: o.protocol ?? "",
    port: o.port === undefined ? "" : String(o.port),
    path: o.path ?? "",
    intervalS: o.intervalS === undefined ? "" : String(o.intervalS),
  });
  const [f, setF] = useState(initial);
  const key = JSON.stringify(row.override);
  useEffect(() => setF(initial()), [key]);
  const candidate: Record<string, unknown> = { ...o };
  for (const k of ["enabled", "protocol", "port", "path", "intervalS"] as const) delete candidate[k];
  if (f.enabled) candidate.enabled = f.enabled === "on";
  if (f.protocol) candidate.protocol = f.protocol;
  if (f.port.trim()) candidate.port = Number(f.port);
  if (f.path) candidate.path = f.path;
  if (f.intervalS.trim()) candidate.intervalS = Number(f.intervalS);
  const parsed = probeOverrideSchema.safeParse(candidate);
  // The schema's messages name their field ("Port must be a whole number between 1 and 65535").
  const error = parsed.success ? undefined : (parsed.error.issues[0]?.message ?? "Invalid override");
  const save = useMutation(
    trpc.monitoring.setServerProbeOverride.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.monitoring.health.queryKey({ clusterId }) }),
    }),
  );
  const changed = JSON.stringify(f) !== JSON.stringify(initial());
  const cell = "px-2 py-1";
  return (
    <>
      <tr className="border-t border-slate-100" aria-label={`Override for ${row.name}`}>
        <td className={`${cell} whitespace-nowrap font-medium`}>{row.name}</td>
        <td className={cell}>
          <select aria-label={`Probes for ${row.name}`} className={inputClass} value={f.enabled} onChange={(e) => setF({ ...f, enabled: e.target.value })}>
            <option value="">inherit</option>
            <option value="on">on</option>
            <option value="off">off</option>
          </select>
        </td>
        <td className={cell}>
          <select aria-label={`Protocol for ${row.name}`} className={inputClass} value={f.protocol} onChange={(e) => setF({ ...f, protocol: e.target.value })}>
            <option value="">inherit</option>
            {PROBE_PROTOCOLS.map((p) => (
              <option key={p} value={p}>
                {p.toUpperCase()}
              </option>
            ))}
          </select>
        </td>
        <td className={cell}>
          <input aria-label={`Port for ${row.name}`} className={`${inputClass} w-24`} value={f.port} onChange={(e) => setF({ ...f, port: e.target.value })} />
        </td>
        <td className={cell}>
          <input aria-label={`Path for ${row.name}`} className={`${inputClass} w-28`} value={f.path} onChange={(e) => setF({ ...f, path: e.target.value })} />
        </td>
        <td className={cell}>
          <input aria-label={`Interval for ${row.name}`} className={`${inputClass} w-20`} value={f.intervalS} onChange={(e) => setF({ ...f, intervalS: e.target.value })} />
        </td>
        <td className={`${cell} whitespace-nowrap`}>
          <button
            type="button"
            className={secondaryButtonClass}
            disabled={!!error || !changed || save.isPending}
            onClick={() => parsed.success && save.mutate({ serverId: row.id, override: Object.keys(parsed.data).length ? parsed.data : null })}
          >
            Save
          </button>{" "}
          {row.override && (
            <button type="button" className={secondaryButtonClass} disabled={save.isPending} onClick={() => save.mutate({ serverId: row.id, override: null })}>
              Clear
            </button>
          )}
        </td>
      </tr>
      {(error || save.error) && (
        <tr>
          <td colSpan={7} role="alert" className="px-2 pb-2 text-xs text-red-600">
            {error ?? errorMessage(save.error)}
          </td>
        </tr>
      )}
    </>
  );
}
