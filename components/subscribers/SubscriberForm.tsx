"use client";
import { ResetStrategyOptions } from "./ResetStrategyOptions";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { z } from "zod";
import { Dialog, FormFooter } from "@/components/ui/Dialog";
import { Field, inputClass } from "@/components/ui/Field";
import { validate } from "@/components/ui/validate";
import { formErrors } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { DEVICE_LIMIT_MAX } from "@/core/devices";
import { deviceLimitSchema, GIB, holdDaysSchema, nameSchema, resetDaySchema, subscriberLimitsIssues, trafficLimitGbSchema, type SubscriberLimitsInput } from "@/core/validation";
import { UsagePeriods } from "./UsagePeriods";

const formSchema = z.object({ name: nameSchema, trafficLimitGb: trafficLimitGbSchema, trafficResetDay: resetDaySchema, holdDays: holdDaysSchema, deviceLimit: deviceLimitSchema });

type Strategy = SubscriberLimitsInput["trafficResetStrategy"];

export interface SubscriberValues {
  id: string;
  name: string;
  expiresAt: Date | null;
  trafficLimitBytes: number | null;
  trafficResetStrategy: Strategy;
  trafficResetDay: number | null;
  holdDays: number | null;
  deviceLimit: number | null;
  planId: string | null;
}

/** A plan as the form needs it: its defaults prefill a new subscriber's fields. */
interface PlanDefaults {
  id: string;
  name: string;
  isDefault: boolean;
  trafficLimitBytes: number | null;
  expiryDays: number | null;
  trafficResetStrategy: Strategy;
  trafficResetDay: number | null;
  deviceLimit: number | null;
}

const WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

