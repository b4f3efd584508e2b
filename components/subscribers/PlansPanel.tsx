"use client";
import { ResetStrategyOptions } from "./ResetStrategyOptions";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { ConfirmDialog, Dialog, FormFooter } from "@/components/ui/Dialog";
import { Field, inputClass, secondaryButtonClass } from "@/components/ui/Field";
import { FormAlert } from "@/components/ui/FormAlert";
import { DEVICE_LIMIT_MAX } from "@/core/devices";
import { GIB, PLAN_EXPIRY_DAYS_MAX } from "@/core/validation";
import { errorMessage, formErrors } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import type { PlanView } from "@/server/accounts/plans";
import { smallButton, smallDangerButton } from "@/components/ui/buttons";

type Strategy = PlanView["trafficResetStrategy"];
type RouteOption = { id: string; name: string };

const gb = (bytes: number | null) => (bytes === null ? "" : String(Math.round((bytes / GIB) * 1000) / 1000));

/** One line of what a new subscriber on the plan starts with. */
function defaultsText(p: PlanView): string {
  const parts = [
    p.trafficLimitBytes === null ? "unlimited traffic" : `${gb(p.trafficLimitBytes)} GB`,
    p.expiryDays === null ? "never expires" : `expires after ${p.expiryDays} day${p.expiryDays === 1 ? "" : "s"}`,
    p.trafficResetStrategy === "never" ? null : `resets ${p.trafficResetStrategy}`,
    p.deviceLimit === null ? null : `${p.deviceLimit} device${p.deviceLimit === 1 ? "" : "s"}`,
  ];
  return parts.filter(Boolean).join(" · ");
}

/**
 * The cluster's plans (issue 27 point 2): which routes a subscriber gets and what a new
 * subscriber on the plan starts with. Listed for everyone; created, edited, made the default
 * and deleted (moving their subscribers) by those who may change things.
 */
