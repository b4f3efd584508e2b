import { statusStyle } from "@/core/format";

/** A server's health status (DESIGN §3) as a coloured label; `title` is its tooltip. */
export function StatusBadge({ status, title }: { status: string; title?: string | null }) {
  const s = statusStyle(status);
  return (
    <span title={title ?? undefined} className={`inline-flex items-center rounded-full px-2 py-0.5 text-xs font-medium ring-1 ring-inset ${s.badge}`}>
      {s.label}
    </span>
  );
}
