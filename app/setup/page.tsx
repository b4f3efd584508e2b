"use client";
import { Suspense, useEffect } from "react";
import { useQuery } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { AuthCard } from "@/components/auth/AuthCard";
import { AuthForm } from "@/components/auth/AuthForm";
import { useTRPC } from "@/lib/trpc";

export default function SetupPage() {
  const trpc = useTRPC();
  const router = useRouter();
  const status = useQuery(trpc.auth.status.queryOptions());
  useEffect(() => {
    if (status.data && !status.data.needsSetup) router.replace("/login");
  }, [status.data, router]);
  return (
    <AuthCard title="Welcome to Routeboard" subtitle="Create the owner account. You can add admins and viewers later.">
      <Suspense>
        <AuthForm mode="setup" />
      </Suspense>
    </AuthCard>
  );
}
