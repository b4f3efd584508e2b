"use client";
import { useQueryClient, type QueryKey } from "@tanstack/react-query";
import { useSubscription } from "@trpc/tanstack-react-query";
import { useEffect, useRef } from "react";
import { useTRPC } from "@/lib/trpc";
import type { ChangeKind } from "@/server/bus";

/** Changes of these kinds arrive several times a second on a busy fleet: they wait longer. */
const BUSY_KINDS: ReadonlySet<string> = new Set(["health", "metrics", "traffic", "assignments"]);
const FAST_MS = 150;
const SLOW_MS = 2000;

/**
 * Keeps a page's queries current from the cluster's change feed (the subscription the
 * diagram uses): a change of one of `kinds` made in another browser, by the API or by the
 * monitor refetches `queryKeys`, coalesced, and a reconnect catches up on what was missed.
 */
export function useClusterChanges(clusterId: string, kinds: readonly ChangeKind[], queryKeys: readonly QueryKey[]) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const due = useRef(Infinity);
  const keys = useRef(queryKeys);
  keys.current = queryKeys;
  useEffect(() => () => void (timer.current && clearTimeout(timer.current)), []);

  const schedule = (changed: readonly string[]) => {
    const relevant = changed.filter((k) => (kinds as readonly string[]).includes(k));
    if (relevant.length === 0) return;
    const at = Date.now() + (relevant.every((k) => BUSY_KINDS.has(k)) ? SLOW_MS : FAST_MS);
    if (timer.current && due.current <= at) return;
    if (timer.current) clearTimeout(timer.current);
    due.current = at;
    timer.current = setTimeout(() => {
      timer.current = null;
      due.current = Infinity;
      for (const queryKey of keys.current) void queryClient.invalidateQueries({ queryKey });
    }, at - Date.now());
  };

  const started = useRef(false);
  useSubscription(
    trpc.topology.onChange.subscriptionOptions(
      { clusterId, kinds: [...kinds] },
      {
        onData: (e) => schedule(e.kinds),
        onStarted: () => {
          if (started.current) schedule(kinds);
          started.current = true;
        },
      },
    ),
  );
}
