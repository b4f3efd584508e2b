"use client";
import Link from "next/link";
import { MobileMenu } from "./MobileMenu";
import { NavLinks, OperatorLabel } from "./NavLinks";
import type { CurrentOperator } from "./operator";

/** The dark top bar: the product, the pages, the operator and their account buttons (folded into a Menu below md). */
export function AppHeader(props: { operator: CurrentOperator; onChangePassword(): void; onTwoFactor(): void; onLogout(): void; loggingOut: boolean }) {
  const { operator } = props;
  return (
    <header className="fixed-palette relative flex items-center gap-6 border-b border-slate-800 bg-slate-900 px-4 py-2.5 text-slate-100 sm:px-5">
      <Link href="/clusters" className="flex items-center gap-2 font-bold">
        <img src="/favicon.svg" alt="" className="h-6 w-6" /> Routeboard
      </Link>
      <nav aria-label="Main" className="hidden gap-4 text-sm text-slate-300 md:flex">
        <NavLinks role={operator.role} linkClass="hover:text-white" />
      </nav>
      <div className="ml-auto hidden items-center gap-3 text-sm md:flex">
        <OperatorLabel operator={operator} />
        <button type="button" onClick={props.onChangePassword} className="rounded-md px-2 py-1 text-slate-300 hover:bg-slate-800 hover:text-white">
          Change password
        </button>
        <button type="button" onClick={props.onTwoFactor} className="rounded-md px-2 py-1 text-slate-300 hover:bg-slate-800 hover:text-white">
          Two-factor
        </button>
        <button type="button" onClick={props.onLogout} className="rounded-md border border-slate-600 px-3 py-1 hover:bg-slate-800" disabled={props.loggingOut}>
          Log out
        </button>
      </div>
      <MobileMenu operator={operator} onChangePassword={props.onChangePassword} onTwoFactor={props.onTwoFactor} onLogout={props.onLogout} loggingOut={props.loggingOut} />
    </header>
  );
}
