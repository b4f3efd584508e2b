"use client";
import { useEffect, useId, useRef, useState } from "react";
import { createPortal } from "react-dom";
import { buttonClass, secondaryButtonClass } from "./Field";
import { FormAlert } from "./FormAlert";

/**
 * A modal dialog: role="dialog" named by its heading, Escape closes, focus moves in on open
 * and back to where it was on close, Tab stays inside.
 */
export function Dialog({
  title,
  description,
  onClose,
  children,
  size = "md",
}: {
  title: string;
  description?: React.ReactNode;
  onClose: () => void;
  children: React.ReactNode;
  size?: "sm" | "md" | "lg";
}) {
  const titleId = useId();
  const descId = useId();
  const ref = useRef<HTMLDivElement>(null);
  const onCloseRef = useRef(onClose);
  onCloseRef.current = onClose;
  // Rendered into <body>: a dialog opened from inside the (CSS-transformed) diagram must
  // still cover the window.
  const [host, setHost] = useState<HTMLElement | null>(null);
  useEffect(() => setHost(document.body), []);

  useEffect(() => {
    if (!host) return;
    const previous = document.activeElement as HTMLElement | null;
    const el = ref.current;
    const first = el?.querySelector<HTMLElement>("[data-autofocus]") ?? el?.querySelector<HTMLElement>("input, select, textarea, button:not([data-dialog-close])");
    first?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") {
        e.stopPropagation();
        onCloseRef.current();
      } else if (e.key === "Tab" && el) {
        const focusable = [...el.querySelectorAll<HTMLElement>("a[href], button:not([disabled]), input:not([disabled]), select, textarea, [tabindex]:not([tabindex='-1'])")].filter(
          (f) => f.offsetParent !== null,
        );
        if (focusable.length === 0) return;
        const [head, tail] = [focusable[0]!, focusable[focusable.length - 1]!];
        if (e.shiftKey && document.activeElement === head) {
          e.preventDefault();
          tail.focus();
        } else if (!e.shiftKey && document.activeElement === tail) {
          e.preventDefault();
          head.focus();
        }
      }
    };
    document.addEventListener("keydown", onKey);
    const overflow = document.body.style.overflow;
    document.body.style.overflow = "hidden";
    return () => {
      document.removeEventListener("keydown", onKey);
      document.body.style.overflow = overflow;
      previous?.focus?.();
    };
  }, [host]);

  const width = size === "sm" ? "max-w-md" : size === "lg" ? "max-w-3xl" : "max-w-xl";
  if (!host) return null;
  return createPortal(
    <div className="fixed inset-0 z-50 flex items-start justify-center overflow-y-auto bg-black/50 p-3 sm:p-10">
      <div
        ref={ref}
        role="dialog"
        aria-modal="true"
        aria-labelledby={titleId}
        aria-describedby={description ? descId : undefined}
        className={`relative w-full ${width} rounded-xl bg-white shadow-2xl ring-1 ring-slate-900/10`}
      >
        <div className="flex items-start justify-between gap-4 border-b border-slate-200 px-4 py-4 sm:px-6">
          <div>
            <h2 id={titleId} className="text-lg font-semibold text-slate-900">
              {title}
            </h2>
            {description && (
              <div id={descId} className="mt-1 text-sm text-slate-600">
                {description}
              </div>
            )}
          </div>
          <button
            type="button"
            data-dialog-close
            onClick={onClose}
            aria-label="Close"
            className="-mr-2 rounded-md p-1.5 text-slate-500 hover:bg-slate-100 hover:text-slate-800"
          >
            <span aria-hidden="true" className="block h-5 w-5 text-xl leading-5">
              ×
            </span>
          </button>
        </div>
        <div className="px-4 py-5 sm:px-6">{children}</div>
      </div>
    </div>,
    host,
  );
}

/** The footer row of a dialog's form. */
export function DialogActions({ children }: { children: React.ReactNode }) {
  return <div className="mt-6 flex flex-wrap items-center justify-end gap-2 border-t border-slate-100 pt-4">{children}</div>;
}

/**
 * The end of every dialog form: the form-level error (if any), Cancel, and the submit
 * button that says "Saving…" while the request runs. `note` sits on the left.
 */
export function FormFooter({
  error,
  pending,
  submitLabel,
  onCancel,
  note,
  wide,
}: {
  error?: string | null;
  pending: boolean;
  submitLabel: string;
  onCancel(): void;
  note?: React.ReactNode;
  /** Span both columns of a two-column form grid. */
  wide?: boolean;
}) {
  return (
    <div className={wide ? "sm:col-span-2" : undefined}>
      {error && <FormAlert>{error}</FormAlert>}
      <DialogActions>
        {note !== undefined && <span className="mr-auto text-sm text-slate-500">{note}</span>}
        <button type="button" className={secondaryButtonClass} onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className={buttonClass} disabled={pending}>
          {pending ? "Saving…" : submitLabel}
        </button>
      </DialogActions>
    </div>
  );
}

/** A yes/no question before a destructive change. */
export function ConfirmDialog({
  title,
  children,
  confirmLabel,
  onConfirm,
  onClose,
  pending,
  error,
}: {
  title: string;
  children: React.ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  onClose: () => void;
  pending?: boolean;
  error?: string | null;
}) {
  return (
    <Dialog title={title} onClose={onClose} size="sm">
      <div className="space-y-3 text-sm text-slate-700">{children}</div>
      {error && <FormAlert className="mt-3">{error}</FormAlert>}
      <DialogActions>
        <button type="button" onClick={onClose} className="inline-flex items-center justify-center rounded-md border border-slate-300 bg-white px-4 py-2 text-sm font-medium text-slate-700 hover:bg-slate-50">
          Cancel
        </button>
        <button
          type="button"
          onClick={onConfirm}
          disabled={pending}
          className="inline-flex items-center justify-center rounded-md bg-red-600 px-4 py-2 text-sm font-semibold text-white shadow-sm hover:bg-red-700 disabled:opacity-60"
        >
          {pending ? "Working…" : confirmLabel}
        </button>
      </DialogActions>
    </Dialog>
  );
}
