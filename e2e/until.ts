/**
 * Polls `fn` until it returns something truthy (errors count as "not yet"), every `everyMs`;
 * past `timeoutMs` it fails naming what it waited for and the last error. For waits on
 * processes outside the browser (agents, cores, the panel's stored state).
 */
export async function until<T>(what: string, timeoutMs: number, fn: () => Promise<T | null | undefined | false>, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