export function PlansPanel({ clusterId, canEdit }: { clusterId: string; canEdit: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const plans = useQuery(trpc.plans.list.queryOptions({ clusterId }));
  const topology = useQuery(trpc.topology.get.queryOptions({ clusterId }));
  const routes: RouteOption[] = (topology.data?.routes ?? []).map((r) => ({ id: r.id, name: r.name }));
  const routeName = new Map(routes.map((r) => [r.id, r.name]));
  const [editing, setEditing] = useState<PlanView | "new" | null>(null);
  const [deleting, setDeleting] = useState<PlanView | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const refresh = () => Promise.all([queryClient.invalidateQueries({ queryKey: trpc.plans.pathKey() }), queryClient.invalidateQueries({ queryKey: trpc.subscribers.pathKey() })]);
  const setDefault = useMutation(
    trpc.plans.setDefault.mutationOptions({
      onSuccess: async (_r, v) => {
        await refresh();
        setNotice(`${plans.data?.find((p) => p.id === v.planId)?.name ?? "The plan"} is now the default plan`);
      },
      onError: (e) => setError(errorMessage(e)),
    }),
  );

  return (
    <section aria-labelledby="plans-heading" className="mb-6 rounded-lg border border-slate-200 bg-white p-4">
      <div className="mb-3 flex flex-wrap items-center justify-between gap-2">
        <div>
          <h2 id="plans-heading" className="text-lg font-semibold">
            Plans
          </h2>
          <p className="text-sm text-slate-500">Which routes a subscriber gets, and what a new subscriber on the plan starts with.</p>
        </div>
        {canEdit && (
          <button type="button" className={secondaryButtonClass} onClick={() => setEditing("new")}>
            <span aria-hidden="true">+</span> New plan
          </button>
        )}
      </div>
      {notice && (
        <p role="status" className="mb-2 text-sm text-green-700">
          {notice}
        </p>
      )}
      {error && <FormAlert className="mb-2">{error}</FormAlert>}
      {plans.error && <FormAlert className="mb-2">{errorMessage(plans.error)}</FormAlert>}
      <ul className="divide-y divide-slate-100" aria-label="Plans">
        {plans.data?.map((p) => (
          <li key={p.id} className="flex flex-wrap items-center gap-x-3 gap-y-1 py-2 text-sm" aria-label={`Plan ${p.name}`}>
            <span className="font-medium">{p.name}</span>
            {p.isDefault && <span className="rounded bg-sky-100 px-1.5 py-0.5 text-xs text-sky-800">Default</span>}
            <span className="text-slate-600">{p.allRoutes ? "All routes" : p.routeIds.length === 0 ? "No routes" : p.routeIds.map((id) => routeName.get(id) ?? "…").join(", ")}</span>
            <span className="text-slate-500">{defaultsText(p)}</span>
            <span className="text-slate-500" data-testid="plan-subscribers">
              {p.subscriberCount.toLocaleString("en")} subscriber{p.subscriberCount === 1 ? "" : "s"}
            </span>
            {canEdit && (
              <span className="ml-auto flex gap-1">
                <button type="button" className={smallButton} aria-label={`Edit plan ${p.name}`} onClick={() => setEditing(p)}>
                  Edit
                </button>
                {!p.isDefault && (
                  <button
                    type="button"
                    className={smallButton}
                    aria-label={`Make ${p.name} the default plan`}
                    disabled={setDefault.isPending}
                    onClick={() => {
                      setError(null);
                      setNotice(null);
                      setDefault.mutate({ clusterId, planId: p.id });
                    }}
                  >
                    Make default
                  </button>
                )}
                {!p.isDefault && (
                  <button type="button" className={smallDangerButton} aria-label={`Delete plan ${p.name}`} onClick={() => setDeleting(p)}>
                    Delete
                  </button>
                )}
              </span>
            )}
          </li>
        ))}
      </ul>
      {editing && (
        <PlanForm
          clusterId={clusterId}
          plan={editing === "new" ? undefined : editing}
          routes={routes}
          onClose={() => setEditing(null)}
          onSaved={async (name) => {
            setEditing(null);
            await refresh();
            setNotice(`Saved plan ${name}`);
          }}
        />
      )}
      {deleting && (
        <DeletePlan
          plan={deleting}
          others={(plans.data ?? []).filter((p) => p.id !== deleting.id)}
          onClose={() => setDeleting(null)}
          onDone={async () => {
            setDeleting(null);
            await refresh();
            setNotice(`Deleted plan ${deleting.name}`);
          }}
        />
      )}
    </section>
  );
}

function PlanForm({ clusterId, plan, routes, onClose, onSaved }: { clusterId: string; plan?: PlanView; routes: RouteOption[]; onClose: () => void; onSaved: (name: string) => void }) {
  const trpc = useTRPC();
  const [name, setName] = useState(plan?.name ?? "");
  const [allRoutes, setAllRoutes] = useState(plan?.allRoutes ?? false);
  const [routeIds, setRouteIds] = useState<Set<string>>(new Set(plan?.routeIds ?? []));
  const [limit, setLimit] = useState(gb(plan?.trafficLimitBytes ?? null));
  const [expiryDays, setExpiryDays] = useState(plan?.expiryDays ? String(plan.expiryDays) : "");
  const [strategy, setStrategy] = useState<Strategy>(plan?.trafficResetStrategy ?? "never");
  const [resetDay, setResetDay] = useState(plan?.trafficResetDay ? String(plan.trafficResetDay) : "1");
  const [deviceLimit, setDeviceLimit] = useState(plan?.deviceLimit ? String(plan.deviceLimit) : "");
  const options = { onSuccess: () => onSaved(name.trim()) };
  const create = useMutation(trpc.plans.create.mutationOptions(options));
  const update = useMutation(trpc.plans.update.mutationOptions(options));
  const mutation = plan ? update : create;
  const { errors, general } = formErrors(mutation.error);
  const err = (k: string) => errors[k] || undefined;
  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    mutation.reset();
    // The server checks every field and names the one that is wrong (core/validation.ts planFieldsSchema).
    const fields = {
      name,
      allRoutes,
      routeIds: allRoutes ? [] : routes.filter((r) => routeIds.has(r.id)).map((r) => r.id),
      trafficLimitGb: limit.trim() === "" ? null : (limit),
      expiryDays: expiryDays.trim() === "" ? null : (expiryDays),
      trafficResetStrategy: strategy,
      trafficResetDay: strategy === "weekly" || strategy === "monthly" ? resetDay : null,
      deviceLimit: deviceLimit.trim() === "" ? null : (deviceLimit),
    };
    if (plan) update.mutate({ planId: plan.id, ...fields });
    else create.mutate({ clusterId, ...fields });
  };
  return (
    <Dialog title={plan ? `Edit plan ${plan.name}` : "New plan"} onClose={onClose} size="sm">
      <form onSubmit={submit} noValidate className="flex flex-col gap-4">
        <Field label="Name" error={err("name")}>
          {(p) => <input {...p} data-autofocus className={inputClass} value={name} onChange={(e) => setName(e.target.value)} placeholder="e.g. Europe" />}
        </Field>
        <fieldset className="flex flex-col gap-1 text-sm">
          <legend className="mb-1 font-medium text-slate-700">Routes</legend>
          <label className="flex items-center gap-2">
            <input type="checkbox" checked={allRoutes} onChange={(e) => setAllRoutes(e.target.checked)} />
            All routes (routes added later included)
          </label>
          {!allRoutes &&
            routes.map((r) => (
              <label key={r.id} className="ml-5 flex items-center gap-2">
                <input
                  type="checkbox"
                  checked={routeIds.has(r.id)}
                  onChange={(e) =>
                    setRouteIds((s) => {
                      const next = new Set(s);
                      if (e.target.checked) next.add(r.id);
                      else next.delete(r.id);
                      return next;
                    })
                  }
                />
                {r.name}
              </label>
            ))}
          {!allRoutes && routes.length === 0 && <p className="ml-5 text-slate-500">This cluster has no routes yet.</p>}
          {err("routeIds") && (
            <p role="alert" className="text-red-700">
              {err("routeIds")}
            </p>
          )}
        </fieldset>
        <p className="text-sm text-slate-500">New subscribers on this plan start with these; changing them later leaves existing subscribers as they are.</p>
        <Field label="Traffic limit in GB (optional)" error={err("trafficLimitGb")} hint="Leave empty for unlimited.">
          {(p) => <input {...p} className={inputClass} inputMode="decimal" value={limit} onChange={(e) => setLimit(e.target.value)} placeholder="e.g. 100" />}
        </Field>
        <Field label="Expires after (days, optional)" error={err("expiryDays")} hint={`From the day the subscriber is created, 1–${PLAN_EXPIRY_DAYS_MAX}. Leave empty for never.`}>
          {(p) => <input {...p} className={inputClass} inputMode="numeric" value={expiryDays} onChange={(e) => setExpiryDays(e.target.value)} placeholder="e.g. 30" />}
        </Field>
        <div className="flex gap-3">
          <div className="flex-1">
            <Field label="Usage resets" error={err("trafficResetStrategy")}>
              {(p) => (
                <select {...p} className={inputClass} value={strategy} onChange={(e) => setStrategy(e.target.value as Strategy)}>
                  <ResetStrategyOptions />
                </select>
              )}
            </Field>
          </div>
          {(strategy === "weekly" || strategy === "monthly") && (
            <div className="flex-1">
              <Field label={strategy === "weekly" ? "Weekday (1 = Monday)" : "Day of the month"} error={err("trafficResetDay")}>
                {(p) => <input {...p} className={inputClass} inputMode="numeric" value={resetDay} onChange={(e) => setResetDay(e.target.value)} />}
              </Field>
            </div>
          )}
        </div>
        <Field label="Device limit (optional)" error={err("deviceLimit")} hint={`1–${DEVICE_LIMIT_MAX}. Leave empty for no limit.`}>
          {(p) => <input {...p} className={inputClass} inputMode="numeric" value={deviceLimit} onChange={(e) => setDeviceLimit(e.target.value)} placeholder="e.g. 3" />}
        </Field>
        <FormFooter error={general} pending={mutation.isPending} submitLabel={plan ? "Save plan" : "Create plan"} onCancel={onClose} />
      </form>
    </Dialog>
  );
}

