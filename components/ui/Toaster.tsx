"use client";
import { createContext, useContext, useEffect, useRef, useState } from "react";
import { useStore } from "zustand";
import { TOAST_MS, type Toast, type ToastStore } from "./toast-store";

export const ToastContext = createContext<ToastStore | null>(null);

/** Push toasts from anywhere inside <Providers>: `useToast().push({ kind, text, action })`. */
export function useToast() {
  const store = useContext(ToastContext);
  if (!store) throw new Error("useToast outside <Providers>");
  return store.getState();
}

/**
 * The stack of toasts at the bottom right. Successes are a polite status, failures an
 * alert; each goes away by itself, and waits while the pointer or focus is on it.
 */
export function Toaster({ store }: { store: ToastStore }) {
  const toasts = useStore(store, (s) => s.toasts);
  return (
    <div className="pointer-events-none fixed bottom-4 right-4 z-[60] flex w-[min(26rem,calc(100vw-2rem))] flex-col gap-2" data-testid="toasts">
      {toasts.map((t) => (
        <ToastItem key={t.id} toast={t} onDismiss={() => store.getState().dismiss(t.id)} />
      ))}
    </div>
  );
}

function ToastItem({ toast, onDismiss }: { toast: Toast; onDismiss(): void }) {
  const [paused, setPaused] = useState(false);
  const left = useRef(TOAST_MS[toast.kind]);
  const dismissRef = useRef(onDismiss);
  dismissRef.current = onDismiss;
  // A toast whose text changed (an Undo's answer) gets its full time again.
  useEffect(() => {
    left.current = TOAST_MS[toast.kind];
  }, [toast.kind, toast.text]);
  useEffect(() => {
    if (paused) return;
    const started = performance.now();
    const t = setTimeout(() => dismissRef.current(), left.current);
    return () => {
      clearTimeout(t);
      left.current = Math.max(1000, left.current - (performance.now() - started));
    };
  }, [paused, toast.kind, toast.text]);

  const error = toast.kind === "error";
  const assertive = error && !toast.polite;
  return (
    <div
      role={assertive ? "alert" : "status"}
      aria-live={assertive ? "assertive" : "polite"}
      aria-atomic="true"
      data-kind={toast.kind}
      onMouseEnter={() => setPaused(true)}
      onMouseLeave={() => setPaused(false)}
      onFocus={() => setPaused(true)}
      onBlur={() => setPaused(false)}
      className={`pointer-events-auto flex items-start gap-3 rounded-lg border px-4 py-3 text-sm shadow-lg ${
        error ? "border-red-200 bg-red-50 text-red-800" : "border-emerald-200 bg-white text-slate-800"
      }`}
    >
      <span aria-hidden="true" className={error ? "text-red-600" : "text-emerald-600"}>
        {error ? "!" : "✓"}
      </span>
      <span className="min-w-0 flex-1 break-words">{toast.text}</span>
      {toast.action && (
        <button
          type="button"
          onClick={toast.action.onClick}
          className="shrink-0 rounded px-1.5 font-semibold text-sky-700 underline-offset-2 hover:underline focus:outline-none focus:ring-2 focus:ring-sky-500"
        >
          {toast.action.label}
        </button>
      )}
      <button type="button" onClick={onDismiss} className="shrink-0 text-slate-500 hover:text-slate-900" aria-label="Dismiss message">
        ✕
      </button>
    </div>
  );
}
