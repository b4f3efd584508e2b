/**
 * When a route is in panic (DESIGN §2), and why, in words. One rule for the balancer's
 * gauge, the warnings and the diagram: a non-empty route is in panic when none of its
 * inbounds, fallback included, is available: on an available server and served by it. Then
 * the balancer has no candidate and no usable fallback, and picks among every inbound of an
 * enabled server that serves it.
 * Pure and browser-safe.
 */
import { plural } from "./plural";
import { isAvailable } from "./status";

export interface PanicMember {
  serverId: string;
  /**
   * Why the inbound itself is out of the balancer's choice (its server does not serve it:
   * issue 25); null or absent = it is not. Such an inbound is never picked, not even in panic.
   */
  unavailable?: string | null;
}

/**
 * The rule itself: a non-empty route none of whose inbounds is available (on an available
 * server and not unavailable itself).
 */
export function isRouteInPanic(members: readonly PanicMember[], available: (serverId: string) => boolean): boolean {
  if (members.length === 0) return false;
  for (const m of members) if (!m.unavailable && available(m.serverId)) return false;
  return true;
}

export interface RoutePanic {
  /** Distinct servers of the route, by why each is out of rotation. */
  down: number;
  disabled: number;
  pending: number;
  /** Inbounds their (available) server does not serve. */
  unserved: number;
  /**
   * Whether users still get a line for this route: in panic the balancer picks among the
   * inbounds of enabled servers, so a route whose servers are all disabled gives none.
   */
  serving: boolean;
  /** "every server down", "2 servers down, 1 disabled", … */
  why: string;
  /** "Panic: no available inbound — every server down". */
  reason: string;
  /** What users get meanwhile, one sentence. */
  consequence: string;
}

/**
 * The route's panic and its explanation, or null when it is not in panic (empty, or an
 * inbound on an available server). `statusOf` gives a server's status (DESIGN §3); an
 * unknown server counts as down, as the balancer treats a server without metrics.
 */
export function routePanic(members: readonly PanicMember[], statusOf: (serverId: string) => string | null | undefined): RoutePanic | null {
  if (!isRouteInPanic(members, (id) => isAvailable(statusOf(id)))) return null;
  const seen = new Set<string>();
  let down = 0;
  let disabled = 0;
  let pending = 0;
  let unserved = 0;
  // In panic the balancer picks among the inbounds of enabled servers that serve them.
  let serving = false;
  for (const m of members) {
    const status = statusOf(m.serverId);
    if (status !== "disabled" && !m.unavailable) serving = true;
    // An inbound its healthy server does not serve is why; a down server's is counted as down.
    if (m.unavailable && isAvailable(status)) {
      unserved++;
      continue;
    }
    if (seen.has(m.serverId)) continue;
    seen.add(m.serverId);
    if (status === "disabled") disabled++;
    else if (status === "pending") pending++;
    else down++;
  }
  const servers = seen.size;
  let why: string;
  if (servers === 0) why = unserved === 1 ? "its only inbound is not served by its server" : "no inbound is served by its server";
  else if (unserved > 0) {
    const parts = [`${plural(unserved, "inbound")} not served`];
    if (down > 0) parts.push(`${plural(down, "server")} down`);
    if (disabled > 0) parts.push(`${disabled} disabled`);
    if (pending > 0) parts.push(`${pending} waiting for a first check`);
    why = parts.join(", ");
  } else if (down === servers) why = servers === 1 ? "its only server is down" : "every server down";
  else if (disabled === servers) why = servers === 1 ? "its only server is disabled" : "every server disabled";
  else if (pending === servers) why = servers === 1 ? "its only server is waiting for its first check" : "every server is waiting for its first check";
  else {
    const parts: string[] = [];
    if (down > 0) parts.push(`${plural(down, "server")} down`);
    if (disabled > 0) parts.push(`${disabled} disabled`);
    if (pending > 0) parts.push(`${pending} waiting for a first check`);
    why = parts.join(", ");
  }
  return {
    down,
    disabled,
    pending,
    unserved,
    serving,
    why,
    reason: `Panic: no available inbound — ${why}`,
    consequence: serving
      ? "Users get any inbound of an enabled server that serves it, up or not, until one is available again."
      : disabled === servers && unserved === 0
        ? "Every server is disabled: users get no line for this route."
        : "No inbound can be handed out: users get no line for this route until one is served again.",
  };
}