function DeletePlan({ plan, others, onClose, onDone }: { plan: PlanView; others: PlanView[]; onClose: () => void; onDone: () => void }) {
  const trpc = useTRPC();
  const [moveTo, setMoveTo] = useState(others.find((p) => p.isDefault)?.id ?? "");
  const mutation = useMutation(trpc.plans.delete.mutationOptions({ onSuccess: onDone }));
  const { errors, general } = formErrors(mutation.error);
  const n = plan.subscriberCount;
  return (
    <ConfirmDialog
      title={`Delete plan ${plan.name}?`}
      confirmLabel="Delete plan"
      pending={mutation.isPending}
      error={general ?? errors.planId ?? null}
      onClose={onClose}
      onConfirm={() => mutation.mutate({ planId: plan.id, ...(n > 0 ? { moveToPlanId: moveTo || undefined } : {}) })}
    >
      {n === 0 ? (
        <p>No subscriber is on this plan.</p>
      ) : (
        <Field label={`Move its ${n.toLocaleString("en")} subscriber${n === 1 ? "" : "s"} to`} error={errors.moveToPlanId || undefined}>
          {(p) => (
            <select {...p} data-autofocus className={inputClass} value={moveTo} onChange={(e) => setMoveTo(e.target.value)}>
              {others.map((o) => (
                <option key={o.id} value={o.id}>
                  {o.name}
                </option>
              ))}
            </select>
          )}
        </Field>
      )}
    </ConfirmDialog>
  );
}
