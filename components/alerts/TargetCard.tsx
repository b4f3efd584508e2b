import { secondaryButtonClass } from "@/components/ui/Field";
import { STATE_STYLE, showsLastError, targetSummary, when, type Target } from "./alert-view";
import { DeliveryHistory } from "./DeliveryHistory";

/** One alert target: its state, where it sends, its last delivery or error, and its recent deliveries. */
export function TargetCard({
  target: t,
  testPending,
  onSendTest,
  onEdit,
  onDelete,
}: {
  target: Target;
  /** A test is on its way to some target: one at a time. */
  testPending: boolean;
  onSendTest: () => void;
  onEdit: () => void;
  onDelete: () => void;
}) {
  const style = STATE_STYLE[t.state];
  return (
    <li aria-label={`Alert target ${t.name}`} className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
      <div className="flex flex-wrap items-center gap-2">
        <span className="font-medium">{t.name}</span>
        <span className="rounded bg-slate-100 px-1.5 py-0.5 text-xs uppercase tracking-wide text-slate-600">{t.kind}</span>
        <span data-testid="target-state" className={`inline-flex items-center rounded-full px-2 py-0.5 text-xs font-medium ring-1 ring-inset ${style.cls}`}>
          {style.label}
        </span>
        {!t.enabled && <span className="text-xs text-slate-500">disabled</span>}
        <span className="ml-auto flex gap-1">
          <button type="button" className={secondaryButtonClass} disabled={testPending || !t.enabled} onClick={onSendTest} aria-label={`Send test to ${t.name}`}>
            Send test
          </button>
          <button type="button" className={secondaryButtonClass} onClick={onEdit} aria-label={`Edit ${t.name}`}>
            Edit
          </button>
          <button type="button" className="rounded px-2 py-1 text-sm font-medium text-red-700 hover:bg-red-50" onClick={onDelete} aria-label={`Delete ${t.name}`}>
            Delete
          </button>
        </span>
      </div>
      <p className="mt-1 break-all text-sm text-slate-600">{targetSummary(t)}</p>
      <dl className="mt-2 grid gap-x-6 gap-y-1 text-xs text-slate-500 sm:grid-cols-3">
        <div>
          <dt className="inline">Last delivery: </dt>
          <dd className="inline" data-testid="last-delivery">
            {when(t.lastDeliveryAt)}
          </dd>
        </div>
        <div>
          <dt className="inline">Pending: </dt>
          <dd className="inline">{t.pending}</dd>
        </div>
        {showsLastError(t) && (
          <div className="sm:col-span-3 text-red-700">
            <dt className="inline">Last error ({when(t.lastFailureAt)}): </dt>
            <dd className="inline" data-testid="last-error">
              {t.lastError}
            </dd>
          </div>
        )}
      </dl>
      {t.recent.length > 0 && <DeliveryHistory targetName={t.name} recent={t.recent} />}
    </li>
  );
}
