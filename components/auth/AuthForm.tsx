"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRouter, useSearchParams } from "next/navigation";
import { useState } from "react";
import { useTRPC } from "@/lib/trpc";
import { formErrors } from "@/lib/errors";
import { Field, buttonClass, inputClass } from "@/components/ui/Field";
import { safeNextPath } from "@/core/validation";

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
  const onSuccess = async () => {
    await queryClient.invalidateQueries();
    router.replace(nextPath);
  };
  const login = useMutation(trpc.auth.login.mutationOptions({ onSuccess }));
  const setup = useMutation(trpc.auth.setup.mutationOptions({ onSuccess }));
  const mutation = mode === "login" ? login : setup;
  const { errors: fields, general } = formErrors(mutation.error);
  const formError = localError ?? general;

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
      {formError && (
        <p role="alert" className="rounded-md bg-red-50 px-3 py-2 text-sm text-red-700">
          {formError}
        </p>
      )}
      <button type="submit" className={buttonClass} disabled={mutation.isPending}>
        {mutation.isPending ? "Please wait…" : mode === "login" ? "Log in" : "Create owner account"}
      </button>
    </form>
  );
}
