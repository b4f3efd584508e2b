"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useOperator } from "@/components/AppShell";
import { ConfirmDialog, Dialog, FormFooter } from "@/components/ui/Dialog";
import { Field, buttonClass, inputClass } from "@/components/ui/Field";
import { errorMessage, formErrors } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { FormAlert } from "@/components/ui/FormAlert";

const ROLE_TEXT = {
  owner: "Owner: everything, and manages the team",
  admin: "Admin: changes clusters, servers, routes and subscribers",
  viewer: "Viewer: sees everything, changes nothing",
} as const;

type Role = keyof typeof ROLE_TEXT;

/** The owner sets a new password for an operator who lost theirs; their sessions end. */
function ResetPasswordDialog({ operator, onClose }: { operator: { id: string; username: string }; onClose: () => void }) {
  const trpc = useTRPC();
  const [password, setPassword] = useState("");
  const reset = useMutation(trpc.operators.resetPassword.mutationOptions({ onSuccess: onClose }));
  const { errors, general } = formErrors(reset.error);
  return (
    <Dialog title={`Reset the password of ${operator.username}`} description="They are logged out everywhere and log in again with the new password." onClose={onClose}>
      <form
        className="flex flex-col gap-4"
        onSubmit={(e) => {
          e.preventDefault();
          reset.mutate({ operatorId: operator.id, password });
        }}
      >
        <Field label="New password" error={errors.password} hint="At least 8 characters; a phrase of unrelated words is best">
          {(p) => <input {...p} type="password" autoComplete="new-password" className={inputClass} value={password} onChange={(e) => setPassword(e.target.value)} required />}
        </Field>
        <FormFooter error={general} pending={reset.isPending} submitLabel="Reset password" onCancel={onClose} />
      </form>
    </Dialog>
  );
}

