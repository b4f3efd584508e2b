/**
 * Grey placeholders in the shape of what is loading, so a page keeps its layout instead of
 * going blank. Decorative: the wrapper announces "Loading" once to assistive technology.
 */
export function Skeleton({ className = "" }: { className?: string }) {
  return <div aria-hidden className={`animate-pulse rounded-md bg-slate-200 ${className}`} />;
}

/** A heading bar and `rows` row bars: the shape of a table or list page. */
export function PageSkeleton({ rows = 6, label = "Loading", className = "" }: { rows?: number; label?: string; className?: string }) {
  return (
    <div role="status" aria-busy="true" aria-label={label} data-testid="skeleton" className={`flex flex-col gap-3 ${className}`}>
      <span className="sr-only">{label}…</span>
      <Skeleton className="h-7 w-48" />
      <div className="flex flex-col gap-2 rounded-lg border border-slate-200 bg-white p-3">
        {Array.from({ length: rows }, (_, i) => (
          <Skeleton key={i} className="h-9 w-full" />
        ))}
      </div>
    </div>
  );
}
