/**
 * The change bus: every write that the diagram, the balancer snapshot or the monitor cares
 * about publishes one event here. In-process on PGlite; with DATABASE_URL the same events
 * also travel over PostgreSQL LISTEN/NOTIFY to other instances (see server/bus-pg.ts).
 * Lives on globalThis so two copies of this module share one bus.
 */
import { EventEmitter } from "node:events";

export type ChangeKind =
  | "topology" // servers, inbounds, routes, moves, reorders
  | "health" // server status changed
  | "metrics" // load figures changed
  | "subscribers"
  | "traffic" // per-subscriber traffic totals moved (the traffic journal fold, at most every 0.5 s)
  | "settings"
  | "assignments"; // the balancer stored new choices (other instances drop their cached ones)

export interface ChangeEvent {
  kind: ChangeKind;
  clusterId: string | null;
  /** "assignments": whose choices changed (absent = anyone's). */
  subscriberIds?: string[];
  /** Instance that made the change (so a remote echo is not re-applied twice). */
  origin?: string;
  at: number;
}

interface BusState {
  emitter: EventEmitter;
  /** Forwards local events to other instances; set when PostgreSQL is the database. */
  remote?: (e: ChangeEvent) => void;
  instanceId: string;
}

const KEY = Symbol.for("routeboard.bus");
function state(): BusState {
  const g = globalThis as typeof globalThis & { [KEY]?: BusState };
  if (!g[KEY]) {
    const emitter = new EventEmitter();
    emitter.setMaxListeners(0);
    g[KEY] = { emitter, instanceId: Math.random().toString(36).slice(2, 10) };
  }
  return g[KEY];
}

export function instanceId(): string {
  return state().instanceId;
}

/** Announce a change to this instance and, when connected, to every other instance. */
export function publishChange(kind: ChangeKind, clusterId: string | null, subscriberIds?: string[]): void {
  const event: ChangeEvent = { kind, clusterId, origin: state().instanceId, at: Date.now(), ...(subscriberIds ? { subscriberIds } : {}) };
  state().emitter.emit("change", event);
  state().remote?.(event);
}

/** Deliver an event that came from another instance. */
export function deliverRemoteChange(event: ChangeEvent): void {
  if (event.origin === state().instanceId) return;
  state().emitter.emit("change", event);
}

export function setRemoteForwarder(fn: ((e: ChangeEvent) => void) | undefined): void {
  state().remote = fn;
}

export function onChange(listener: (e: ChangeEvent) => void): () => void {
  state().emitter.on("change", listener);
  return () => state().emitter.off("change", listener);
}
