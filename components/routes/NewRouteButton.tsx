"use client";
import { useState } from "react";
import { useCanEdit } from "@/components/AppShell";
import { buttonClass } from "@/components/ui/Field";
import { RouteWizard } from "./RouteWizard";

/** The "New route" button that opens the route wizard; viewers don't see it. */
export function NewRouteButton({ clusterId }: { clusterId: string }) {
  const canEdit = useCanEdit();
  const [open, setOpen] = useState(false);
  if (!canEdit) return null;
  return (
    <>
      <button type="button" className={buttonClass} onClick={() => setOpen(true)}>
        <span aria-hidden="true">+</span> New route
      </button>
      {open && <RouteWizard clusterId={clusterId} onClose={() => setOpen(false)} />}
    </>
  );
}
