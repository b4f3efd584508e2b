/** A server's health status (DESIGN §3) as a coloured label. */
const LABELS: Record<string, { label: string; cls: string }> = {
  healthy: { label: "Healthy", cls: "bg-green-100 text-green-800 ring-green-600/20" },
  disabled: { label: "Disabled by operator", cls: "bg-slate-100 text-slate-700 ring-slate-500/20" },
  pending: { label: "Waiting for first check", cls: "bg-sky-50 text-sky-800 ring-sky-600/20" },
  "no-data": { label: "No data from server", cls: "bg-amber-50 text-amber-800 ring-amber-600/20" },
  unavailable: { label: "Server unavailable", cls: "bg-red-50 text-red-800 ring-red-600/20" },
  "probe-failing": { label: "Health probe failing", cls: "bg-red-50 text-red-800 ring-red-600/20" },
  unreachable: { label: "Unreachable from your servers", cls: "bg-red-50 text-red-800 ring-red-600/20" },
};

export function StatusBadge({ status, title }: { status: string; title?: string | null }) {
  const s = LABELS[status] ?? { label: status, cls: "bg-slate-100 text-slate-700 ring-slate-500/20" };
  return (
    <span title={title ?? undefined} className={`inline-flex items-center rounded-full px-2 py-0.5 text-xs font-medium ring-1 ring-inset ${s.cls}`}>
      {s.label}
    </span>
  );
}
