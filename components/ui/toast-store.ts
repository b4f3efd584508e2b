/**
 * The dashboard's toasts as a small store, outside React: the mutation cache (created with
 * the query client, before any component) pushes into it, and <Toaster> renders it.
 */
import { createStore, type StoreApi } from "zustand/vanilla";

export type ToastKind = "success" | "error";

export interface ToastAction {
  label: string;
  onClick(): void;
}

export interface Toast {
  id: number;
  kind: ToastKind;
  text: string;
  action?: ToastAction;
  /**
   * Announced politely (role=status) although an error: the page shows the same failure in
   * place (a form's message), so interrupting the screen reader a second time helps no one.
   */
  polite?: boolean;
}

/** More than this many at once would cover the page: the oldest go first. */
export const MAX_TOASTS = 3;
/** How long a toast stays up (while the pointer is not on it). Errors need longer to read. */
export const TOAST_MS: Readonly<Record<ToastKind, number>> = { success: 6_000, error: 12_000 };

export interface ToastState {
  toasts: Toast[];
  /** Shows a toast and returns its id. */
  push(t: Omit<Toast, "id">): number;
  dismiss(id: number): void;
  /** Changes a toast in place (an Undo that ran turns its toast into the undo's answer). */
  update(id: number, t: Partial<Omit<Toast, "id">>): void;
}

export type ToastStore = StoreApi<ToastState>;

export function createToastStore(): ToastStore {
  let next = 1;
  return createStore<ToastState>((set) => ({
    toasts: [],
    push: (t) => {
      const id = next++;
      set((s) => ({ toasts: [...s.toasts, { ...t, id }].slice(-MAX_TOASTS) }));
      return id;
    },
    dismiss: (id) => set((s) => ({ toasts: s.toasts.filter((t) => t.id !== id) })),
    update: (id, patch) => set((s) => ({ toasts: s.toasts.map((t) => (t.id === id ? { ...t, ...patch, id } : t)) })),
  }));
}
