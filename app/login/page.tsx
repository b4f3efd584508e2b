"use client";
import { Suspense, useEffect } from "react";
import { useQuery } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { AuthCard } from "@/components/auth/AuthCard";
import { AuthForm } from "@/components/auth/AuthForm";
import { useTRPC } from "@/lib/trpc";

export default function LoginPage() {
  const trpc = useTRPC();
  const router = useRouter();
  const status = useQuery(trpc.auth.status.queryOptions());
  useEffect(() => {
    if (status.data?.needsSetup) router.replace("/setup");
    else if (status.data?.operator) router.replace("/clusters");
  }, [status.data, router]);
  return (
    <AuthCard title="Log in" subtitle="Operators only.">
      <Suspense>
        <AuthForm mode="login" />
      </Suspense>
    </AuthCard>
  );
}
