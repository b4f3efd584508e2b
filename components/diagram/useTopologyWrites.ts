"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useCallback } from "react";
import { applyMove, effectiveRouteId } from "@/core/topology";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { computeWarnings } from "@/core/warnings";
import type { DiagramIndex, Target, TopologyData } from "./context";

function withWarnings(data: TopologyData): TopologyData {
  return { ...data, warnings: computeWarnings(data) };
}

/**
 * The diagram's two writes, both optimistic: the diagram redraws at once and rolls back
 * with a message if the server refuses. Every write ends in a refetch, and the live
 * refetching waits while one is in flight, so a reload never loses a move once saved.
 */
export function useTopologyWrites(opts: {
  clusterId: string;
  index: DiagramIndex;
  announce(text: string): void;
  showAlert(text: string): void;
  targetName(t: Target): string;
}) {
  const { clusterId, index, announce, showAlert, targetName } = opts;
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const queryKey = trpc.topology.get.queryKey({ clusterId });

  const moveMutation = useMutation(
    trpc.topology.moveInbound.mutationOptions({
      onMutate: async (vars) => {
        const previous = queryClient.getQueryData(queryKey);
        void queryClient.cancelQueries({ queryKey });
        // Redraw a task later, once the request is on its way (the batch link sends it from
        // a zero timeout): on a big diagram the redraw takes a while and must not delay it.
        setTimeout(() =>
          setTimeout(() =>
            queryClient.setQueryData(queryKey, (old) =>
              old ? withWarnings({ ...old, inbounds: old.inbounds.map((i) => (i.id === vars.inboundId ? applyMove(i, vars.toRouteId) : i)) }) : old,
            ),
          ),
        );
        return { previous };
      },
      onError: (err, vars, ctx) => {
        // After the optimistic redraw (two tasks after the drop), never before it.
        if (ctx?.previous) setTimeout(() => setTimeout(() => queryClient.setQueryData(queryKey, ctx.previous)));
        const name = ctx?.previous?.inbounds.find((i) => i.id === vars.inboundId)?.name ?? "the inbound";
        showAlert(`Could not move ${name}: ${errorMessage(err)}`);
      },
      onSuccess: (res) => {
        queryClient.setQueryData(queryKey, (old) =>
          old ? { ...old, inbounds: old.inbounds.map((i) => (i.id === res.inboundId ? { ...i, version: res.version } : i)) } : old,
        );
      },
      onSettled: () => queryClient.invalidateQueries({ queryKey }),
    }),
  );

  const reorderMutation = useMutation(
    trpc.topology.reorderRoutes.mutationOptions({
      onMutate: async (vars) => {
        await queryClient.cancelQueries({ queryKey });
        const previous = queryClient.getQueryData(queryKey);
        queryClient.setQueryData(queryKey, (old) => {
          if (!old) return old;
          const byId = new Map(old.routes.map((r) => [r.id, r]));
          const routes = vars.orderedRouteIds.flatMap((id, position) => {
            const r = byId.get(id);
            return r ? [{ ...r, position }] : [];
          });
          return withWarnings({ ...old, routes });
        });
        return { previous };
      },
      onError: (err, _vars, ctx) => {
        if (ctx?.previous) queryClient.setQueryData(queryKey, ctx.previous);
        showAlert(`Could not reorder the routes: ${errorMessage(err)}`);
      },
      onSettled: () => queryClient.invalidateQueries({ queryKey }),
    }),
  );

  const { mutate: mutateMove } = moveMutation;
  const { mutate: mutateReorder } = reorderMutation;

  /** Moves an inbound to a route or Unassigned; a move to where it already is does nothing. */
  const move = useCallback(
    (inboundId: string, to: Target) => {
      const inbound = index.inboundById.get(inboundId);
      if (!inbound) return;
      if (effectiveRouteId(inbound, index.routeById) === to) return;
      announce(`Moved ${inbound.name} to ${to === null ? "Unassigned" : `route ${targetName(to)}`}.`);
      mutateMove({ inboundId, toRouteId: to, expectedVersion: inbound.version });
    },
    [announce, index, mutateMove, targetName],
  );

  /** Puts a route at `toIndex` in the order (0 = first). */
  const reorderTo = useCallback(
    (routeId: string, toIndex: number) => {
      const ids = index.data.routes.map((r) => r.id);
      const from = ids.indexOf(routeId);
      if (from < 0 || toIndex < 0 || toIndex >= ids.length || from === toIndex) return;
      ids.splice(from, 1);
      ids.splice(toIndex, 0, routeId);
      announce(`${index.routeById.get(routeId)?.name ?? "Route"} is now number ${toIndex + 1} of ${ids.length}.`);
      mutateReorder({ clusterId, orderedRouteIds: ids });
    },
    [announce, clusterId, index, mutateReorder],
  );

  const moveRoute = useCallback(
    (routeId: string, delta: number) => reorderTo(routeId, (index.routeIndex.get(routeId) ?? 0) + delta),
    [index, reorderTo],
  );

  return { move, reorderTo, moveRoute };
}
