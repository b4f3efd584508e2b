/**
 * What went wrong with a form or an action, in red above or below its buttons, announced to
 * screen readers (role="alert"). `className` places it (margins, grid columns).
 */
export function FormAlert({ children, className }: { children: React.ReactNode; className?: string }) {
  return <p role="alert" className={`${className ? `${className} ` : ""}rounded-md bg-red-50 px-3 py-2 text-sm text-red-700`}>{children}</p>;
}
