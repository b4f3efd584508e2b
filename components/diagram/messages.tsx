"use client";
import { useCallback, useEffect, useRef, useState } from "react";

/** How long an error stays up unless dismissed. */
const ALERT_MS = 12_000;

export interface AlertMessage {
  id: number;
  text: string;
}

/** Errors as an alert that goes away by itself after a while. */
export function useAlert() {
  const [alert, setAlert] = useState<AlertMessage | null>(null);
  const showAlert = useCallback((text: string) => setAlert({ id: Date.now(), text }), []);
  const dismiss = useCallback(() => setAlert(null), []);
  useEffect(() => {
    if (!alert) return;
    const t = setTimeout(() => setAlert(null), ALERT_MS);
    return () => clearTimeout(t);
  }, [alert]);
  return { alert, showAlert, dismiss };
}

export function AlertToast({ alert, onDismiss }: { alert: AlertMessage | null; onDismiss: () => void }) {
  if (!alert) return null;
  return (
    <div
      key={alert.id}
      role="alert"
      className="absolute bottom-4 left-1/2 z-20 flex max-w-xl -translate-x-1/2 items-start gap-3 rounded-lg border border-red-200 bg-red-50 px-4 py-3 text-sm text-red-800 shadow-lg"
    >
      <span>{alert.text}</span>
      <button type="button" onClick={onDismiss} className="shrink-0 font-semibold text-red-700 hover:text-red-900" aria-label="Dismiss message">
        ✕
      </button>
    </div>
  );
}

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
