"use client";
import type { Impact } from "@/core/impact";
import { plural } from "@/core/plural";
import { ConfirmDialog } from "./Dialog";
import { FlagText } from "@/components/ui/Flag";

/**
 * The question before a change that costs users a route (core/impact.ts): which routes,
 * and how many users get them. `action` says what is about to happen ("Disable de-fra-1").
 */
export function ImpactDialog({
  impact,
  action,
  confirmLabel,
  onConfirm,
  onClose,
  pending,
  error,
}: {
  impact: Impact;
  action: string;
  confirmLabel: string;
  onConfirm(): void;
  onClose(): void;
  pending?: boolean;
  error?: string | null;
}) {
  return (
    <ConfirmDialog title={`${action}?`} confirmLabel={confirmLabel} onConfirm={onConfirm} onClose={onClose} pending={pending} error={error}>
      <ImpactSummary impact={impact} />
    </ConfirmDialog>
  );
}

/** The affected routes and their users, for any confirmation of a risky change. */
export function ImpactSummary({ impact }: { impact: Impact }) {
  if (impact.routes.length === 0) return null;
  const deleted = impact.routes.filter((r) => r.reason === "deleted");
  const emptied = impact.routes.filter((r) => r.reason === "no-available-inbound");
  const these = impact.routes.length === 1 ? "this route" : "these routes";
  return (
    <div className="space-y-2 rounded-md border border-amber-200 bg-amber-50 px-3 py-2 text-amber-950" data-testid="impact">
      {emptied.length > 0 && (
        <p>
          This leaves {emptied.length === 1 ? "a route" : `${emptied.length} routes`} with no available inbound: users cannot connect through{" "}
          {emptied.length === 1 ? "it" : "them"} until a server there is healthy again.
        </p>
      )}
      {deleted.length > 0 && <p>Users lose the deleted route: it leaves their server list.</p>}
      <ul className="list-disc space-y-1 pl-5" aria-label="Affected routes">
        {impact.routes.map((r) => (
          <li key={r.id}>
            <strong>
              <FlagText text={r.name} />
            </strong> — {r.reason === "deleted" ? "deleted" : "no available inbound left"}
          </li>
        ))}
      </ul>
      <p data-testid="impact-users">
        {impact.users === 0 ? `No user gets ${these} right now.` : `${plural(impact.users, "user")} ${impact.users === 1 ? "gets" : "get"} ${these}.`}
      </p>
    </div>
  );
}
