/**
 * Token buckets per agent (issue 11, finding 2): O(1) per request, in memory per instance.
 * Reports: a burst of REPORT_BURST, refilled at one per the cluster's report interval, so an
 * agent can send an out-of-schedule report when its core dies and catch up after an outage,
 * but cannot flood. Config polls: a long-poll loop asks again right after each answer, so
 * its bucket is generous and only stops abusive loops.
 */
export const REPORT_BURST = 5;
export const CONFIG_BURST = 20;
/** Config polls refill at 2 per second. */
export const CONFIG_REFILL_PER_S = 2;

interface Bucket {
  tokens: number;
  atMs: number;
}

export class TokenBuckets {
  private buckets = new Map<string, Bucket>();
  /** The time the buckets refill by (tests hold it still to count a burst exactly). */
  clock: () => number = Date.now;
  constructor(private readonly maxKeys = 200_000) {}

  /**
   * Takes one token from `key`'s bucket. Returns 0 when allowed, else the whole seconds
   * after which one token will be there (for Retry-After).
   */
  take(key: string, capacity: number, refillPerS: number, nowMs = this.clock()): number {
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= this.maxKeys) this.buckets.clear();
      b = { tokens: capacity, atMs: nowMs };
      this.buckets.set(key, b);
    } else {
      const elapsedS = Math.max(0, nowMs - b.atMs) / 1000;
      b.tokens = Math.min(capacity, b.tokens + elapsedS * refillPerS);
      b.atMs = nowMs;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / refillPerS));
  }

  clear(): void {
    this.buckets.clear();
  }
}

const KEY = Symbol.for("routeboard.agentLimits");
type G = typeof globalThis & { [KEY]?: { reports: TokenBuckets; config: TokenBuckets } };
export function agentLimits(): { reports: TokenBuckets; config: TokenBuckets } {
  const g = globalThis as G;
  g[KEY] ??= { reports: new TokenBuckets(), config: new TokenBuckets() };
  return g[KEY];
}

