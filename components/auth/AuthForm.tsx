"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRouter, useSearchParams } from "next/navigation";
import { useState } from "react";
import { useTRPC } from "@/lib/trpc";
import { formErrors } from "@/lib/errors";
import { Field, buttonClass, inputClass } from "@/components/ui/Field";
import { safeNextPath } from "@/core/validation";
import { FormAlert } from "@/components/ui/FormAlert";

/** Where to go after logging in: `?next=` when it is a path on this dashboard. */
export function useNextPath(): string {
  const params = useSearchParams();
  return safeNextPath(params.get("next")) ?? "/clusters";
}

/** Login and first-run setup share one form; setup asks for the setup code and the password twice. */
export function AuthForm({ mode }: { mode: "login" | "setup" }) {
  const trpc = useTRPC();
  const router = useRouter();
  const nextPath = useNextPath();
  const queryClient = useQueryClient();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [confirm, setConfirm] = useState("");
  const [setupCode, setSetupCode] = useState("");
  const [localError, setLocalError] = useState<string | null>(null);
  /** Set after a right password when the operator has a second factor: the code step comes next. */
  const [challenge, setChallenge] = useState<string | null>(null);
  const onSuccess = async () => {
    await queryClient.invalidateQueries();
    router.replace(nextPath);
  };
  const login = useMutation(
    trpc.auth.login.mutationOptions({
      onSuccess: async (data) => {
        if (data.challenge) setChallenge(data.challenge);
        else await onSuccess();
      },
    }),
  );
  const setup = useMutation(trpc.auth.setup.mutationOptions({ onSuccess }));
  const mutation = mode === "login" ? login : setup;
  const { errors: fields, general } = formErrors(mutation.error);
  const formError = localError ?? general;

  if (challenge) return <CodeStep challenge={challenge} onDone={onSuccess} onRestart={() => setChallenge(null)} />;

  return (
    <form
      className="flex flex-col gap-4"
      onSubmit={(e) => {
        e.preventDefault();
        setLocalError(null);
        if (mode === "setup" && password !== confirm) {
          setLocalError("The two passwords differ");
          return;
        }
        if (mode === "setup") setup.mutate({ username, password, setupCode });
        else login.mutate({ username, password });
      }}
    >
      {mode === "setup" && (
        <Field label="Setup code" error={fields.setupCode} hint="Printed in the server's output when it started; also in setup-code in its data folder">
          {(p) => (
            <input {...p} className={inputClass} autoComplete="one-time-code" spellCheck={false} value={setupCode} onChange={(e) => setSetupCode(e.target.value)} required />
          )}
        </Field>
      )}
      <Field label="Username" error={fields.username}>
        {(p) => (
          <input {...p} className={inputClass} autoComplete="username" value={username} onChange={(e) => setUsername(e.target.value)} required />
        )}
      </Field>
      <Field label="Password" error={fields.password} hint={mode === "setup" ? "At least 8 characters; a phrase of unrelated words is best" : undefined}>
        {(p) => (
          <input
            {...p}
            type="password"
            className={inputClass}
            autoComplete={mode === "login" ? "current-password" : "new-password"}
            value={password}
            onChange={(e) => setPassword(e.target.value)}
            required
          />
        )}
      </Field>
      {mode === "setup" && (
        <Field label="Repeat password">
          {(p) => (
            <input {...p} type="password" className={inputClass} autoComplete="new-password" value={confirm} onChange={(e) => setConfirm(e.target.value)} required />
          )}
        </Field>
      )}
      {formError && <FormAlert>{formError}</FormAlert>}
      <button type="submit" className={buttonClass} disabled={mutation.isPending}>
        {mutation.isPending ? "Please wait…" : mode === "login" ? "Log in" : "Create owner account"}
      </button>
    </form>
  );
}

/** The second step of a login: the code from the operator's app, or one of their recovery codes. */
function CodeStep({ challenge, onDone, onRestart }: { challenge: string; onDone: () => Promise<void>; onRestart: () => void }) {
  const trpc = useTRPC();
  const [code, setCode] = useState("");
  const send = useMutation(trpc.auth.loginCode.mutationOptions({ onSuccess: onDone }));
  const { errors, general } = formErrors(send.error);
  return (
    <form
      className="flex flex-col gap-4"
      onSubmit={(e) => {
        e.preventDefault();
        send.mutate({ challenge, code });
      }}
    >
      <p className="text-sm text-slate-600">Your account has two-factor authentication: enter the code your authenticator app shows now.</p>
      <Field label="Authentication code" error={errors.code} hint="6 digits, or one of your recovery codes (xxxxx-xxxxx)">
        {(p) => (
          <input
            {...p}
            data-autofocus
            autoFocus
            className={inputClass}
            autoComplete="one-time-code"
            spellCheck={false}
            value={code}
            onChange={(e) => setCode(e.target.value)}
            required
          />
        )}
      </Field>
      {general && <FormAlert>{general}</FormAlert>}
      <button type="submit" className={buttonClass} disabled={send.isPending}>
        {send.isPending ? "Please wait…" : "Verify"}
      </button>
      <button type="button" className="text-sm text-slate-500 underline" onClick={onRestart}>
        Start over
      </button>
    </form>
  );
}
