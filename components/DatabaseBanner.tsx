"use client";
import { useQuery } from "@tanstack/react-query";

/**
 * Says so when the database is unreachable: changes cannot be saved, and subscriptions are
 * served from the last good snapshot. Polls /api/health (plain JSON, no session needed).
 */
export function DatabaseBanner() {
  const health = useQuery({
    queryKey: ["api-health"],
    queryFn: async () => {
      const res = await fetch("/api/health", { cache: "no-store" });
      const body = (await res.json().catch(() => null)) as { database?: { reachable?: boolean } } | null;
      return { reachable: res.ok && body?.database?.reachable === true, appReachable: true };
    },
    refetchInterval: 3000,
    retry: false,
  });
  const appDown = health.isError;
  const dbDown = health.data && !health.data.reachable;
  if (!appDown && !dbDown) return null;
  return (
    <div role="alert" className="border-b border-amber-300 bg-amber-50 px-5 py-2 text-sm text-amber-900">
      {appDown
        ? "Cannot reach Routeboard: retrying…"
        : "The database is unavailable: changes cannot be saved right now. Users' apps keep getting their last known servers."}
    </div>
  );
}
