import type { QueryClient } from "@tanstack/react-query";
import { idSchema } from "@/core/validation";
import type { useTRPC } from "@/lib/trpc";

/** The cluster whose diagram a path shows (`/clusters/<id>`, nothing after it), or null. */
export function diagramClusterId(pathname: string): string | null {
  const m = /^\/clusters\/([^/]+)\/?$/.exec(pathname);
  return m && idSchema.safeParse(m[1]).success ? m[1]! : null;
}

/**
 * On a page load straight onto a cluster's diagram, asks for its topology (the dashboard's
 * heaviest read) at once, beside the session check, instead of after the shell has its
 * answer and renders the page. On its own request, so the session's answer (and the
 * shell) does not wait for it. The diagram's own query then finds it in the cache or in
 * flight; a refusal (no session) is only cached until the diagram mounts and asks again.
 */
export function prefetchDiagram(queryClient: QueryClient, trpc: ReturnType<typeof useTRPC>, pathname: string): void {
  const clusterId = diagramClusterId(pathname);
  if (clusterId) void queryClient.prefetchQuery(trpc.topology.get.queryOptions({ clusterId }, { trpc: { context: { skipBatch: true } } }));
}
