"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useOperator } from "@/components/AppShell";
import { ConfirmDialog, Dialog, FormFooter } from "@/components/ui/Dialog";
import { Field, buttonClass, inputClass, secondaryButtonClass } from "@/components/ui/Field";
import { ALERT_EVENT_LABELS, ALERT_EVENT_TYPES, type AlertEventType } from "@/core/alert-events";
import { errorMessage, formErrors } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";

type Target = {
  id: string;
  name: string;
  kind: "webhook" | "telegram";
  clusterId: string | null;
  clusterName: string | null;
  url: string | null;
  secret: string | null;
  botToken: string | null;
  chatId: string | null;
  events: AlertEventType[];
  enabled: boolean;
  state: "ok" | "retrying" | "failing" | "new";
  lastError: string | null;
  lastFailureAt: Date | null;
  lastDeliveryAt: Date | null;
  pending: number;
  recent: Array<{ id: number; type: string; state: string; attempts: number; lastError: string | null; occurredAt: Date; deliveredAt: Date | null }>;
};

const STATE_STYLE: Record<Target["state"], { label: string; cls: string }> = {
  ok: { label: "ok", cls: "bg-green-100 text-green-800 ring-green-600/20" },
  retrying: { label: "retrying", cls: "bg-amber-50 text-amber-800 ring-amber-600/20" },
  failing: { label: "failing", cls: "bg-red-50 text-red-800 ring-red-600/20" },
  new: { label: "nothing sent yet", cls: "bg-slate-100 text-slate-700 ring-slate-500/20" },
};

const when = (d: Date | null) => (d ? new Date(d).toLocaleString() : "—");

