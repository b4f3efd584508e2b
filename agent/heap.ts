/**
 * The agent's heap bound. V8's own rule lets a heap grow to about four times what the last full
 * collection kept before collecting again; an agent holding a million users (about 220 MB alive
 * while a config replaces the one before) then peaked at 435–442 MB of RSS on a quiet machine
 * and at 526 MB on a busy one (its concurrent markers short of CPU), past the 500 MB aim.
 * Read by V8 at every full collection, so setting it at start bounds every one after.
 */
import v8 from "node:v8";
import { heapGrowthFlag } from "../core/heap-growth";

/** How far the heap may grow past what the last full collection kept before the next one: 50 %. */
export const AGENT_HEAP_GROWTH_PERCENT = 50;

/** Sets the bound (0: V8's own rule, nothing set). */
export function boundHeapGrowth(percent = AGENT_HEAP_GROWTH_PERCENT): void {
  const flag = heapGrowthFlag(percent);
  if (flag) v8.setFlagsFromString(flag);
}