/** The owner's page: who can log in, with which role. */
export function TeamPage() {
  const trpc = useTRPC();
  const me = useOperator();
  const queryClient = useQueryClient();
  const team = useQuery(trpc.operators.list.queryOptions(undefined, { enabled: me.role === "owner" }));
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [role, setRole] = useState<"admin" | "viewer">("viewer");
  const [removing, setRemoving] = useState<{ id: string; username: string } | null>(null);
  const [resetting, setResetting] = useState<{ id: string; username: string } | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.operators.list.queryKey() });
  const create = useMutation(
    trpc.operators.create.mutationOptions({
      onSuccess: async () => {
        setUsername("");
        setPassword("");
        await refresh();
      },
    }),
  );
  const remove = useMutation(
    trpc.operators.delete.mutationOptions({
      onSuccess: async () => {
        setRemoving(null);
        await refresh();
      },
    }),
  );
  const changeRole = useMutation(trpc.operators.setRole.mutationOptions({ onSettled: refresh }));
  const [resettingTwoFactor, setResettingTwoFactor] = useState<{ id: string; username: string } | null>(null);
  const resetTwoFactor = useMutation(
    trpc.operators.resetTwoFactor.mutationOptions({
      onSuccess: async () => {
        setResettingTwoFactor(null);
        await refresh();
      },
    }),
  );
  if (me.role !== "owner") {
    return <main className="mx-auto max-w-3xl p-6 text-slate-600">Only the owner manages the team.</main>;
  }
  const { errors: fields, general: formError } = formErrors(create.error);
  return (
    <main className="mx-auto max-w-3xl p-4 sm:p-6">
      <h1 className="mb-1 text-2xl font-semibold">Team</h1>
      <p className="mb-5 text-sm text-slate-500">Who can log in to this Routeboard, and what they may do.</p>
      {team.error && <p role="alert" className="text-red-700">{errorMessage(team.error)}</p>}
      <table className="table-cards w-full overflow-hidden rounded-lg border border-slate-200 bg-white text-sm shadow-sm">
        <thead className="bg-slate-50 text-left text-xs uppercase tracking-wide text-slate-500">
          <tr>
            <th className="px-4 py-2 font-medium">Operator</th>
            <th className="px-3 py-2 font-medium">Role</th>
            <th className="px-3 py-2 font-medium">Two-factor</th>
            <th className="px-4 py-2" />
          </tr>
        </thead>
        <tbody>
          {team.data?.map((op) => (
            <tr key={op.id} className="border-t border-slate-100">
              <td className="px-4 py-2.5 font-medium">
                {op.username}
                {op.username === me.username && <span className="ml-2 text-xs text-slate-500">(you)</span>}
              </td>
              <td data-label="Role" className="px-3 py-2.5 text-slate-600">{ROLE_TEXT[op.role]}</td>
              <td data-label="Two-factor" className="px-3 py-2.5 text-slate-600" data-testid={`two-factor-of-${op.username}`}>
                {op.twoFactor ? "On" : "Off"}
              </td>
              <td className="flex items-center justify-end gap-1 px-4 py-2.5">
                <select
                  aria-label={`Role of ${op.username}`}
                  className="rounded border border-slate-300 bg-white px-1.5 py-1 text-xs"
                  value={op.role}
                  disabled={changeRole.isPending}
                  onChange={(e) => changeRole.mutate({ operatorId: op.id, role: e.target.value as Role })}
                >
                  <option value="owner">Owner</option>
                  <option value="admin">Admin</option>
                  <option value="viewer">Viewer</option>
                </select>
                <button type="button" className="rounded px-2 py-1 text-xs font-medium text-slate-700 hover:bg-slate-100" aria-label={`Reset password of ${op.username}`} onClick={() => setResetting(op)}>
                  Reset password
                </button>
                {op.twoFactor && op.username !== me.username && (
                  <button
                    type="button"
                    className="rounded px-2 py-1 text-xs font-medium text-slate-700 hover:bg-slate-100"
                    aria-label={`Reset two-factor of ${op.username}`}
                    onClick={() => setResettingTwoFactor(op)}
                  >
                    Reset two-factor
                  </button>
                )}
                {op.role !== "owner" && (
                  <button type="button" className="rounded px-2 py-1 text-xs font-medium text-red-700 hover:bg-red-50" aria-label={`Remove ${op.username}`} onClick={() => setRemoving(op)}>
                    Remove
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {changeRole.error && <FormAlert className="mt-3">{errorMessage(changeRole.error)}</FormAlert>}

      <RequireTwoFactor />

      <form
        className="mt-8 grid gap-4 rounded-lg border border-slate-200 bg-white p-5 shadow-sm sm:grid-cols-3"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate({ username, password, role });
        }}
      >
        <h2 className="text-lg font-semibold sm:col-span-3">Add an operator</h2>
        <Field label="Username" error={fields.username}>
          {(p) => <input {...p} className={inputClass} value={username} autoComplete="off" onChange={(e) => setUsername(e.target.value)} />}
        </Field>
        <Field label="Password" error={fields.password} hint="At least 8 characters">
          {(p) => <input {...p} type="password" autoComplete="new-password" className={inputClass} value={password} onChange={(e) => setPassword(e.target.value)} />}
        </Field>
        <Field label="Role">
          {(p) => (
            <select {...p} className={inputClass} value={role} onChange={(e) => setRole(e.target.value as "admin" | "viewer")}>
              <option value="viewer">Viewer (read-only)</option>
              <option value="admin">Admin</option>
            </select>
          )}
        </Field>
        {formError && <FormAlert className="sm:col-span-3">{formError}</FormAlert>}
        <div className="sm:col-span-3">
          <button type="submit" className={buttonClass} disabled={create.isPending}>
            {create.isPending ? "Adding…" : "Add operator"}
          </button>
        </div>
      </form>

      {removing && (
        <ConfirmDialog
          title={`Remove ${removing.username}?`}
          confirmLabel="Remove"
          pending={remove.isPending}
          error={remove.error ? errorMessage(remove.error) : undefined}
          onConfirm={() => remove.mutate({ operatorId: removing.id })}
          onClose={() => setRemoving(null)}
        >
          They are logged out at once and can no longer log in.
        </ConfirmDialog>
      )}
      {resetting && <ResetPasswordDialog operator={resetting} onClose={() => setResetting(null)} />}
      {resettingTwoFactor && (
        <ConfirmDialog
          title={`Reset two-factor of ${resettingTwoFactor.username}?`}
          confirmLabel="Reset two-factor"
          pending={resetTwoFactor.isPending}
          error={resetTwoFactor.error ? errorMessage(resetTwoFactor.error) : undefined}
          onConfirm={() => resetTwoFactor.mutate({ operatorId: resettingTwoFactor.id })}
          onClose={() => setResettingTwoFactor(null)}
        >
          Their authenticator app and recovery codes stop working; they log in with their password and set it up again (at once, if it is required).
        </ConfirmDialog>
      )}
    </main>
  );
}

/** The owner's switch: every operator must have a second factor. */
function RequireTwoFactor() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const required = useQuery(trpc.operators.twoFactorRequired.queryOptions());
  const set = useMutation(
    trpc.operators.setTwoFactorRequired.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.operators.twoFactorRequired.queryKey() }),
    }),
  );
  return (
    <section className="mt-6 rounded-lg border border-slate-200 bg-white p-4 text-sm shadow-sm">
      <label className="flex items-center gap-2 font-medium">
        <input
          type="checkbox"
          checked={required.data ?? false}
          disabled={required.isLoading || set.isPending}
          onChange={(e) => set.mutate({ required: e.target.checked })}
        />
        Require two-factor authentication for every operator
      </label>
      <p className="mt-1 text-slate-500">Operators without it are asked to set it up when they log in, and can do nothing else until they have.</p>
      {set.error && <FormAlert className="mt-2">{errorMessage(set.error)}</FormAlert>}
    </section>
  );
}
