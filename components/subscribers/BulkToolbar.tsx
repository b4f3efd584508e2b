"use client";
import { secondaryButtonClass } from "@/components/ui/Field";
import type { BulkKind } from "./BulkDialog";
import { smallButton } from "@/components/ui/buttons";

const ACTIONS: Array<{ kind: BulkKind; label: string; danger?: boolean }> = [
  { kind: "enable", label: "Enable" },
  { kind: "disable", label: "Disable" },
  { kind: "extend", label: "Extend expiry…" },
  { kind: "resetUsage", label: "Reset usage" },
  { kind: "setPlan", label: "Change plan…" },
  { kind: "delete", label: "Delete", danger: true },
];

/** What is selected, widening it to every match, and the bulk actions on it. */
export function BulkToolbar({
  total,
  selectedCount,
  allMatching,
  canSelectAllMatching,
  onSelectAllMatching,
  onClear,
  onAction,
}: {
  total: number;
  selectedCount: number;
  allMatching: boolean;
  /** The whole page is selected and more subscribers match than are selected. */
  canSelectAllMatching: boolean;
  onSelectAllMatching: () => void;
  onClear: () => void;
  onAction: (kind: BulkKind) => void;
}) {
  return (
    <div role="toolbar" aria-label="Bulk actions" className="mb-3 flex flex-wrap items-center gap-2 rounded-md border border-sky-200 bg-sky-50 px-3 py-2 text-sm">
      <span className="font-medium text-sky-900" data-testid="selection-count">
        {allMatching ? `All ${total.toLocaleString("en")} matching selected` : `${selectedCount.toLocaleString("en")} selected`}
      </span>
      {!allMatching && canSelectAllMatching && (
        <button type="button" className={smallButton} onClick={onSelectAllMatching}>
          Select all {total.toLocaleString("en")} matching
        </button>
      )}
      <button type="button" className={smallButton} onClick={onClear}>
        Clear selection
      </button>
      <span className="mx-1 h-4 w-px bg-sky-200" />
      {ACTIONS.map((a) => (
        <button key={a.kind} type="button" className={a.danger ? `${secondaryButtonClass} text-red-700` : secondaryButtonClass} onClick={() => onAction(a.kind)}>
          {a.label}
        </button>
      ))}
    </div>
  );
}
