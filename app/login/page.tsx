"use client";
import { Suspense, useEffect } from "react";
import { useQuery } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { AuthCard } from "@/components/auth/AuthCard";
import { AuthForm, useNextPath } from "@/components/auth/AuthForm";
import { useTRPC } from "@/lib/trpc";

export default function LoginPage() {
  return (
    <AuthCard title="Log in" subtitle="Operators only.">
      <Suspense>
        <Redirects />
        <AuthForm mode="login" />
      </Suspense>
    </AuthCard>
  );
}

/** Already logged in (or just now): on to `?next=`, the same place the form sends to. */
function Redirects() {
  const trpc = useTRPC();
  const router = useRouter();
  const nextPath = useNextPath();
  const status = useQuery(trpc.auth.status.queryOptions());
  useEffect(() => {
    if (status.data?.needsSetup) router.replace("/setup");
    else if (status.data?.operator) router.replace(nextPath);
  }, [status.data, router, nextPath]);
  return null;
}
