"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Dialog, FormFooter } from "@/components/ui/Dialog";
import { Field, inputClass, secondaryButtonClass } from "@/components/ui/Field";
import { ALERT_EVENT_LABELS, ALERT_EVENT_TYPES, type AlertEventType } from "@/core/alert-events";
import { formErrors } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { DEFAULT_EVENTS, randomSecret, type Target } from "./alert-view";

/**
 * Create or edit one target. Secrets of an existing target show as the server's mask; sending
 * the mask back (or nothing) keeps the stored value, so they stay unless replaced.
 */
export function TargetDialog({ target, onClose }: { target: Target | null; onClose: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const clusters = useQuery(trpc.clusters.list.queryOptions());
  const [name, setName] = useState(target?.name ?? "");
  const [kind, setKind] = useState<"webhook" | "telegram">(target?.kind ?? "webhook");
  const [clusterId, setClusterId] = useState<string>(target?.clusterId ?? "");
  const [url, setUrl] = useState(target?.url ?? "");
  const [secret, setSecret] = useState(target?.secret ?? "");
  const [botToken, setBotToken] = useState(target?.botToken ?? "");
  const [chatId, setChatId] = useState(target?.chatId ?? "");
  const [events, setEvents] = useState<AlertEventType[]>(target?.events ?? [...DEFAULT_EVENTS]);
  const [enabled, setEnabled] = useState(target?.enabled ?? true);
  const done = async () => {
    await queryClient.invalidateQueries({ queryKey: trpc.alerts.list.queryKey() });
    onClose();
  };
  const create = useMutation(trpc.alerts.create.mutationOptions({ onSuccess: done }));
  const update = useMutation(trpc.alerts.update.mutationOptions({ onSuccess: done }));
  const save = target ? update : create;
  const { errors, general } = formErrors(save.error);
  const toggle = (e: AlertEventType) => setEvents((list) => (list.includes(e) ? list.filter((x) => x !== e) : [...list, e]));
  return (
    <Dialog title={target ? `Edit ${target.name}` : "Add an alert target"} onClose={onClose} size="lg">
      <form
        className="grid grid-cols-1 gap-4 sm:grid-cols-2"
        onSubmit={(e) => {
          e.preventDefault();
          const input = {
            name,
            kind,
            clusterId: clusterId || null,
            enabled,
            events,
            ...(kind === "webhook" ? { url, secret } : { botToken, chatId }),
          };
          if (target) update.mutate({ targetId: target.id, ...input });
          else create.mutate(input);
        }}
      >
        <Field label="Name" error={errors.name}>
          {(p) => <input {...p} className={inputClass} value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" />}
        </Field>
        <Field label="Type" error={errors.kind}>
          {(p) => (
            <select {...p} className={inputClass} value={kind} onChange={(e) => setKind(e.target.value as "webhook" | "telegram")}>
              <option value="webhook">Webhook</option>
              <option value="telegram">Telegram</option>
            </select>
          )}
        </Field>
        <Field label="Cluster" error={errors.clusterId} hint="Events of one cluster, or of all">
          {(p) => (
            <select {...p} className={inputClass} value={clusterId} onChange={(e) => setClusterId(e.target.value)}>
              <option value="">All clusters</option>
              {clusters.data?.map((c) => (
                <option key={c.id} value={c.id}>
                  {c.name}
                </option>
              ))}
            </select>
          )}
        </Field>
        <label className="flex items-center gap-2 self-end pb-2 text-sm text-slate-700">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} /> Enabled
        </label>
        {kind === "webhook" ? (
          <>
            <Field label="URL" error={errors.url} hint="An http:// or https:// address that receives a JSON POST">
              {(p) => <input {...p} className={inputClass} value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://example.com/hooks/routeboard" autoComplete="off" />}
            </Field>
            <Field label="Secret" error={errors.secret} hint="Signs each body: X-Routeboard-Signature: sha256=HMAC(secret, body)">
              {(p) => (
                <div className="flex gap-2">
                  <input {...p} className={`${inputClass} min-w-0 flex-1`} value={secret} onChange={(e) => setSecret(e.target.value)} autoComplete="off" />
                  <button type="button" className={secondaryButtonClass} onClick={() => setSecret(randomSecret())}>
                    Generate
                  </button>
                </div>
              )}
            </Field>
          </>
        ) : (
          <>
            <Field label="Bot token" error={errors.botToken} hint="From @BotFather, e.g. 123456789:AAE…">
              {(p) => <input {...p} className={inputClass} value={botToken} onChange={(e) => setBotToken(e.target.value)} autoComplete="off" />}
            </Field>
            <Field label="Chat id" error={errors.chatId} hint="A number such as -1001234567890, or @channelname">
              {(p) => <input {...p} className={inputClass} value={chatId} onChange={(e) => setChatId(e.target.value)} autoComplete="off" />}
            </Field>
          </>
        )}
        <fieldset className="sm:col-span-2" aria-describedby={errors.events ? "alert-events-error" : undefined}>
          <legend className="mb-1 text-sm font-medium text-slate-700">Events</legend>
          <div className="grid grid-cols-1 gap-1 sm:grid-cols-2">
            {ALERT_EVENT_TYPES.map((e) => (
              <label key={e} className="flex items-center gap-2 text-sm text-slate-700">
                <input type="checkbox" checked={events.includes(e)} onChange={() => toggle(e)} /> {ALERT_EVENT_LABELS[e]}
              </label>
            ))}
          </div>
          {errors.events && (
            <p id="alert-events-error" role="alert" className="mt-1 text-sm text-red-600">
              {errors.events}
            </p>
          )}
        </fieldset>
        <FormFooter error={general} pending={save.isPending} submitLabel={target ? "Save" : "Add target"} onCancel={onClose} wide />
      </form>
    </Dialog>
  );
}