function randomSecret(): string {
  const bytes = new Uint8Array(24);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Create or edit one target. Secrets of an existing target show as the server's mask; sending
 * the mask back (or nothing) keeps the stored value, so they stay unless replaced.
 */
function TargetDialog({ target, onClose }: { target: Target | null; onClose: () => void }) {
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
  const [events, setEvents] = useState<AlertEventType[]>(target?.events ?? ["server.down", "server.up", "route.panic", "route.recovered"]);
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
        className="grid gap-4 sm:grid-cols-2"
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
          <div className="grid gap-1 sm:grid-cols-2">
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

/** Admins' page: where alerts go, whether they arrive, and a test button per target. */
export function AlertsPage() {
  const trpc = useTRPC();
  const me = useOperator();
  const queryClient = useQueryClient();
  const allowed = me.role !== "viewer";
  const list = useQuery({ ...trpc.alerts.list.queryOptions(undefined, { enabled: allowed }), refetchInterval: 2000 });
  const [editing, setEditing] = useState<Target | "new" | null>(null);
  const [removing, setRemoving] = useState<Target | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.alerts.list.queryKey() });
  const sendTest = useMutation(trpc.alerts.sendTest.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(
    trpc.alerts.delete.mutationOptions({
      onSuccess: async () => {
        setRemoving(null);
        await refresh();
      },
    }),
  );
  if (!allowed) return <main className="mx-auto max-w-3xl p-4 sm:p-6 text-slate-600">Only admins and the owner manage alerts.</main>;
  const targets = (list.data ?? []) as Target[];
  return (
    <main className="mx-auto max-w-5xl p-4 sm:p-6">
      <div className="mb-5 flex items-end justify-between gap-4">
        <div>
          <h1 className="mb-1 text-2xl font-semibold">Alerts</h1>
          <p className="text-sm text-slate-500">Webhooks and Telegram chats told when servers go down or come back, routes panic, subscribers run out, or an agent rejects its config.</p>
        </div>
        <button type="button" className={buttonClass} onClick={() => setEditing("new")}>
          Add target
        </button>
      </div>
      {list.error && (
        <p role="alert" className="text-red-700">
          {errorMessage(list.error)}
        </p>
      )}
      {sendTest.error && (
        <p role="alert" className="mb-3 rounded-md bg-red-50 px-3 py-2 text-sm text-red-700">
          {errorMessage(sendTest.error)}
        </p>
      )}
      {list.data && targets.length === 0 && <p className="rounded-lg border border-dashed border-slate-300 bg-white p-6 text-sm text-slate-500">No alert targets yet.</p>}
      <ul className="flex flex-col gap-3">
        {targets.map((t) => {
          const style = STATE_STYLE[t.state];
          return (
            <li key={t.id} aria-label={`Alert target ${t.name}`} className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
              <div className="flex flex-wrap items-center gap-2">
                <span className="font-medium">{t.name}</span>
                <span className="rounded bg-slate-100 px-1.5 py-0.5 text-xs uppercase tracking-wide text-slate-600">{t.kind}</span>
                <span data-testid="target-state" className={`inline-flex items-center rounded-full px-2 py-0.5 text-xs font-medium ring-1 ring-inset ${style.cls}`}>
                  {style.label}
                </span>
                {!t.enabled && <span className="text-xs text-slate-500">disabled</span>}
                <span className="ml-auto flex gap-1">
                  <button type="button" className={secondaryButtonClass} disabled={sendTest.isPending || !t.enabled} onClick={() => sendTest.mutate({ targetId: t.id })} aria-label={`Send test to ${t.name}`}>
                    Send test
                  </button>
                  <button type="button" className={secondaryButtonClass} onClick={() => setEditing(t)} aria-label={`Edit ${t.name}`}>
                    Edit
                  </button>
                  <button type="button" className="rounded px-2 py-1 text-sm font-medium text-red-700 hover:bg-red-50" onClick={() => setRemoving(t)} aria-label={`Delete ${t.name}`}>
                    Delete
                  </button>
                </span>
              </div>
              <p className="mt-1 break-all text-sm text-slate-600">
                {t.kind === "webhook" ? t.url : `chat ${t.chatId}`} · {t.clusterName ?? "all clusters"} · {t.events.map((e) => ALERT_EVENT_LABELS[e]).join(", ")}
              </p>
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
                {t.lastError && (t.state === "failing" || t.state === "retrying") && (
                  <div className="sm:col-span-3 text-red-700">
                    <dt className="inline">Last error ({when(t.lastFailureAt)}): </dt>
                    <dd className="inline" data-testid="last-error">
                      {t.lastError}
                    </dd>
                  </div>
                )}
              </dl>
              {t.recent.length > 0 && (
                <table className="table-cards mt-3 w-full text-left text-xs">
                  <caption className="sr-only">Recent deliveries to {t.name}</caption>
                  <thead className="text-slate-400">
                    <tr>
                      <th className="py-1 font-medium">Event</th>
                      <th className="py-1 font-medium">Occurred</th>
                      <th className="py-1 font-medium">Delivery</th>
                      <th className="py-1 font-medium">Attempts</th>
                    </tr>
                  </thead>
                  <tbody>
                    {t.recent.map((d) => (
                      <tr key={d.id} className="border-t border-slate-100 text-slate-600">
                        <td className="py-1">{ALERT_EVENT_LABELS[d.type as AlertEventType | "test"] ?? d.type}</td>
                        <td data-label="Occurred" className="py-1">{when(d.occurredAt)}</td>
                        <td data-label="Delivery" className="py-1">{d.state === "delivered" ? `delivered ${when(d.deliveredAt)}` : d.state === "failed" ? `failed: ${d.lastError ?? ""}` : d.lastError ? `retrying: ${d.lastError}` : "pending"}</td>
                        <td data-label="Attempts" className="py-1">{d.attempts}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </li>
          );
        })}
      </ul>
      {editing && <TargetDialog target={editing === "new" ? null : editing} onClose={() => setEditing(null)} />}
      {removing && (
        <ConfirmDialog
          title={`Delete ${removing.name}?`}
          confirmLabel="Delete"
          pending={remove.isPending}
          error={remove.error ? errorMessage(remove.error) : undefined}
          onConfirm={() => remove.mutate({ targetId: removing.id })}
          onClose={() => setRemoving(null)}
        >
          Alerts stop going there; its pending deliveries are dropped.
        </ConfirmDialog>
      )}
    </main>
  );
}
