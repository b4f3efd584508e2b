"use client";
import { useQueryClient } from "@tanstack/react-query";
import { useTRPC } from "@/lib/trpc";

/** Reloads the server list and the topology (the impact dialogs read it) after a change to a server or an inbound. */
export function useRefreshServers() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: trpc.servers.list.queryKey() }),
      queryClient.invalidateQueries({ queryKey: trpc.topology.get.queryKey() }),
    ]);
}
