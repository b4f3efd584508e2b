"use client";
import { useIsMutating, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";

/** How long "Saved" stays after the last write finished. */
const SAVED_MS = 2000;

/**
 * "Saving…" while any write is in flight, then "Saved" for a moment (not after a failure:
 * its toast says what went wrong). Its own component: only it re-renders on each write.
 */
export function SaveStatus() {
  const inFlight = useIsMutating();
  const queryClient = useQueryClient();
  const [saved, setSaved] = useState(false);
  const before = useRef(0);
  useEffect(() => {
    const was = before.current;
    before.current = inFlight;
    if (inFlight > 0) {
      setSaved(false);
      return;
    }
    if (was === 0) return;
    const last = queryClient.getMutationCache().getAll().at(-1);
    if (last?.state.status === "error") return;
    setSaved(true);
    const t = setTimeout(() => setSaved(false), SAVED_MS);
    return () => clearTimeout(t);
  }, [inFlight, queryClient]);
  return (
    <span role="status" aria-live="polite" data-testid="save-status" className="text-xs font-medium text-slate-500">
      {inFlight > 0 ? "Saving…" : saved ? "Saved" : ""}
    </span>
  );
}
