"use client";
import { useCallback, useEffect } from "react";
import { effectiveRouteId } from "@/core/topology";
import type { DiagramIndex, Target } from "./topology-index";
import type { DiagramStore } from "./store";

/** What a key does while an inbound is carried: go to another target, drop, or cancel. */
export type CarryKeyAction = { kind: "go"; index: number } | { kind: "drop" } | { kind: "cancel"; consume: boolean } | null;

/** Pure: the carry state machine's answer to one key, given the current target index and count. */
export function carryKeyAction(key: string, at: number, count: number): CarryKeyAction {
  if (key === "ArrowDown" || key === "ArrowRight") return { kind: "go", index: (at + 1) % count };
  if (key === "ArrowUp" || key === "ArrowLeft") return { kind: "go", index: (at - 1 + count) % count };
  if (key === "Home") return { kind: "go", index: 0 };
  if (key === "End") return { kind: "go", index: count - 1 };
  if (key === "Enter" || key === " ") return { kind: "drop" };
  // Tab leaves the diagram as usual (not consumed); Escape is ours.
  if (key === "Escape") return { kind: "cancel", consume: true };
  if (key === "Tab") return { kind: "cancel", consume: false };
  return null;
}

/**
 * The keyboard "carry": Space/Enter picks a chip up, arrows choose the target, Enter or
 * Space drops, Escape cancels. The state lives in the diagram store and the key listener
 * reads it from there, so a key press re-renders only the nodes whose state changed.
 */
export function useKeyboardCarry(opts: {
  store: DiagramStore;
  index: DiagramIndex;
  canEdit: boolean;
  move(inboundId: string, to: Target): void;
  targetName(t: Target): string;
  announce(text: string): void;
  /** Bring a target's box into view. */
  reveal(t: Target): void;
}) {
  const { store, index, canEdit, move, targetName, announce, reveal } = opts;

  const startCarry = useCallback(
    (inboundId: string) => {
      const inbound = index.inboundById.get(inboundId);
      if (!inbound || !canEdit) return;
      const current = effectiveRouteId(inbound, index.routeById);
      store.setState({ carry: { inboundId, index: Math.max(0, index.targets.indexOf(current)) } });
      announce(`Picked up ${inbound.name}, now in ${targetName(current)}. Use the arrow keys to choose a route, Enter or Space to drop, Escape to cancel.`);
    },
    [announce, canEdit, index, store, targetName],
  );

  const cancelCarry = useCallback(() => {
    if (store.getState().carry) store.setState({ carry: null });
  }, [store]);

  // An inbound deleted while carried is dropped from the hand.
  useEffect(() => {
    const carry = store.getState().carry;
    if (carry && !index.inboundById.has(carry.inboundId)) store.setState({ carry: null });
  }, [index, store]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const carry = store.getState().carry;
      if (!carry) return;
      const inbound = index.inboundById.get(carry.inboundId);
      if (!inbound) {
        store.setState({ carry: null });
        return;
      }
      const action = carryKeyAction(e.key, carry.index, index.targets.length);
      if (!action) return;
      if (action.kind !== "cancel" || action.consume) {
        e.preventDefault();
        e.stopPropagation();
      }
      if (action.kind === "drop") {
        store.setState({ carry: null });
        const to = index.targets[carry.index] ?? null;
        if (to === effectiveRouteId(inbound, index.routeById)) announce(`${inbound.name} stays in ${targetName(to)}.`);
        else move(inbound.id, to);
      } else if (action.kind === "cancel") {
        store.setState({ carry: null });
        announce(`Cancelled: ${inbound.name} stays where it was.`);
      } else {
        const t = index.targets[action.index] ?? null;
        store.setState({ carry: { inboundId: carry.inboundId, index: action.index } });
        announce(`Over ${t === null ? "Unassigned" : `route ${targetName(t)}`}.`);
        reveal(t);
      }
    };
    window.addEventListener("keydown", onKey, true);
    return () => window.removeEventListener("keydown", onKey, true);
  }, [announce, index, move, reveal, store, targetName]);

  return { startCarry, cancelCarry };
}
