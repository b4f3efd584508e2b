"use client";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { ConfirmDialog } from "@/components/ui/Dialog";
import { Field, inputClass } from "@/components/ui/Field";
import { formErrors } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { EXTEND_DAYS_MAX, type SubscriberStatus } from "@/core/validation";

export type BulkKind = "enable" | "disable" | "extend" | "resetUsage" | "delete" | "setPlan";

const VERB: Record<BulkKind, string> = { enable: "Enable", disable: "Disable", extend: "Extend the expiry of", resetUsage: "Reset the usage of", delete: "Delete", setPlan: "Change the plan of" };
const LABEL: Record<BulkKind, string> = { enable: "Enable", disable: "Disable", extend: "Extend", resetUsage: "Reset usage of", delete: "Delete", setPlan: "Change plan of" };
const WHAT: Record<BulkKind, string> = {
  enable: "They may connect again (unless expired or over their limit); the servers get them in the next config push.",
  disable: "Their subscription links stop working and the servers drop them in the next config push.",
  extend: "Each expiry moves later by this many days; an expiry already past counts from now. Subscribers who never expire stay so.",
  resetUsage: "Traffic used goes back to zero, so subscribers held at their traffic limit may connect again.",
  delete: "Their subscription links stop working. This cannot be undone.",
  setPlan: "They get the new plan's routes at their app's next fetch, and the servers follow in the next config push. Their own limits stay unless you apply the plan's.",
};

const plural = (n: number) => `${n.toLocaleString("en")} subscriber${n === 1 ? "" : "s"}`;

/** The confirmation of one bulk action: says how many subscribers it affects, then does it. */
export function BulkDialog({
  kind,
  clusterId,
  count,
  selection,
  onClose,
  onDone,
}: {
  kind: BulkKind;
  clusterId: string;
  count: number;
  selection: { ids: string[] } | { matching: { search?: string; status?: SubscriberStatus; online?: boolean; planId?: string } };
  onClose: () => void;
  onDone: () => void;
}) {
  const trpc = useTRPC();
  const [days, setDays] = useState("30");
  const [daysError, setDaysError] = useState("");
  const [planId, setPlanId] = useState("");
  const [applyLimits, setApplyLimits] = useState(false);
  const plans = useQuery({ ...trpc.plans.list.queryOptions({ clusterId }), enabled: kind === "setPlan" });
  const mutation = useMutation(trpc.subscribers.bulk.mutationOptions({ onSuccess: onDone }));
  const [planError, setPlanError] = useState("");
  const { errors, general } = formErrors(mutation.error, { ...(daysError ? { "action.days": daysError } : {}), ...(planError ? { "action.planId": planError } : {}) });
  const confirm = () => {
    mutation.reset();
    let action: { kind: "extend"; days: number } | { kind: "setPlan"; planId: string; applyLimits: boolean } | { kind: Exclude<BulkKind, "extend" | "setPlan"> };
    if (kind === "setPlan") {
      if (!planId) {
        setPlanError("Choose a plan");
        return;
      }
      action = { kind, planId, applyLimits };
    } else if (kind === "extend") {
      const n = Number(days);
      if (!/^\d+$/.test(days.trim()) || n < 1 || n > EXTEND_DAYS_MAX) {
        setDaysError(`Days must be between 1 and ${EXTEND_DAYS_MAX}`);
        return;
      }
      action = { kind, days: n };
    } else action = { kind };
    mutation.mutate({ clusterId, selection, action, expectedCount: count });
  };
  return (
    <ConfirmDialog
      title={`${VERB[kind]} ${plural(count)}?`}
      confirmLabel={`${LABEL[kind]} ${plural(count)}`}
      pending={mutation.isPending}
      error={general}
      onClose={onClose}
      onConfirm={confirm}
    >
      <p>{WHAT[kind]}</p>
      {kind === "setPlan" && (
        <>
          <Field label="New plan" error={errors["action.planId"] || undefined}>
            {(p) => (
              <select
                {...p}
                data-autofocus
                className={inputClass}
                value={planId}
                onChange={(e) => {
                  setPlanId(e.target.value);
                  setPlanError("");
                }}
              >
                <option value="">Choose a plan…</option>
                {plans.data?.map((x) => (
                  <option key={x.id} value={x.id}>
                    {x.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <label className="flex items-center gap-2 text-sm text-slate-700">
            <input type="checkbox" checked={applyLimits} onChange={(e) => setApplyLimits(e.target.checked)} />
            Apply the plan&apos;s limits (traffic limit, reset, device limit)
          </label>
        </>
      )}
      {kind === "extend" && (
        <Field label="Days" error={errors["action.days"] || undefined}>
          {(p) => (
            <input
              {...p}
              data-autofocus
              className={inputClass}
              inputMode="numeric"
              value={days}
              onChange={(e) => {
                setDays(e.target.value);
                setDaysError("");
              }}
            />
          )}
        </Field>
      )}
    </ConfirmDialog>
  );
}
