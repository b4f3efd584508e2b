"use client";
import { createContext, useContext } from "react";
import { useStore } from "zustand";
import { createStore, type StoreApi } from "zustand/vanilla";
import type { Target } from "@/core/topology";

/** An inbound picked up from the keyboard. */
export interface Carry {
  inboundId: string;
  /** Index into the targets (Unassigned first, then routes in position order). */
  index: number;
}

/**
 * The diagram's fast-changing state, kept out of the React context: every node reads it
 * through a selector, so an arrow key re-renders only the nodes whose answer changed.
 */
export interface DiagramState {
  carry: Carry | null;
  /** Inbound whose chip is briefly highlighted (after "Show …" in the warnings). */
  highlight: string | null;
  /** A route just created or edited: the diagram pans to it once its box is laid out. */
  focusRoute: string | null;
  /** Route whose box briefly flashes (after "Show route", or after it was created or edited). */
  highlightRoute: string | null;
}

export type DiagramStore = StoreApi<DiagramState>;

export function createDiagramStore(): DiagramStore {
  return createStore<DiagramState>(() => ({ carry: null, highlight: null, focusRoute: null, highlightRoute: null }));
}

export const selectCarry = (s: DiagramState) => s.carry;
/** Whether this inbound is the one being carried. */
export const selectIsCarried = (inboundId: string) => (s: DiagramState) => s.carry?.inboundId === inboundId;
export const selectIsRouteHighlighted = (routeId: string) => (s: DiagramState) => s.highlightRoute === routeId;
export const selectIsHighlighted = (inboundId: string) => (s: DiagramState) => s.highlight === inboundId;
/** Whether the carried inbound is over this target (a route id, or null for Unassigned). */
export const selectIsCarryTarget = (targets: readonly Target[], target: Target) => (s: DiagramState) =>
  s.carry !== null && targets[s.carry.index] === target;

export const DiagramStoreContext = createContext<DiagramStore | null>(null);

export function useDiagramStoreApi(): DiagramStore {
  const store = useContext(DiagramStoreContext);
  if (!store) throw new Error("useDiagramStore outside the diagram");
  return store;
}

export function useDiagramStore<T>(selector: (s: DiagramState) => T): T {
  return useStore(useDiagramStoreApi(), selector);
}
