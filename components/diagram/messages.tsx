"use client";
import { useCallback, useEffect, useRef, useState } from "react";

/** Moves announced politely; `announce` is stable and re-renders only the <Announcer>. */
export function useAnnouncer() {
  const bind = useRef<(text: string) => void>(() => {});
  const announce = useCallback((text: string) => bind.current(text), []);
  return { announce, bind };
}

/** The polite live region; its own state, so an announcement re-renders nothing else. */
export function Announcer({ bind }: { bind: React.RefObject<(text: string) => void> }) {
  const [text, setText] = useState("");
  useEffect(() => {
    bind.current = setText;
  }, [bind]);
  return (
    <div role="status" aria-live="polite" className="sr-only" data-testid="diagram-announcer">
      {text}
    </div>
  );
}
