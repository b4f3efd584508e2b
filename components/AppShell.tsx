"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import { createContext, useContext, useEffect, useId, useRef, useState } from "react";
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
        <header className="fixed-palette relative flex items-center gap-6 border-b border-slate-800 bg-slate-900 px-4 py-2.5 text-slate-100 sm:px-5">
          <Link href="/clusters" className="flex items-center gap-2 font-bold">
            <img src="/favicon.svg" alt="" className="h-6 w-6" /> Routeboard
          </Link>
          <nav aria-label="Main" className="hidden gap-4 text-sm text-slate-300 md:flex">
            <NavLinks role={operator.role} linkClass="hover:text-white" />
          </nav>
          <div className="ml-auto hidden items-center gap-3 text-sm md:flex">
            <OperatorLabel operator={operator} />
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
          <MobileMenu
            operator={operator}
            onChangePassword={() => setChangingPassword(true)}
            onLogout={() => logout.mutate()}
            loggingOut={logout.isPending}
          />
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

/** The dashboard-wide pages this operator may open. */
function NavLinks({ role, linkClass, onNavigate }: { role: CurrentOperator["role"]; linkClass: string; onNavigate?: () => void }) {
  return (
    <>
      <Link href="/clusters" className={linkClass} onClick={onNavigate}>
        Clusters
      </Link>
      {role !== "viewer" && (
        <Link href="/alerts" className={linkClass} onClick={onNavigate}>
          Alerts
        </Link>
      )}
      {role === "owner" && (
        <Link href="/team" className={linkClass} onClick={onNavigate}>
          Team
        </Link>
      )}
      {role !== "viewer" && (
        <Link href="/tokens" className={linkClass} onClick={onNavigate}>
          API tokens
        </Link>
      )}
    </>
  );
}

function OperatorLabel({ operator }: { operator: CurrentOperator }) {
  return (
    <span data-testid="current-operator">
      {operator.username} <span className="rounded bg-slate-700 px-1.5 py-0.5 text-xs uppercase tracking-wide">{operator.role}</span>
    </span>
  );
}

/**
 * Below the md breakpoint the header's links and account buttons fold into one "Menu"
 * button: a disclosure that opens a panel under the header. Escape or a click outside
 * closes it and gives focus back to the button; following a link closes it too.
 */
function MobileMenu(props: { operator: CurrentOperator; onChangePassword(): void; onLogout(): void; loggingOut: boolean }) {
  const { operator } = props;
  const [open, setOpen] = useState(false);
  const buttonRef = useRef<HTMLButtonElement>(null);
  const panelRef = useRef<HTMLDivElement>(null);
  const panelId = useId();
  const pathname = usePathname();
  const [openedAt, setOpenedAt] = useState(pathname);
  // A navigation (a link in the panel, or back/forward) closes the menu.
  if (open && openedAt !== pathname) {
    setOpen(false);
    setOpenedAt(pathname);
  }

  useEffect(() => {
    if (!open) return;
    panelRef.current?.querySelector<HTMLElement>("a, button")?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      setOpen(false);
      buttonRef.current?.focus();
    };
    const onDown = (e: PointerEvent) => {
      const t = e.target as Node;
      if (!panelRef.current?.contains(t) && !buttonRef.current?.contains(t)) setOpen(false);
    };
    document.addEventListener("keydown", onKey);
    document.addEventListener("pointerdown", onDown, true);
    return () => {
      document.removeEventListener("keydown", onKey);
      document.removeEventListener("pointerdown", onDown, true);
    };
  }, [open]);

  const close = () => setOpen(false);
  const item = "block rounded-md px-3 py-2.5 text-left text-slate-200 hover:bg-slate-800 hover:text-white";
  return (
    <div className="ml-auto md:hidden">
      <button
        ref={buttonRef}
        type="button"
        aria-expanded={open}
        aria-controls={panelId}
        onClick={() => {
          setOpenedAt(pathname);
          setOpen((o) => !o);
        }}
        className="flex items-center gap-2 rounded-md border border-slate-600 px-3 py-1.5 text-sm hover:bg-slate-800"
      >
        <svg aria-hidden viewBox="0 0 20 20" className="h-4 w-4" fill="none" stroke="currentColor" strokeWidth="2" strokeLinecap="round">
          {open ? <path d="M5 5l10 10M15 5L5 15" /> : <path d="M3 5h14M3 10h14M3 15h14" />}
        </svg>
        Menu
      </button>
      {open && (
        <div
          ref={panelRef}
          id={panelId}
          // Tabbing out of the panel closes it, as a click outside does.
          onBlur={(e) => {
            const to = e.relatedTarget as Node | null;
            if (to && !panelRef.current?.contains(to) && !buttonRef.current?.contains(to)) setOpen(false);
          }}
          className="absolute inset-x-0 top-full z-40 border-b border-slate-800 bg-slate-900 px-4 pb-4 pt-2 text-sm shadow-xl"
        >
          <nav aria-label="Main" className="flex flex-col">
            <NavLinks role={operator.role} linkClass={item} onNavigate={close} />
          </nav>
          <div className="mt-2 flex flex-col border-t border-slate-700 pt-3">
            <div className="px-3 pb-2 text-slate-300">
              <OperatorLabel operator={operator} />
            </div>
            <button
              type="button"
              className={item}
              onClick={() => {
                close();
                props.onChangePassword();
              }}
            >
              Change password
            </button>
            <button type="button" className={item} onClick={props.onLogout} disabled={props.loggingOut}>
              Log out
            </button>
          </div>
        </div>
      )}
    </div>
  );
}
