"use client";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { Dialog, FormFooter } from "@/components/ui/Dialog";
import { Field, inputClass } from "@/components/ui/Field";
import { formErrors } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";

/** An operator changes their own password; their other sessions end, this one stays. */
export function ChangePasswordDialog({ onClose, onChanged }: { onClose: () => void; onChanged: () => void }) {
  const trpc = useTRPC();
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [confirm, setConfirm] = useState("");
  const [mismatch, setMismatch] = useState(false);
  const change = useMutation(trpc.auth.changePassword.mutationOptions({ onSuccess: onChanged }));
  const { errors, general } = formErrors(change.error, mismatch ? { confirm: "The two passwords differ" } : {});
  return (
    <Dialog title="Change your password" description="You stay logged in here; every other session of yours is logged out." onClose={onClose}>
      <form
        className="flex flex-col gap-4"
        onSubmit={(e) => {
          e.preventDefault();
          setMismatch(next !== confirm);
          if (next !== confirm) return;
          change.mutate({ currentPassword: current, newPassword: next });
        }}
      >
        <Field label="Current password" error={errors.currentPassword}>
          {(p) => <input {...p} type="password" autoComplete="current-password" className={inputClass} value={current} onChange={(e) => setCurrent(e.target.value)} required />}
        </Field>
        <Field label="New password" error={errors.newPassword} hint="At least 8 characters; a phrase of unrelated words is best">
          {(p) => <input {...p} type="password" autoComplete="new-password" className={inputClass} value={next} onChange={(e) => setNext(e.target.value)} required />}
        </Field>
        <Field label="Repeat new password" error={errors.confirm}>
          {(p) => <input {...p} type="password" autoComplete="new-password" className={inputClass} value={confirm} onChange={(e) => setConfirm(e.target.value)} required />}
        </Field>
        <FormFooter error={general} pending={change.isPending} submitLabel="Change password" onCancel={onClose} />
      </form>
    </Dialog>
  );
}
