"use client";
import Link from "next/link";
import { navLinks } from "./nav";
import type { CurrentOperator } from "./operator";

/** The dashboard-wide pages this operator may open. */
export function NavLinks({ role, linkClass, onNavigate }: { role: CurrentOperator["role"]; linkClass: string; onNavigate?: () => void }) {
  return (
    <>
      {navLinks(role).map((l) => (
        <Link key={l.href} href={l.href} className={linkClass} onClick={onNavigate}>
          {l.label}
        </Link>
      ))}
    </>
  );
}

export function OperatorLabel({ operator }: { operator: CurrentOperator }) {
  return (
    <span data-testid="current-operator">
      {operator.username} <span className="rounded bg-slate-700 px-1.5 py-0.5 text-xs uppercase tracking-wide">{operator.role}</span>
    </span>
  );
}
