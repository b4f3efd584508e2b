"use client";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { createTRPCClient, httpBatchLink, httpLink, httpSubscriptionLink, splitLink, TRPCClientError } from "@trpc/client";
import { useState } from "react";
import superjson from "superjson";
import type { AppRouter } from "@/server/api/root";
import { TRPCProvider } from "@/lib/trpc";
import { BATCH_LINK_MAX_ITEMS, UNBATCHED_PROCEDURES } from "@/lib/trpc-links";

function makeQueryClient() {
  return new QueryClient({
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
}

export function Providers({ children }: { children: React.ReactNode }) {
  const [queryClient] = useState(makeQueryClient);
  const [trpcClient] = useState(() =>
    createTRPCClient<AppRouter>({
      links: [
        splitLink({
          condition: (op) => op.type === "subscription",
          true: httpSubscriptionLink({ url: "/api/trpc", transformer: superjson }),
          // Password checks go alone: the server refuses them inside a batch.
          false: splitLink({
            condition: (op) => UNBATCHED_PROCEDURES.has(op.path),
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
        {children}
      </TRPCProvider>
    </QueryClientProvider>
  );
}
