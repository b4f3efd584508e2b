/** Which pages the header offers and where a visitor without a session is sent; no React here, so it is tested alone. */
export type Role = "owner" | "admin" | "viewer";

/** The dashboard-wide pages an operator of this role may open, in header order. */
export function navLinks(role: Role): Array<{ href: string; label: string }> {
  const links = [{ href: "/clusters", label: "Clusters" }];
  if (role !== "viewer") links.push({ href: "/alerts", label: "Alerts" });
  if (role === "owner") links.push({ href: "/team", label: "Team" });
  if (role !== "viewer") links.push({ href: "/tokens", label: "API tokens" });
  return links;
}

/**
 * Where the shell sends a visitor once the session status is known: to setup before the
 * first operator exists, to login (coming back to this very page and query) without a
 * session, nowhere with one.
 */
export function shellRedirect(status: { needsSetup: boolean; operator: unknown } | undefined, here: string): string | null {
  if (!status) return null;
  if (status.needsSetup) return "/setup";
  if (!status.operator) return `/login?next=${encodeURIComponent(here)}`;
  return null;
}
