"use client";
import { inputClass } from "@/components/ui/Field";
import { SUBSCRIBER_STATUSES, type SubscriberStatus } from "@/core/validation";
import { STATUS_LABELS } from "./list-view";

export interface FilterValues {
  search: string;
  status: SubscriberStatus | "";
  online: boolean;
  /** Only the subscribers on this plan; "" = any. */
  planId: string;
}

/** The search box, the status and "online now" filters, and how many subscribers match. */
export function SubscriberFilters({
  value,
  onChange,
  total,
  filtered,
  plans,
}: {
  value: FilterValues;
  onChange: (next: FilterValues) => void;
  total: number | null;
  filtered: boolean;
  plans: Array<{ id: string; name: string }>;
}) {
  return (
    <div className="mb-3 flex flex-wrap items-center gap-3">
      <label className="sr-only" htmlFor="subscriber-search">
        Search subscribers
      </label>
      <input
        id="subscriber-search"
        type="search"
        className={`${inputClass} w-72`}
        placeholder="Name, token start or VLESS UUID"
        value={value.search}
        onChange={(e) => onChange({ ...value, search: e.target.value })}
      />
      <label className="flex items-center gap-2 text-sm text-slate-600">
        Status
        <select className={inputClass} value={value.status} onChange={(e) => onChange({ ...value, status: e.target.value as SubscriberStatus | "" })}>
          <option value="">All</option>
          {SUBSCRIBER_STATUSES.map((s) => (
            <option key={s} value={s}>
              {STATUS_LABELS[s]}
            </option>
          ))}
        </select>
      </label>
      <label className="flex items-center gap-2 text-sm text-slate-600">
        Plan
        <select className={inputClass} value={value.planId} onChange={(e) => onChange({ ...value, planId: e.target.value })}>
          <option value="">All</option>
          {plans.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
      </label>
      <label className="flex items-center gap-2 text-sm text-slate-600">
        <input type="checkbox" checked={value.online} onChange={(e) => onChange({ ...value, online: e.target.checked })} />
        Online now only
      </label>
      {total !== null && (
        <span className="ml-auto text-sm text-slate-500" data-testid="subscriber-total">
          {total.toLocaleString("en")} {filtered ? "matching" : total === 1 ? "subscriber" : "subscribers"}
        </span>
      )}
    </div>
  );
}