/** yyyy-mm-dd of a date in local time, for <input type="date">. */
function dateInput(d: Date | null): string {
  if (!d) return "";
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

/**
 * A subscriber's fields, to create one or edit one: in a dialog, or `inline` on the subscriber's
 * page (its Edit tab), where saving keeps the form open and says so.
 */
export function SubscriberForm({
  clusterId,
  subscriber,
  onClose,
  onCreated,
  inline = false,
}: {
  clusterId: string;
  subscriber?: SubscriberValues;
  onClose: () => void;
  onCreated?: (s: { id: string; name: string; token: string }) => void;
  inline?: boolean;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState(subscriber?.name ?? "");
  const [expiry, setExpiry] = useState(dateInput(subscriber?.expiresAt ?? null));
  const [limit, setLimit] = useState(subscriber?.trafficLimitBytes ? String(Math.round((subscriber.trafficLimitBytes / GIB) * 1000) / 1000) : "");
  const [strategy, setStrategy] = useState<Strategy>(subscriber?.trafficResetStrategy ?? "never");
  const [resetDay, setResetDay] = useState(subscriber?.trafficResetDay ? String(subscriber.trafficResetDay) : "1");
  const [onHold, setOnHold] = useState(subscriber ? subscriber.holdDays !== null : false);
  const [holdDays, setHoldDays] = useState(subscriber?.holdDays ? String(subscriber.holdDays) : "30");
  const [deviceLimit, setDeviceLimit] = useState(subscriber?.deviceLimit ? String(subscriber.deviceLimit) : "");
  const [planId, setPlanId] = useState(subscriber?.planId ?? "");
  const [applyPlanLimits, setApplyPlanLimits] = useState(false);
  const plans = useQuery(trpc.plans.list.queryOptions({ clusterId }));
  const [saved, setSaved] = useState(false);
  const [clientErrors, setClientErrors] = useState<Record<string, string>>({});
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.subscribers.pathKey() });
  const create = useMutation(
    trpc.subscribers.create.mutationOptions({
      onSuccess: async (r) => {
        await refresh();
        onCreated?.(r);
        onClose();
      },
    }),
  );
  const update = useMutation(
    trpc.subscribers.update.mutationOptions({
      onSuccess: async () => {
        await refresh();
        if (inline) setSaved(true);
        else onClose();
      },
    }),
  );
  const mutation = subscriber ? update : create;

  /** A new subscriber's fields take the chosen plan's defaults, shown before saving (then edited freely). */
  const takeDefaults = (p: PlanDefaults) => {
    setLimit(p.trafficLimitBytes ? String(Math.round((p.trafficLimitBytes / GIB) * 1000) / 1000) : "");
    setExpiry(p.expiryDays ? dateInput(new Date(Date.now() + p.expiryDays * 86_400_000)) : "");
    setStrategy(p.trafficResetStrategy);
    setResetDay(p.trafficResetDay ? String(p.trafficResetDay) : "1");
    setDeviceLimit(p.deviceLimit ? String(p.deviceLimit) : "");
  };
  // The cluster's default plan, preselected for a new subscriber once the plans are known.
  useEffect(() => {
    if (subscriber || planId || !plans.data) return;
    const d = plans.data.find((p) => p.isDefault);
    if (!d) return;
    setPlanId(d.id);
    // Only into fields still empty: what the operator typed before the plans arrived stays.
    if (limit === "" && expiry === "" && strategy === "never" && deviceLimit === "") takeDefaults(d);
    // Once, when the plans arrive (a later refetch must not overwrite what the operator typed).
  }, [plans.data]);
  const planChanged = subscriber !== undefined && planId !== "" && planId !== subscriber.planId;
  const { errors, general } = formErrors(mutation.error, clientErrors);

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    mutation.reset();
    setSaved(false);
    const dayValue = strategy === "weekly" || strategy === "monthly" ? (resetDay.trim() === "" ? null : resetDay) : null;
    const holdValue = onHold ? (holdDays.trim() === "" ? "" : holdDays) : null;
    const found = validate(formSchema, {
      name,
      trafficLimitGb: limit.trim() === "" ? null : limit,
      trafficResetDay: dayValue,
      holdDays: holdValue,
      deviceLimit: deviceLimit.trim() === "" ? null : deviceLimit,
    });
    let expiresAt: Date | null = null;
    if (expiry && !onHold && subscriber?.expiresAt && expiry === dateInput(subscriber.expiresAt)) {
      // Unchanged: keep the stored instant (an expiry already past may stay; a new one may not).
      expiresAt = subscriber.expiresAt;
    } else if (expiry && !onHold) {
      expiresAt = new Date(`${expiry}T23:59:59`);
      if (Number.isNaN(expiresAt.getTime())) found.expiresAt = "Expiry must be a date";
    }
    const trafficResetDay = dayValue === null ? null : Number(dayValue);
    const hold = holdValue === null ? null : Number(holdValue);
    if (!found.trafficResetDay && !found.holdDays) {
      for (const i of subscriberLimitsIssues({ expiresAt, trafficResetStrategy: strategy, trafficResetDay, holdDays: hold })) found[i.path] ??= i.message;
    }
    setClientErrors(found);
    if (Object.keys(found).length > 0) return;
    const trafficLimitGb = limit.trim() === "" ? null : Number(limit);
    const devices = deviceLimit.trim() === "" ? null : Number(deviceLimit);
    const fields = { name, expiresAt, trafficLimitGb, trafficResetStrategy: strategy, trafficResetDay, holdDays: hold, deviceLimit: devices, ...(planId ? { planId } : {}) };
    if (subscriber) update.mutate({ subscriberId: subscriber.id, ...fields, applyPlanLimits: planChanged && applyPlanLimits });
    else create.mutate({ clusterId, ...fields });
  };
  const err = (k: string) => errors[k] || undefined;
  const clear = (k: string) => setClientErrors((c) => ({ ...c, [k]: "" }));

  const title = subscriber ? `Edit subscriber ${subscriber.name}` : "New subscriber";
  const form = (
    <form onSubmit={submit} noValidate className="flex flex-col gap-4" aria-label={inline ? title : undefined}>
      <Field label="Name" error={err("name")}>
        {(p) => (
          <input
            {...p}
            data-autofocus
            className={inputClass}
            value={name}
            onChange={(e) => {
              setName(e.target.value);
              setClientErrors((c) => ({ ...c, name: "" }));
            }}
            placeholder="alice"
          />
        )}
      </Field>
      <Field label="Plan" error={err("planId")} hint="Which routes the subscriber gets.">
        {(p) => (
          <select
            {...p}
            className={inputClass}
            value={planId}
            onChange={(e) => {
              setPlanId(e.target.value);
              clear("planId");
              const chosen = plans.data?.find((x) => x.id === e.target.value);
              if (!subscriber && chosen) takeDefaults(chosen);
            }}
          >
            {planId === "" && <option value="">Loading plans…</option>}
            {plans.data?.map((x) => (
              <option key={x.id} value={x.id}>
                {x.name}
                {x.isDefault ? " (default)" : ""}
              </option>
            ))}
          </select>
        )}
      </Field>
      {planChanged && (
        <label className="flex items-center gap-2 text-sm text-slate-700">
          <input type="checkbox" checked={applyPlanLimits} onChange={(e) => setApplyPlanLimits(e.target.checked)} />
          Apply the plan&apos;s limits (traffic limit, reset, device limit); otherwise the subscriber keeps their own
        </label>
      )}
      <label className="flex items-center gap-2 text-sm text-slate-700">
        <input
          type="checkbox"
          checked={onHold}
          onChange={(e) => {
            setOnHold(e.target.checked);
            clear("holdDays");
          }}
        />
        On hold until first connection
      </label>
      {onHold ? (
        <Field label="Subscription length in days" error={err("holdDays")} hint="The expiry is set when the subscriber first connects: first use + this many days.">
          {(p) => (
            <input
              {...p}
              className={inputClass}
              inputMode="numeric"
              value={holdDays}
              onChange={(e) => {
                setHoldDays(e.target.value);
                clear("holdDays");
              }}
            />
          )}
        </Field>
      ) : (
        <Field label="Expires on (optional)" error={err("expiresAt")} hint="The link stops working at the end of this day.">
          {(p) => (
            <input
              {...p}
              type="date"
              className={inputClass}
              value={expiry}
              onChange={(e) => {
                setExpiry(e.target.value);
                clear("expiresAt");
              }}
            />
          )}
        </Field>
      )}
      <Field label="Traffic limit in GB (optional)" error={err("trafficLimitGb")} hint="Leave empty for unlimited.">
        {(p) => (
          <input
            {...p}
            className={inputClass}
            inputMode="decimal"
            value={limit}
            onChange={(e) => {
              setLimit(e.target.value);
              setClientErrors((c) => ({ ...c, trafficLimitGb: "" }));
            }}
            placeholder="e.g. 100"
          />
        )}
      </Field>
      <div className="flex gap-3">
        <div className="flex-1">
          <Field label="Usage resets" error={err("trafficResetStrategy")} hint="At 00:00 UTC; used traffic goes back to 0.">
            {(p) => (
              <select
                {...p}
                className={inputClass}
                value={strategy}
                onChange={(e) => {
                  const next = e.target.value as Strategy;
                  setStrategy(next);
                  if (next === "weekly" && Number(resetDay) > 7) setResetDay("1");
                  clear("trafficResetDay");
                }}
              >
                <ResetStrategyOptions />
              </select>
            )}
          </Field>
        </div>
        {strategy === "weekly" && (
          <div className="flex-1">
            <Field label="On" error={err("trafficResetDay")}>
              {(p) => (
                <select {...p} className={inputClass} value={resetDay} onChange={(e) => setResetDay(e.target.value)}>
                  {WEEKDAYS.map((d, i) => (
                    <option key={d} value={String(i + 1)}>
                      {d}
                    </option>
                  ))}
                </select>
              )}
            </Field>
          </div>
        )}
        {strategy === "monthly" && (
          <div className="flex-1">
            <Field label="Day of the month" error={err("trafficResetDay")} hint="31 = the last day in shorter months.">
              {(p) => (
                <input
                  {...p}
                  className={inputClass}
                  inputMode="numeric"
                  value={resetDay}
                  onChange={(e) => {
                    setResetDay(e.target.value);
                    clear("trafficResetDay");
                  }}
                />
              )}
            </Field>
          </div>
        )}
      </div>
      <Field label="Device limit (optional)" error={err("deviceLimit")} hint={`Devices whose app sends a device id (x-hwid), 1–${DEVICE_LIMIT_MAX}. Leave empty for no limit.`}>
        {(p) => (
          <input
            {...p}
            className={inputClass}
            inputMode="numeric"
            value={deviceLimit}
            onChange={(e) => {
              setDeviceLimit(e.target.value);
              clear("deviceLimit");
            }}
            placeholder="e.g. 3"
          />
        )}
      </Field>
      {subscriber && !inline && <UsagePeriods subscriberId={subscriber.id} />}
      <FormFooter
        error={general}
        pending={mutation.isPending}
        submitLabel={subscriber ? "Save subscriber" : "Create subscriber"}
        onCancel={onClose}
        note={
          saved ? (
            <span role="status" className="text-green-700">
              Saved
            </span>
          ) : undefined
        }
      />
    </form>
  );
  if (inline) return <div className="max-w-lg">{form}</div>;
  return (
    <Dialog title={title} onClose={onClose} size="sm">
      {form}
    </Dialog>
  );
}
