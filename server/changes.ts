/**
 * Writes return the change events they caused instead of publishing them: a domain function
 * commits its transaction first, so nobody is told about a change that was rolled back.
 * Routers hand the result to publishAfterCommit, the one place events leave a write.
 */
import type { SessionOperator } from "@/server/auth/sessions";
import { publishChange, type ChangeKind } from "@/server/bus";
import { toTrpcError } from "@/server/db-errors";

/** Who makes a change, as the audit log records it (null = the system). */
export type Actor = Pick<SessionOperator, "operatorId" | "username"> | null;

/**
 * Most subscribers a "subscribers" change names (subscriberIds): listeners such as the config
 * hub then re-read only those; a larger change names none and they re-read everything. Keeps
 * the event far below PostgreSQL's 8000-byte NOTIFY payload (server/bus-pg.ts).
 */
export const MAX_NAMED_SUBSCRIBERS = 100;

export interface Change {
  kind: ChangeKind;
  clusterId: string | null;
  subscriberIds?: string[];
}

export interface Written<T> {
  result: T;
  changes: Change[];
}

export function written<T>(result: T, ...changes: Change[]): Written<T> {
  return { result, changes };
}

/** Awaits a committed write, announces its changes, and returns its result; domain errors become tRPC errors. */
export async function publishAfterCommit<T>(write: Promise<Written<T>>): Promise<T> {
  let done: Written<T>;
  try {
    done = await write;
  } catch (err) {
    throw toTrpcError(err);
  }
  for (const c of done.changes) publishChange(c.kind, c.clusterId, c.subscriberIds);
  return done.result;
}
