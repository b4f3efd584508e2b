"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useLinkOrigin, useOperator } from "@/components/AppShell";
import { CopyableCode } from "@/components/ui/CopyButton";
import { ConfirmDialog, Dialog, DialogActions } from "@/components/ui/Dialog";
import { Field, buttonClass, inputClass } from "@/components/ui/Field";
import { API_SCOPES, API_SCOPE_TEXT, API_TOKEN_DEFAULT_DAYS, type ApiScope } from "@/core/api-tokens";
import { errorMessage, formErrors } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { FormAlert } from "@/components/ui/FormAlert";

const EXPIRY_CHOICES = [
  { value: "30", label: "30 days" },
  { value: String(API_TOKEN_DEFAULT_DAYS), label: `${API_TOKEN_DEFAULT_DAYS} days (recommended)` },
  { value: "365", label: "1 year" },
  { value: "date", label: "On a date…" },
  { value: "never", label: "Never" },
] as const;

function day(d: Date | null): string {
  return d ? d.toLocaleDateString("en-GB", { year: "numeric", month: "short", day: "2-digit" }) : "—";
}

/** The expiry the form sends: a date (the end of a picked day), null for never. */
function expiryOf(choice: string, date: string): Date | null {
  if (choice === "never") return null;
  if (choice === "date") return new Date(`${date}T23:59:59`);
  return new Date(Date.now() + Number(choice) * 86_400_000);
}

/** Shown once, right after creation: the server keeps only the secret's hash. */
function NewTokenDialog({ created, onClose }: { created: { name: string; token: string }; onClose: () => void }) {
  const { origin } = useLinkOrigin();
  return (
    <Dialog title={`API token ${created.name}`} description="Copy it now: it is shown only this once. Routeboard keeps only its hash." onClose={onClose}>
      <CopyableCode text={created.token} testId="new-api-token" label="Copy token" />
      <p className="mt-4 text-sm text-slate-600">Send it as a header with every call to the API:</p>
      <CopyableCode tone="block" testId="api-token-example" label="Copy" text={`curl -s ${origin}/api/trpc/clusters.list \\\n  -H "Authorization: Bearer ${created.token}"`} />
      <DialogActions>
        <button type="button" className={buttonClass} onClick={onClose}>
          Done
        </button>
      </DialogActions>
    </Dialog>
  );
}

