/**
 * How the dashboard's tRPC client batches, shared with the server that enforces it
 * (server/api/trpc-http.ts). No imports: the browser bundle and the server both use it.
 */

/**
 * Procedures that check a password or a second factor's code are never batched: one request = one guess, so the
 * throttle and the request count agree (a 501-call batch once tried 500 passwords).
 */
export const UNBATCHED_PROCEDURES: ReadonlySet<string> = new Set([
  "auth.login",
  "auth.loginCode",
  "auth.setup",
  "auth.changePassword",
  "twoFactor.confirm",
  "twoFactor.disable",
]);

/** The batch link's limit; the server accepts a little more (MAX_BATCH_SIZE). */
export const BATCH_LINK_MAX_ITEMS = 10;
