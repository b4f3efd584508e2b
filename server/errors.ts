/**
 * Errors of domain rules that are not tied to one form field. The error mapper
 * (server/db-errors.ts) turns them into NOT_FOUND and CONFLICT.
 */

/** The data the caller acted on changed meanwhile (a stale version or list). */
export class StaleDataError extends Error {
  override name = "StaleDataError";
}
export class NotFoundError extends Error {
  override name = "NotFoundError";
}
