"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import QRCode from "qrcode";
import { useEffect, useState } from "react";
import { useTRPC } from "@/lib/trpc";
import { errorMessage, formErrors } from "@/lib/errors";
import { Dialog } from "@/components/ui/Dialog";
import { Field, buttonClass, inputClass, secondaryButtonClass } from "@/components/ui/Field";
import { CopyButton } from "@/components/ui/CopyButton";
import { FormAlert } from "@/components/ui/FormAlert";

/**
 * An operator's own second factor: turn it on (a QR code and the secret as text, confirmed by
 * a code before it takes effect, then ten recovery codes shown once), see it, or turn it off
 * with a code. `onFinished` runs when the operator has put the recovery codes away.
 */
export function TwoFactorPanel({ onFinished }: { onFinished?: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const status = useQuery(trpc.twoFactor.status.queryOptions());
  const [recoveryCodes, setRecoveryCodes] = useState<string[] | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.twoFactor.status.queryKey() });

  if (recoveryCodes) {
    return (
      <div className="space-y-3 text-sm text-slate-700">
        <p role="status" className="rounded-md bg-emerald-50 px-3 py-2 text-emerald-900">
          Two-factor authentication is on.
        </p>
        <p>
          Keep these recovery codes somewhere safe (a password manager): each logs you in once if you lose your phone. They are not shown again.
        </p>
        <ul data-testid="recovery-codes" aria-label="Recovery codes" className="grid grid-cols-2 gap-1 rounded-md bg-slate-50 p-3 font-mono">
          {recoveryCodes.map((c) => (
            <li key={c}>{c}</li>
          ))}
        </ul>
        <div className="flex items-center gap-2">
          <CopyButton text={recoveryCodes.join("\n")} label="Copy recovery codes" />
          <button
            type="button"
            className={`${buttonClass} ml-auto`}
            onClick={() => {
              setRecoveryCodes(null);
              onFinished?.();
            }}
          >
            I have saved them
          </button>
        </div>
      </div>
    );
  }
  if (status.error) return <p role="alert" className="text-red-700">{errorMessage(status.error)}</p>;
  if (!status.data) return <p className="text-sm text-slate-500">Loading…</p>;
  if (status.data.enabled) return <EnabledState status={status.data} onChanged={refresh} />;
  return (
    <Enrolment
      onEnabled={async (codes) => {
        setRecoveryCodes(codes);
        await refresh();
      }}
    />
  );
}

function Enrolment({ onEnabled }: { onEnabled: (codes: string[]) => Promise<void> }) {
  const trpc = useTRPC();
  const [code, setCode] = useState("");
  const [qr, setQr] = useState<string | null>(null);
  const begin = useMutation(trpc.twoFactor.begin.mutationOptions());
  const confirm = useMutation(trpc.twoFactor.confirm.mutationOptions({ onSuccess: (r) => onEnabled(r.recoveryCodes) }));
  const uri = begin.data?.uri;
  useEffect(() => {
    if (!uri) return;
    let live = true;
    void QRCode.toDataURL(uri, { margin: 1, width: 220, errorCorrectionLevel: "M" }).then((d) => live && setQr(d));
    return () => {
      live = false;
    };
  }, [uri]);
  const { errors, general } = formErrors(confirm.error);

  if (!begin.data) {
    return (
      <div className="space-y-3 text-sm text-slate-700">
        <p>Two-factor authentication is off. With it on, logging in also asks for a code from an authenticator app on your phone (any TOTP app).</p>
        {begin.error && <p role="alert" className="text-red-700">{errorMessage(begin.error)}</p>}
        <button type="button" className={buttonClass} disabled={begin.isPending} onClick={() => begin.mutate()}>
          Set up two-factor authentication
        </button>
      </div>
    );
  }
  return (
    <form
      className="space-y-3 text-sm text-slate-700"
      onSubmit={(e) => {
        e.preventDefault();
        confirm.mutate({ code });
      }}
    >
      <p>1. Scan this QR code with your authenticator app, or type the secret into it.</p>
      <div className="flex flex-wrap items-center gap-4">
        {qr ? (
          <img src={qr} alt="QR code to enrol your authenticator app" width={220} height={220} className="rounded-md ring-1 ring-slate-200" />
        ) : (
          <div className="flex h-[220px] w-[220px] items-center justify-center rounded-md bg-slate-100 text-slate-500">Drawing…</div>
        )}
        <div className="min-w-0">
          <div className="text-xs text-slate-500">Secret</div>
          <code data-testid="totp-secret" className="break-all font-mono text-sm">
            {begin.data.secret}
          </code>
        </div>
      </div>
      <p>2. Type the code the app shows to turn it on.</p>
      <Field label="Code from your app" error={errors.code}>
        {(p) => <input {...p} className={inputClass} inputMode="numeric" autoComplete="one-time-code" value={code} onChange={(e) => setCode(e.target.value)} required />}
      </Field>
      {general && <FormAlert>{general}</FormAlert>}
      <button type="submit" className={buttonClass} disabled={confirm.isPending}>
        {confirm.isPending ? "Checking…" : "Turn on"}
      </button>
    </form>
  );
}

function EnabledState({ status, onChanged }: { status: { enabledAt: Date | null; recoveryCodesLeft: number; required: boolean }; onChanged: () => Promise<unknown> }) {
  const trpc = useTRPC();
  const [code, setCode] = useState("");
  const disable = useMutation(trpc.twoFactor.disable.mutationOptions({ onSuccess: onChanged }));
  const { errors, general } = formErrors(disable.error);
  return (
    <div className="space-y-3 text-sm text-slate-700">
      <p role="status" data-testid="two-factor-on">
        Two-factor authentication is on{status.enabledAt ? ` since ${status.enabledAt.toLocaleDateString()}` : ""}. {status.recoveryCodesLeft} recovery codes left.
      </p>
      {status.required ? (
        <p className="text-slate-500">The owner requires it for every operator: it cannot be turned off.</p>
      ) : (
        <form
          className="space-y-3"
          onSubmit={(e) => {
            e.preventDefault();
            disable.mutate({ code });
          }}
        >
          <Field label="Code to turn it off" error={errors.code} hint="A code from your app, or a recovery code">
            {(p) => <input {...p} className={inputClass} autoComplete="one-time-code" value={code} onChange={(e) => setCode(e.target.value)} required />}
          </Field>
          {general && <FormAlert>{general}</FormAlert>}
          <button type="submit" className={secondaryButtonClass} disabled={disable.isPending}>
            Turn off two-factor authentication
          </button>
        </form>
      )}
    </div>
  );
}

/** The panel in a dialog, from the header's "Two-factor" button. */
export function TwoFactorDialog({ onClose }: { onClose: () => void }) {
  return (
    <Dialog title="Two-factor authentication" onClose={onClose}>
      <TwoFactorPanel onFinished={onClose} />
    </Dialog>
  );
}