/** API tokens for shops and bots: the owner and admins create them with scopes and an expiry, and revoke them. */
export function ApiTokensPage() {
  const trpc = useTRPC();
  const me = useOperator();
  const queryClient = useQueryClient();
  const allowed = me.role !== "viewer";
  const tokens = useQuery(trpc.apiTokens.list.queryOptions(undefined, { enabled: allowed }));
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<ApiScope[]>(["read"]);
  const [expiry, setExpiry] = useState<string>(String(API_TOKEN_DEFAULT_DAYS));
  const [date, setDate] = useState("");
  const [created, setCreated] = useState<{ name: string; token: string } | null>(null);
  const [missingDate, setMissingDate] = useState(false);
  const [revoking, setRevoking] = useState<{ id: string; name: string } | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.apiTokens.list.queryKey() });
  const create = useMutation(
    trpc.apiTokens.create.mutationOptions({
      onSuccess: async (r) => {
        setCreated({ name: r.name, token: r.token });
        setName("");
        await refresh();
      },
    }),
  );
  const revoke = useMutation(
    trpc.apiTokens.revoke.mutationOptions({
      onSuccess: async () => {
        setRevoking(null);
        await refresh();
      },
    }),
  );
  if (!allowed) return <main className="mx-auto max-w-4xl p-4 sm:p-6 text-slate-600">Only the owner and admins manage API tokens.</main>;
  const { errors, general } = formErrors(create.error, missingDate ? { expiresAt: "Pick the day it expires" } : {});
  return (
    <main className="mx-auto max-w-5xl p-4 sm:p-6">
      <h1 className="mb-1 text-2xl font-semibold">API tokens</h1>
      <p className="mb-5 text-sm text-slate-500">
        For shops and bots: send <code className="rounded bg-slate-100 px-1">Authorization: Bearer &lt;token&gt;</code> to <code className="rounded bg-slate-100 px-1">/api/trpc</code>. A token does
        only what its scopes allow, never more than the person who created it, and never manages the team or tokens. What it changes is in the audit log as{" "}
        <code className="rounded bg-slate-100 px-1">token:&lt;name&gt;</code>.
      </p>
      {tokens.error && (
        <p role="alert" className="text-red-700">
          {errorMessage(tokens.error)}
        </p>
      )}
      <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white shadow-sm">
        <table className="table-cards w-full text-sm">
          <thead className="bg-slate-50 text-left text-xs uppercase tracking-wide text-slate-500">
            <tr>
              <th className="px-4 py-2 font-medium">Name</th>
              <th className="px-3 py-2 font-medium">Scopes</th>
              <th className="px-3 py-2 font-medium">Created by</th>
              <th className="px-3 py-2 font-medium">Created</th>
              <th className="px-3 py-2 font-medium">Expires</th>
              <th className="px-3 py-2 font-medium">Last used</th>
              <th className="px-4 py-2" />
            </tr>
          </thead>
          <tbody>
            {tokens.data?.length === 0 && (
              <tr>
                <td colSpan={7} className="px-4 py-4 text-slate-500">
                  No API tokens yet.
                </td>
              </tr>
            )}
            {tokens.data?.map((t) => (
              <tr key={t.id} className={`border-t border-slate-100 ${t.status === "active" ? "" : "text-slate-400"}`}>
                <td className="px-4 py-2.5 font-medium">
                  {t.name} <span className="ml-1 font-mono text-xs text-slate-400">rbt_{t.id}_…</span>
                </td>
                <td data-label="Scopes" className="px-3 py-2.5">
                  <div className="flex flex-wrap gap-1">
                    {t.scopes.map((s) => (
                      <span key={s} className="rounded bg-slate-100 px-1.5 py-0.5 font-mono text-xs text-slate-700">
                        {s}
                      </span>
                    ))}
                  </div>
                </td>
                <td data-label="Created by" className="px-3 py-2.5">{t.createdBy}</td>
                <td data-label="Created" className="px-3 py-2.5">{day(t.createdAt)}</td>
                <td data-label="Expires" className="px-3 py-2.5">{t.expiresAt ? day(t.expiresAt) : "Never"}</td>
                <td data-label="Last used" className="px-3 py-2.5">{t.lastUsedAt ? day(t.lastUsedAt) : "Never used"}</td>
                <td className="px-4 py-2.5 text-right">
                  {t.status === "active" ? (
                    <button type="button" className="rounded px-2 py-1 text-xs font-medium text-red-700 hover:bg-red-50" aria-label={`Revoke ${t.name}`} onClick={() => setRevoking(t)}>
                      Revoke
                    </button>
                  ) : (
                    <span className="text-xs uppercase tracking-wide">{t.status === "revoked" ? `Revoked ${day(t.revokedAt)}` : "Expired"}</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>

      <form
        className="mt-8 grid grid-cols-1 gap-4 rounded-lg border border-slate-200 bg-white p-5 shadow-sm sm:grid-cols-2"
        onSubmit={(e) => {
          e.preventDefault();
          // An empty date field would be an invalid Date, which cannot even be sent.
          setMissingDate(expiry === "date" && !date);
          if (expiry === "date" && !date) return;
          create.mutate({ name, scopes, expiresAt: expiryOf(expiry, date) });
        }}
      >
        <h2 className="text-lg font-semibold sm:col-span-2">Create a token</h2>
        <Field label="Name" error={errors.name} hint="How the audit log names it, e.g. shop-bot">
          {(p) => <input {...p} className={inputClass} value={name} autoComplete="off" onChange={(e) => setName(e.target.value)} />}
        </Field>
        <Field label="Expires" error={errors.expiresAt} hint="A token that leaks stops working on its own">
          {(p) => (
            <div className="flex gap-2">
              <select {...p} className={`${inputClass} flex-1`} value={expiry} onChange={(e) => setExpiry(e.target.value)}>
                {EXPIRY_CHOICES.map((c) => (
                  <option key={c.value} value={c.value}>
                    {c.label}
                  </option>
                ))}
              </select>
              {expiry === "date" && <input type="date" aria-label="Expiry date" className={inputClass} value={date} onChange={(e) => setDate(e.target.value)} />}
            </div>
          )}
        </Field>
        <fieldset className="sm:col-span-2" aria-describedby={errors.scopes ? "scopes-error" : undefined}>
          <legend className="text-sm font-medium text-slate-700">Scopes</legend>
          <div className="mt-1 flex flex-col gap-1.5">
            {API_SCOPES.map((s) => (
              <label key={s} className="flex items-start gap-2 text-sm">
                <input
                  type="checkbox"
                  className="mt-0.5"
                  checked={scopes.includes(s)}
                  onChange={(e) => setScopes((cur) => (e.target.checked ? [...cur, s] : cur.filter((x) => x !== s)))}
                />
                <span>
                  <code className="font-mono text-xs font-semibold">{s}</code> — {API_SCOPE_TEXT[s]}
                </span>
              </label>
            ))}
          </div>
          {errors.scopes && (
            <p id="scopes-error" role="alert" className="mt-1 text-sm text-red-600">
              {errors.scopes}
            </p>
          )}
        </fieldset>
        {general && <FormAlert className="sm:col-span-2">{general}</FormAlert>}
        <div className="sm:col-span-2">
          <button type="submit" className={buttonClass} disabled={create.isPending}>
            {create.isPending ? "Creating…" : "Create token"}
          </button>
        </div>
      </form>

      {created && <NewTokenDialog created={created} onClose={() => setCreated(null)} />}
      {revoking && (
        <ConfirmDialog
          title={`Revoke ${revoking.name}?`}
          confirmLabel="Revoke"
          pending={revoke.isPending}
          error={revoke.error ? errorMessage(revoke.error) : undefined}
          onConfirm={() => revoke.mutate({ tokenId: revoking.id })}
          onClose={() => setRevoking(null)}
        >
          Every request with it is refused from now on. This cannot be undone.
        </ConfirmDialog>
      )}
    </main>
  );
}
