"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { z } from "zod";
import { Dialog, FormFooter } from "@/components/ui/Dialog";
import { Field, inputClass } from "@/components/ui/Field";
import { validate } from "@/components/ui/validate";
import { formErrors } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { GIB, nameSchema, trafficLimitGbSchema } from "@/server/validation";

const formSchema = z.object({ name: nameSchema, trafficLimitGb: trafficLimitGbSchema });

export interface SubscriberValues {
  id: string;
  name: string;
  expiresAt: Date | null;
  trafficLimitBytes: number | null;
}

/** yyyy-mm-dd of a date in local time, for <input type="date">. */
function dateInput(d: Date | null): string {
  if (!d) return "";
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

export function SubscriberForm({ clusterId, subscriber, onClose, onCreated }: { clusterId: string; subscriber?: SubscriberValues; onClose: () => void; onCreated?: (s: { id: string; name: string; token: string }) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState(subscriber?.name ?? "");
  const [expiry, setExpiry] = useState(dateInput(subscriber?.expiresAt ?? null));
  const [limit, setLimit] = useState(subscriber?.trafficLimitBytes ? String(Math.round((subscriber.trafficLimitBytes / GIB) * 1000) / 1000) : "");
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
        onClose();
      },
    }),
  );
  const mutation = subscriber ? update : create;
  const { errors, general } = formErrors(mutation.error, clientErrors);

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    mutation.reset();
    const found = validate(formSchema, { name, trafficLimitGb: limit.trim() === "" ? null : limit });
    let expiresAt: Date | null = null;
    if (expiry) {
      expiresAt = new Date(`${expiry}T23:59:59`);
      if (Number.isNaN(expiresAt.getTime())) found.expiresAt = "Expiry must be a date";
    }
    setClientErrors(found);
    if (Object.keys(found).length > 0) return;
    const trafficLimitGb = limit.trim() === "" ? null : Number(limit);
    if (subscriber) update.mutate({ subscriberId: subscriber.id, name, expiresAt, trafficLimitGb });
    else create.mutate({ clusterId, name, expiresAt, trafficLimitGb });
  };
  const err = (k: string) => errors[k] || undefined;

  return (
    <Dialog title={subscriber ? `Edit subscriber ${subscriber.name}` : "New subscriber"} onClose={onClose} size="sm">
      <form onSubmit={submit} noValidate className="flex flex-col gap-4">
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
        <Field label="Expires on (optional)" error={err("expiresAt")} hint="The link stops working at the end of this day.">
          {(p) => <input {...p} type="date" className={inputClass} value={expiry} onChange={(e) => setExpiry(e.target.value)} />}
        </Field>
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
        <FormFooter error={general} pending={mutation.isPending} submitLabel={subscriber ? "Save subscriber" : "Create subscriber"} onCancel={onClose} />
      </form>
    </Dialog>
  );
}
