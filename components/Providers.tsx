"use client";
import { MutationCache, QueryClient, QueryClientProvider, type Mutation } from "@tanstack/react-query";
import { createTRPCClient, httpBatchLink, httpLink, httpSubscriptionLink, splitLink, TRPCClientError } from "@trpc/client";
import { useEffect, useState } from "react";
import superjson from "superjson";
import type { AppRouter } from "@/server/api/root";
import { TRPCProvider } from "@/lib/trpc";
import { BATCH_LINK_MAX_ITEMS, UNBATCHED_PROCEDURES } from "@/lib/trpc-links";
import { errorMessage, fieldErrors } from "@/lib/errors";
import { ToastContext, Toaster } from "@/components/ui/Toaster";
import { findName, hasWriteToast, procedurePath, subjectId, writeToast } from "@/components/ui/toast-messages";
import { createToastStore, type ToastStore } from "@/components/ui/toast-store";

/**
 * Every write shows a toast with the server's answer, from one place: the mutation cache.
 * A mutation with `meta: { toast: false }` shows its own (the diagram's moves, with Undo).
 * Failures are announced politely here: the forms and pages show them in place as well.
 */
function makeQueryClient(toasts: ToastStore) {
  // The name of what a write changes, looked up before it runs: a delete removes it.
  const names = new WeakMap<Mutation<unknown, unknown, unknown>, string | null>();
  const pathOf = (m: Mutation<unknown, unknown, unknown>) => (m.meta?.toast === false ? null : procedurePath(m.options.mutationKey));
  const mutationCache = new MutationCache({
    onMutate: (vars, mutation) => {
      const path = pathOf(mutation);
      if (!hasWriteToast(path)) return;
      const id = subjectId(path, vars);
      if (id) names.set(mutation, findName(client.getQueryCache().getAll().map((q) => q.state.data), id));
    },
    onSuccess: (data, vars, _ctx, mutation) => {
      const path = pathOf(mutation);
      const t = hasWriteToast(path) ? writeToast(path, vars, { ok: true, data }, names.get(mutation) ?? null) : null;
      if (t) toasts.getState().push(t);
    },
    onError: (err, vars, _ctx, mutation) => {
      // A refusal naming a field is shown next to that field by its form; a toast would
      // only repeat it.
      if (Object.keys(fieldErrors(err)).length > 0) return;
      const path = pathOf(mutation);
      const t = hasWriteToast(path) ? writeToast(path, vars, { ok: false, message: errorMessage(err) }, names.get(mutation) ?? null) : null;
      if (t) toasts.getState().push({ ...t, polite: true });
    },
  });
  const client: QueryClient = new QueryClient({
    mutationCache,
    defaultOptions: {
      queries: {
        staleTime: 5_000,
        retry: (count, err) => {
          // Auth and validation errors will not fix themselves by retrying.
          const code = err instanceof TRPCClientError ? (err.data as { httpStatus?: number } | undefined)?.httpStatus : undefined;
          if (code && code >= 400 && code < 500) return false;
          return count < 2;
        },
      },
    },
  });
  return client;
}

/** Writes worth a question before unloading: all but signing in and out. */
function isGuardedWrite(path: string | null): boolean {
  return path !== null && !path.startsWith("auth.");
}

export function Providers({ children }: { children: React.ReactNode }) {
  const [toasts] = useState(createToastStore);
  const [queryClient] = useState(() => makeQueryClient(toasts));
  useEffect(() => {
    // Leaving or reloading while a write is in flight asks first: the page may already show
    // it as done (the diagram's moves are optimistic) though the server has not answered.
    const guard = (e: BeforeUnloadEvent) => {
      if (queryClient.isMutating({ predicate: (m) => isGuardedWrite(procedurePath(m.options.mutationKey)) }) === 0) return;
      e.preventDefault();
      e.returnValue = "";
    };
    window.addEventListener("beforeunload", guard);
    return () => window.removeEventListener("beforeunload", guard);
  }, [queryClient]);
  const [trpcClient] = useState(() =>
    createTRPCClient<AppRouter>({
      links: [
        splitLink({
          condition: (op) => op.type === "subscription",
          true: httpSubscriptionLink({ url: "/api/trpc", transformer: superjson }),
          // Password checks go alone: the server refuses them inside a batch. So does a
          // read asked for with `skipBatch` (the diagram's first load): the batch it would
          // join would wait for it.
          false: splitLink({
            condition: (op) => UNBATCHED_PROCEDURES.has(op.path) || op.context.skipBatch === true,
            true: httpLink({ url: "/api/trpc", transformer: superjson }),
            false: httpBatchLink({ url: "/api/trpc", transformer: superjson, maxItems: BATCH_LINK_MAX_ITEMS }),
          }),
        }),
      ],
    }),
  );
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        <ToastContext.Provider value={toasts}>
          {children}
          <Toaster store={toasts} />
        </ToastContext.Provider>
      </TRPCProvider>
    </QueryClientProvider>
  );
}
