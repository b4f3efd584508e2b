"use client";
import { useEffect } from "react";
import { useQuery } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useTRPC } from "@/lib/trpc";

/** Sends a visitor where they belong: setup on a new install, else login or clusters. */
export default function Home() {
  const trpc = useTRPC();
  const router = useRouter();
  const status = useQuery(trpc.auth.status.queryOptions());
  useEffect(() => {
    if (!status.data) return;
    router.replace(status.data.needsSetup ? "/setup" : status.data.operator ? "/clusters" : "/login");
  }, [status.data, router]);
  return <main className="p-8 text-slate-500">{status.error ? status.error.message : "Loading…"}</main>;
}
