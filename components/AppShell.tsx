"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { usePathname, useRouter } from "next/navigation";
import { useEffect, useState } from "react";
import { useTRPC } from "@/lib/trpc";
import { errorMessage } from "@/lib/errors";
import { DatabaseBanner } from "@/components/DatabaseBanner";
import { ChangePasswordDialog } from "@/components/auth/ChangePasswordDialog";
import { TwoFactorDialog, TwoFactorPanel } from "@/components/auth/TwoFactorPanel";
import { PageSkeleton } from "@/components/ui/Skeleton";
import { AppHeader } from "@/components/shell/AppHeader";
import { shellRedirect } from "@/components/shell/nav";
import { OperatorContext } from "@/components/shell/operator";
import { prefetchDiagram } from "@/components/diagram/prefetch";

// The operator hooks live beside the shell's parts; pages keep importing them from here.
export { useCanEdit, useDashboardOrigin, useLinkOrigin, useOperator, type CurrentOperator } from "@/components/shell/operator";

/** The dashboard frame: only shown with a session; otherwise sends to setup or login. */
export function AppShell({ children }: { children: React.ReactNode }) {
  const trpc = useTRPC();
  const router = useRouter();
  const pathname = usePathname();
  const queryClient = useQueryClient();
  const [changingPassword, setChangingPassword] = useState(false);
  const [passwordChanged, setPasswordChanged] = useState(false);
  const [twoFactorOpen, setTwoFactorOpen] = useState(false);
  const status = useQuery(trpc.auth.status.queryOptions(undefined, { refetchOnWindowFocus: true }));
  // A load straight onto a diagram fetches its topology beside the session check, not after
  // it (the page below renders only once the session is known). Once: the shell stays
  // mounted across the dashboard's own navigations, where the page asks for itself.
  const [firstPath] = useState(pathname);
  useEffect(() => prefetchDiagram(queryClient, trpc, firstPath), [queryClient, trpc, firstPath]);
  const logout = useMutation(
    trpc.auth.logout.mutationOptions({
      onSettled: async () => {
        queryClient.clear();
        router.replace("/login");
      },
    }),
  );
  useEffect(() => {
    // Back to this very page (with its query) after logging in.
    const to = shellRedirect(status.data, pathname + window.location.search);
    if (to) router.replace(to);
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
  // The owner requires a second factor and this operator has none: nothing else until they enrol.
  if (status.data?.mustEnrolTwoFactor) {
    return (
      <main className="mx-auto max-w-lg p-4 sm:p-8">
        <h1 className="mb-1 text-2xl font-semibold">Set up two-factor authentication</h1>
        <p className="mb-5 text-sm text-slate-500">The owner requires it for every operator. The dashboard opens once it is on.</p>
        <div className="rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
          <TwoFactorPanel onFinished={() => void queryClient.invalidateQueries()} />
        </div>
        <button type="button" className="mt-4 text-sm text-slate-500 underline" onClick={() => logout.mutate()} disabled={logout.isPending}>
          Log out
        </button>
      </main>
    );
  }

  return (
    <OperatorContext.Provider value={operator}>
      <div className="flex min-h-full flex-col">
        <AppHeader operator={operator} onChangePassword={() => setChangingPassword(true)} onTwoFactor={() => setTwoFactorOpen(true)} onLogout={() => logout.mutate()} loggingOut={logout.isPending} />
        <DatabaseBanner />
        {passwordChanged && (
          <p role="status" className="border-b border-emerald-200 bg-emerald-50 px-5 py-2 text-sm text-emerald-900">
            Password changed. Your other sessions were logged out.{" "}
            <button type="button" className="underline" onClick={() => setPasswordChanged(false)}>
              Dismiss
            </button>
          </p>
        )}
        {twoFactorOpen && <TwoFactorDialog onClose={() => setTwoFactorOpen(false)} />}
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
