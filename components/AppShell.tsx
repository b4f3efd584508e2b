"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import { createContext, useContext, useEffect, useState } from "react";
import { useTRPC } from "@/lib/trpc";
import { errorMessage } from "@/lib/errors";
import { DatabaseBanner } from "@/components/DatabaseBanner";
import { ChangePasswordDialog } from "@/components/auth/ChangePasswordDialog";
import { PageSkeleton } from "@/components/ui/Skeleton";

export interface CurrentOperator {
  username: string;
  role: "owner" | "admin" | "viewer";
}
const OperatorContext = createContext<CurrentOperator | null>(null);

/** The operator of this page; only rendered inside AppShell, which waits for a session. */
export function useOperator(): CurrentOperator {
  const op = useContext(OperatorContext);
  if (!op) throw new Error("useOperator outside AppShell");
  return op;
}
/**
 * The origin links are made from (subscriptions, the agent's ROUTEBOARD_URL): PUBLIC_URL
 * when the server has one, so a page opened through another name never hands out links
 * to that name; else the address this page was opened at.
 */
export function useDashboardOrigin(): string {
  return useLinkOrigin().origin;
}

/**
 * The origin links are made from, and whether it is PUBLIC_URL (`publicUrlSet`) or only
 * the browser's address, which is wrong for anyone who reaches the panel by another name.
 */
export function useLinkOrigin(): { origin: string; publicUrlSet: boolean; known: boolean } {
  const trpc = useTRPC();
  const status = useQuery(trpc.auth.status.queryOptions());
  const publicUrl = status.data?.publicUrl ?? null;
  return { origin: publicUrl ?? (typeof window === "undefined" ? "" : window.location.origin), publicUrlSet: publicUrl !== null, known: status.data !== undefined };
}

export function useCanEdit(): boolean {
  return useOperator().role !== "viewer";
}

/** The dashboard frame: only shown with a session; otherwise sends to setup or login. */
export function AppShell({ children }: { children: React.ReactNode }) {
  const trpc = useTRPC();
  const router = useRouter();
  const pathname = usePathname();
  const queryClient = useQueryClient();
  const [changingPassword, setChangingPassword] = useState(false);
  const [passwordChanged, setPasswordChanged] = useState(false);
  const status = useQuery(trpc.auth.status.queryOptions(undefined, { refetchOnWindowFocus: true }));
  const logout = useMutation(
    trpc.auth.logout.mutationOptions({
      onSettled: async () => {
        queryClient.clear();
        router.replace("/login");
      },
    }),
  );
  useEffect(() => {
    if (!status.data) return;
    if (status.data.needsSetup) router.replace("/setup");
    // Back to this very page (with its query) after logging in.
    else if (!status.data.operator) router.replace(`/login?next=${encodeURIComponent(pathname + window.location.search)}`);
  }, [status.data, router, pathname]);

  // An error after a good load (database outage) keeps the page: the banner says why.
  if (status.error && !status.data) {
    return (
      <main className="p-8">
        <p role="alert" className="text-red-700">
          {errorMessage(status.error)}
        </p>
      </main>
    );
  }
  const operator = status.data?.operator;
  if (!operator) return <main className="p-8"><PageSkeleton label="Loading" /></main>;

  return (
    <OperatorContext.Provider value={operator}>
      <div className="flex min-h-full flex-col">
        <header className="flex items-center gap-6 border-b border-slate-800 bg-slate-900 px-5 py-2.5 text-slate-100">
          <Link href="/clusters" className="flex items-center gap-2 font-bold">
            <img src="/favicon.svg" alt="" className="h-6 w-6" /> Routeboard
          </Link>
          <nav className="flex gap-4 text-sm text-slate-300">
            <Link href="/clusters" className="hover:text-white">
              Clusters
            </Link>
            {operator.role !== "viewer" && (
              <Link href="/alerts" className="hover:text-white">
                Alerts
              </Link>
            )}
            {operator.role === "owner" && (
              <Link href="/team" className="hover:text-white">
                Team
              </Link>
            )}
            {operator.role !== "viewer" && (
              <Link href="/tokens" className="hover:text-white">
                API tokens
              </Link>
            )}
          </nav>
          <div className="ml-auto flex items-center gap-3 text-sm">
            <span data-testid="current-operator">
              {operator.username} <span className="rounded bg-slate-700 px-1.5 py-0.5 text-xs uppercase tracking-wide">{operator.role}</span>
            </span>
            <button type="button" onClick={() => setChangingPassword(true)} className="rounded-md px-2 py-1 text-slate-300 hover:bg-slate-800 hover:text-white">
              Change password
            </button>
            <button
              type="button"
              onClick={() => logout.mutate()}
              className="rounded-md border border-slate-600 px-3 py-1 hover:bg-slate-800"
              disabled={logout.isPending}
            >
              Log out
            </button>
          </div>
        </header>
        <DatabaseBanner />
        {passwordChanged && (
          <p role="status" className="border-b border-emerald-200 bg-emerald-50 px-5 py-2 text-sm text-emerald-900">
            Password changed. Your other sessions were logged out.{" "}
            <button type="button" className="underline" onClick={() => setPasswordChanged(false)}>
              Dismiss
            </button>
          </p>
        )}
        {changingPassword && (
          <ChangePasswordDialog
            onClose={() => setChangingPassword(false)}
            onChanged={() => {
              setChangingPassword(false);
              setPasswordChanged(true);
            }}
          />
        )}
        <div className="flex-1">{children}</div>
      </div>
    </OperatorContext.Provider>
  );
}
