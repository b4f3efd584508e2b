"use client";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useSubscription } from "@trpc/tanstack-react-query";
import { useCallback, useEffect, useMemo, useRef } from "react";
import { useTRPC } from "@/lib/trpc";

/** Structural changes show within ~0.1 s; health and load figures at most about once a second. */
const FAST_MS = 100;
const SLOW_MS = 1000;
/** How often a refetch held back by a drag or a move looks again. */
const RETRY_MS = 150;

/**
 * A cluster's topology, kept live: every change of the cluster refetches it, coalesced.
 * A big fleet's monitor reports health and load constantly, so those wait longer than
 * moves and new routes. Nothing is refetched in the middle of a drag (`pauseRefetch`) or a
 * move: the boxes must not shift under the pointer, and a reply loaded before the move
 * was saved must not draw the inbound back where it was.
 */
export function useLiveTopology(clusterId: string) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const topology = useQuery(trpc.topology.get.queryOptions({ clusterId }));
  const queryKey = useMemo(() => trpc.topology.get.queryKey({ clusterId }), [trpc, clusterId]);

  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const due = useRef(Infinity);
  const paused = useRef(false);
  const interrupted = useRef(false);

  const scheduleRefetch = useCallback(
    (kinds: readonly string[]) => {
      const at = Date.now() + (kinds.includes("topology") || kinds.includes("settings") ? FAST_MS : SLOW_MS);
      if (timer.current && due.current <= at) return;
      if (timer.current) clearTimeout(timer.current);
      due.current = at;
      timer.current = setTimeout(function fire() {
        if (paused.current || queryClient.isMutating() > 0) {
          timer.current = setTimeout(fire, RETRY_MS);
          return;
        }
        timer.current = null;
        due.current = Infinity;
        void queryClient.invalidateQueries({ queryKey });
      }, at - Date.now());
    },
    [queryClient, queryKey],
  );
  useEffect(() => () => void (timer.current && clearTimeout(timer.current)), []);

  const started = useRef(false);
  useSubscription(
    trpc.topology.onChange.subscriptionOptions(
      { clusterId },
      {
        onData: (e) => scheduleRefetch(e.kinds),
        onStarted: () => {
          // After a reconnect, catch up on whatever changed while we were away.
          if (started.current) scheduleRefetch(["topology"]);
          started.current = true;
        },
      },
    ),
  );

  /** A drag began: hold refetches back; one already in flight is cancelled and redone after. */
  const pauseRefetch = useCallback(() => {
    paused.current = true;
    if (queryClient.isFetching({ queryKey }) > 0) {
      interrupted.current = true;
      void queryClient.cancelQueries({ queryKey });
    }
  }, [queryClient, queryKey]);
  const resumeRefetch = useCallback(() => {
    paused.current = false;
    if (interrupted.current) {
      interrupted.current = false;
      scheduleRefetch(["topology"]);
    }
  }, [scheduleRefetch]);

  return { topology, queryKey, pauseRefetch, resumeRefetch };
}
