/**
 * The V8 flag that bounds how far a heap may grow past what its last full collection kept
 * before the next one (V8's own rule allows about four times). The panel sets it from
 * ROUTEBOARD_HEAP_GROWTH_PERCENT (server/env.ts), the agent from its own bound (agent/heap.ts).
 */

/** `--heap-growing-percent=<percent>`, or null for 0: V8's own rule. */
export function heapGrowthFlag(percent: number): string | null {
  return percent > 0 ? `--heap-growing-percent=${percent}` : null;
}
