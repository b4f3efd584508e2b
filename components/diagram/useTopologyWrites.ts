"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { createElement, useCallback, useEffect, useRef, useState } from "react";
import { ImpactDialog } from "@/components/ui/ImpactDialog";
import { useToast } from "@/components/ui/Toaster";
import { impactOf, type Impact } from "@/core/impact";
import { applyMove, effectiveRouteId } from "@/core/topology";
import { errorMessage } from "@/lib/errors";
import { useTRPC } from "@/lib/trpc";
import { computeWarnings } from "@/core/warnings";
import type { DiagramIndex, Target, TopologyData } from "./topology-index";
import { moveToastText, undoToastText } from "./move-messages";

function withWarnings(data: TopologyData): TopologyData {
  return { ...data, warnings: computeWarnings(data) };
}

type MoveVars = { inboundId: string; toRouteId: string | null; expectedVersion: number };

/**
 * The diagram's two writes, both optimistic: the diagram redraws at once and rolls back
 * with a message if the server refuses. Every write ends in a refetch, and the live
 * refetching waits while one is in flight, so a reload never loses a move once saved.
 * A move's toast offers Undo: the move back carries the version the move returned, so a
 * change made meanwhile by someone else makes the undo fail instead of overwriting it.
 * A move that leaves a route with no available inbound is asked about first.
 */
export function useTopologyWrites(opts: { clusterId: string; index: DiagramIndex; announce(text: string): void; targetName(t: Target): string }) {
  const { clusterId, index, announce, targetName } = opts;
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const toast = useToast();
  const queryKey = trpc.topology.get.queryKey({ clusterId });
  // Toasts and undos answer after the diagram changed: they name routes as they are then.
  const latest = useRef({ targetName });
  useEffect(() => {
    latest.current = { targetName };
  }, [targetName]);

  /** A move (or an undo) waiting for the operator's yes: it would leave routes with no available inbound. */
  const [asking, setAsking] = useState<{ action: string; impact: Impact; run(): void } | null>(null);

  const optimisticMove = (vars: MoveVars) => {
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
    const name = previous?.inbounds.find((i) => i.id === vars.inboundId)?.name ?? "the inbound";
    return { previous, name };
  };
  const rollback = (ctx: { previous?: TopologyData } | undefined) => {
    // After the optimistic redraw (two tasks after the drop), never before it.
    if (ctx?.previous) setTimeout(() => setTimeout(() => queryClient.setQueryData(queryKey, ctx.previous)));
  };
  const storeVersion = (res: { inboundId: string; version: number }) =>
    queryClient.setQueryData(queryKey, (old) => (old ? { ...old, inbounds: old.inbounds.map((i) => (i.id === res.inboundId ? { ...i, version: res.version } : i)) } : old));

  const undoMutation = useMutation(
    trpc.topology.moveInbound.mutationOptions({
      meta: { toast: false },
      onMutate: optimisticMove,
      onError: (_err, _vars, ctx) => rollback(ctx),
      onSuccess: storeVersion,
      onSettled: () => queryClient.invalidateQueries({ queryKey }),
    }),
  );
  const { mutate: mutateUndo } = undoMutation;

  const moveMutation = useMutation(
    trpc.topology.moveInbound.mutationOptions({
      meta: { toast: false },
      onMutate: optimisticMove,
      onError: (err, _vars, ctx) => {
        rollback(ctx);
        toast.push({ kind: "error", text: `Could not move ${ctx?.name ?? "the inbound"}: ${errorMessage(err)}` });
      },
      onSuccess: (res, _vars, ctx) => {
        storeVersion(res);
        if (res.fromRouteId === res.toRouteId) return;
        const name = ctx?.name ?? "The inbound";
        const id = toast.push({
          kind: "success",
          text: moveToastText(name, latest.current.targetName(res.fromRouteId), latest.current.targetName(res.toRouteId)),
          action: {
            label: "Undo",
            onClick: () => {
              const back = latest.current.targetName(res.fromRouteId);
              const undo = () => {
                toast.update(id, { text: `Moving ${name} back…`, action: undefined });
                mutateUndo(
                  { inboundId: res.inboundId, toRouteId: res.fromRouteId, expectedVersion: res.version },
                  {
                    onSuccess: () => toast.update(id, { text: undoToastText(name, latest.current.targetName(res.fromRouteId), null) }),
                    onError: (err) => toast.update(id, { kind: "error", text: undoToastText(name, latest.current.targetName(res.fromRouteId), errorMessage(err)) }),
                  },
                );
              };
              // Moving back is a move like any other: it asks first when it would leave a route with no available inbound.
              const now = queryClient.getQueryData(queryKey);
              const impact = now ? impactOf({ kind: "move-inbound", inboundId: res.inboundId, toRouteId: res.fromRouteId }, now) : null;
              if (impact && impact.routes.length > 0) setAsking({ action: `Undo: move ${name} back to ${res.fromRouteId === null ? "Unassigned" : `route ${back}`}`, impact, run: undo });
              else undo();
            },
          },
        });
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
      // The toast (success or the server's refusal) comes from the mutation cache.
      onError: (_err, _vars, ctx) => {
        if (ctx?.previous) queryClient.setQueryData(queryKey, ctx.previous);
      },
      onSettled: () => queryClient.invalidateQueries({ queryKey }),
    }),
  );

  const { mutate: mutateMove } = moveMutation;
  const { mutate: mutateReorder } = reorderMutation;


  const send = useCallback(
    (vars: MoveVars, name: string, to: string) => {
      announce(`Moved ${name} to ${to}.`);
      mutateMove(vars);
    },
    [announce, mutateMove],
  );

  /** Moves an inbound to a route or Unassigned; a move to where it already is does nothing. */
  const move = useCallback(
    (inboundId: string, to: Target) => {
      const inbound = index.inboundById.get(inboundId);
      if (!inbound) return;
      if (effectiveRouteId(inbound, index.routeById) === to) return;
      const vars = { inboundId, toRouteId: to, expectedVersion: inbound.version };
      const where = to === null ? "Unassigned" : `route ${targetName(to)}`;
      const impact = impactOf({ kind: "move-inbound", inboundId, toRouteId: to }, index.data);
      if (impact.routes.length > 0) setAsking({ action: `Move ${inbound.name} to ${where}`, impact, run: () => send(vars, inbound.name, where) });
      else send(vars, inbound.name, where);
    },
    [index, send, targetName],
  );

  const confirmDialog = asking
    ? createElement(ImpactDialog, {
        impact: asking.impact,
        action: asking.action,
        confirmLabel: "Move anyway",
        onConfirm: () => {
          setAsking(null);
          asking.run();
        },
        onClose: () => {
          setAsking(null);
          announce("Cancelled: nothing changed.");
        },
      })
    : null;

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

  return { move, reorderTo, moveRoute, confirmDialog };
}
