import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { onChange, type ChangeEvent, type ChangeKind } from "@/server/bus";
import { publishAfterCommit } from "@/server/changes";
import { moveInbound, setRouteOrder } from "@/server/topology/moves";
import { topologyWithWarnings } from "@/server/topology/topology";
import { idSchema } from "@/core/validation";
import { topologyWriteProcedure, createTRPCRouter, protectedProcedure } from "../trpc";

/** Kinds of change that alter what the diagram shows. */
// "settings": probe configuration feeds the warnings panel.
const DIAGRAM_KINDS: ReadonlySet<ChangeKind> = new Set(["topology", "health", "metrics", "settings"]);
const CHANGE_KINDS = ["topology", "health", "metrics", "settings", "subscribers", "assignments", "traffic"] as const satisfies readonly ChangeKind[];

export interface TopologyChange {
  kinds: ChangeKind[];
  at: number;
}

export const topologyRouter = createTRPCRouter({
  get: protectedProcedure.input(z.object({ clusterId: idSchema })).query(({ ctx, input }) => topologyWithWarnings(ctx.db, input.clusterId)),

  /** Puts an inbound in a route (or in none, toRouteId null), refusing a move made on stale data. */
  moveInbound: topologyWriteProcedure
    .input(z.object({ inboundId: idSchema, toRouteId: idSchema.nullable(), expectedVersion: z.number().int().min(0) }))
    .mutation(({ ctx, input }) => publishAfterCommit(moveInbound(ctx.db, ctx.operator, input))),

  /** Sets the order of the cluster's routes (= the order of lines in every subscription). */
  reorderRoutes: topologyWriteProcedure
    .input(z.object({ clusterId: idSchema, orderedRouteIds: z.array(idSchema).max(10_000) }))
    .mutation(({ ctx, input }) => publishAfterCommit(setRouteOrder(ctx.db, ctx.operator, input))),

  /**
   * Live changes of one cluster for the dashboard: one small event per burst of changes
   * (topology, health, metrics); the client refetches topology.get on each. At most
   * MAX_CHANGE_STREAMS open at once per session (or API token): the next is refused with
   * TOO_MANY_REQUESTS; closing a stream gives its place back.
   */
  onChange: protectedProcedure.input(z.object({ clusterId: idSchema, kinds: z.array(z.enum(CHANGE_KINDS)).max(CHANGE_KINDS.length).optional() })).subscription(({ ctx, input, signal }) => {
    const release = takeStreamSlot(ctx.operator.sessionId);
    // Given back when the stream ends, or when the request goes before it started.
    signal?.addEventListener("abort", release, { once: true });
    return changes(input, signal, release);
  }),
});

/** Concurrent topology.onChange streams allowed per session or API token. */
export const MAX_CHANGE_STREAMS = 16;
const OPEN_KEY = Symbol.for("routeboard.changeStreams");

/** Open change streams by session id (an API token's is `api-token:<id>`), in this instance. */
export function openChangeStreams(): Map<string, number> {
  const g = globalThis as typeof globalThis & { [OPEN_KEY]?: Map<string, number> };
  g[OPEN_KEY] ??= new Map();
  return g[OPEN_KEY];
}

/** A place for one more stream of this sign-in (its session id), or TOO_MANY_REQUESTS; the release is idempotent. */
function takeStreamSlot(sessionId: string): () => void {
  const open = openChangeStreams();
  const n = open.get(sessionId) ?? 0;
  if (n >= MAX_CHANGE_STREAMS) {
    throw new TRPCError({
      code: "TOO_MANY_REQUESTS",
      message: `Too many live update streams open for this session (at most ${MAX_CHANGE_STREAMS}): close a tab or wait for one to end`,
    });
  }
  open.set(sessionId, n + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (open.get(sessionId) ?? 1) - 1;
    if (left > 0) open.set(sessionId, left);
    else open.delete(sessionId);
  };
}

async function* changes(input: { clusterId: string; kinds?: ChangeKind[] }, signal: AbortSignal | undefined, release: () => void): AsyncGenerator<TopologyChange> {
  const queue: ChangeEvent[] = [];
  let wake: (() => void) | null = null;
  // The diagram's kinds unless the page asks for others (the subscribers page wants "subscribers").
  const wanted: ReadonlySet<ChangeKind> = input.kinds ? new Set(input.kinds) : DIAGRAM_KINDS;
  const off = onChange((e) => {
    if (!wanted.has(e.kind)) return;
    if (e.clusterId !== null && e.clusterId !== input.clusterId) return;
    queue.push(e);
    wake?.();
  });
  const onAbort = () => wake?.();
  signal?.addEventListener("abort", onAbort);
  try {
    while (!signal?.aborted) {
      if (queue.length === 0) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = null;
        continue;
      }
      const batch = queue.splice(0);
      const change: TopologyChange = { kinds: [...new Set(batch.map((e) => e.kind))], at: Math.max(...batch.map((e) => e.at)) };
      yield change;
    }
  } finally {
    off();
    signal?.removeEventListener("abort", onAbort);
    release();
  }
}
