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

/** What the boxes do. Stable for the diagram's life: each calls the diagram's latest handler. */
export interface DiagramActions {
  move(inboundId: string, to: Target): void;
  moveRoute(routeId: string, delta: number): void;
  startCarry(inboundId: string): void;
}

/** A place an inbound can go, named as the "Move to…" menu lists it. */
export interface MoveTarget {
  target: Target;
  name: string;
}

/** What the boxes share besides their own data, set by the diagram when it changes. */
export interface DiagramShared {
  clusterId: string;
  /** Viewers see the diagram read-only. */
  canEdit: boolean;
  /** Unassigned first, then the routes in order: the carry's index points in here. */
  targets: readonly MoveTarget[];
  actions: DiagramActions;
}

/**
 * What the boxes read besides their own data, kept out of React context: every node reads
 * it through a selector, so an arrow key re-renders only the nodes whose answer changed,
 * and a refetch re-renders none through it.
 */
export interface DiagramState extends DiagramShared {
  carry: Carry | null;
  /** Inbound whose chip is briefly highlighted (after "Show …" in the warnings). */
  highlight: string | null;
  /** A route just created or edited: the diagram pans to it once its box is laid out. */
  focusRoute: string | null;
  /** Route whose box briefly flashes (after "Show route", or after it was created or edited). */
  highlightRoute: string | null;
}

export type DiagramStore = StoreApi<DiagramState>;

export function createDiagramStore(shared: DiagramShared): DiagramStore {
  return createStore<DiagramState>(() => ({ ...shared, carry: null, highlight: null, focusRoute: null, highlightRoute: null }));
}

export const selectClusterId = (s: DiagramState) => s.clusterId;
export const selectCanEdit = (s: DiagramState) => s.canEdit;
export const selectActions = (s: DiagramState) => s.actions;
export const selectTargets = (s: DiagramState) => s.targets;
export const selectCarry = (s: DiagramState) => s.carry;
/** Whether this inbound is the one being carried. */
export const selectIsCarried = (inboundId: string) => (s: DiagramState) => s.carry?.inboundId === inboundId;
export const selectIsRouteHighlighted = (routeId: string) => (s: DiagramState) => s.highlightRoute === routeId;
export const selectIsHighlighted = (inboundId: string) => (s: DiagramState) => s.highlight === inboundId;
/** Whether the carried inbound is over this target (a route id, or null for Unassigned). */
export const selectIsCarryTarget = (target: Target) => (s: DiagramState) => s.carry !== null && s.targets[s.carry.index]?.target === target;

export const DiagramStoreContext = createContext<DiagramStore | null>(null);

export function useDiagramStoreApi(): DiagramStore {
  const store = useContext(DiagramStoreContext);
  if (!store) throw new Error("useDiagramStore outside the diagram");
  return store;
}

export function useDiagramStore<T>(selector: (s: DiagramState) => T): T {
  return useStore(useDiagramStoreApi(), selector);
}
