import type { Impact } from "@/core/impact";
import type { AppRouter } from "@/server/api/root";
import type { inferRouterOutputs } from "@trpc/server";

/** The words and shapes of the servers page, kept apart from React so they can be tested. */
export type ServerRow = inferRouterOutputs<AppRouter>["servers"]["list"][number];
export type InboundRow = ServerRow["inbounds"][number];

/** The one dialog the servers page shows at a time, with what it acts on. */
export type DialogState =
  | { kind: "add-server" }
  | { kind: "edit-server"; server: ServerRow }
  | { kind: "delete-server"; server: ServerRow }
  | { kind: "disable-server"; server: ServerRow; impact: Impact }
  | { kind: "token"; serverName: string; token: string; rotated: boolean }
  | { kind: "rotate"; server: ServerRow }
  | { kind: "add-inbound"; server: ServerRow }
  | { kind: "edit-inbound"; server: ServerRow; inbound: InboundRow }
  | { kind: "delete-inbound"; inbound: InboundRow; server: ServerRow }
  | null;

export const ROLE_LABEL: Record<string, string> = { master: "Master", node: "Node", both: "Master + node" };
export const SECURITY_LABEL: Record<string, string> = { reality: "Reality", tls: "TLS", none: "None" };

/** "1 inbound", "2 inbounds". */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** The page's subtitle: how many servers and inbounds the cluster has. */
export function fleetSummary(servers: ReadonlyArray<{ inbounds: readonly unknown[] }>): string {
  const inbounds = servers.reduce((n, s) => n + s.inbounds.length, 0);
  return `${plural(servers.length, "server")} · ${plural(inbounds, "inbound")}`;
}

/** The tail of a server's detail line: its configured capacity, or that the balancer learns it. */
export function capacityText(capacityMbps: number | null | undefined): string {
  return capacityMbps ? ` · ${capacityMbps.toLocaleString("en")} Mbit/s` : " · capacity learned";
}

export function deletedServerNotice(deletedInbounds: number): string {
  return deletedInbounds ? `Server deleted with its ${plural(deletedInbounds, "inbound")}.` : "Server deleted.";
}

export function fallbackNotice(r: { name: string; isFallback: boolean }): string {
  return r.isFallback ? `${r.name} is now its route's fallback.` : `${r.name} is no longer a fallback.`;
}

/** Where a new inbound went: the route the operator chose, a first route made for it, or nowhere yet. */
export function inboundCreatedNotice(defaultRoute: string | null, chosenRoute: string | null): string {
  if (chosenRoute) return `Inbound created in route “${chosenRoute}”.`;
  if (defaultRoute) return `Inbound created. As the cluster's first inbound, it was put in a new route “${defaultRoute}”.`;
  return "Inbound created. It is unassigned until you put it in a route.";
}
