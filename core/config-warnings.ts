/**
 * Monitoring configuration warnings (pure, no I/O), in the shape of core/warnings.ts
 * (`{ kind, id, message, … }`) so the warnings panel can list them with the others:
 *  - "probes-disabled": active probes are off for the whole cluster, or for some servers by
 *    override — a dead listener is then only noticed through the agent's own report;
 *  - "no-agent": enabled servers whose agent has never reported, so nothing vouches for their
 *    core and their probes alone decide (on a fresh install: the agent is not installed yet);
 *  - "fallback-down": a route's fallback inbound sits on a server that is itself not healthy,
 *    so the route has no working fallback.
 */
import { effectiveRouteId } from "@/core/topology";
import { STATUS_LABELS, type ServerStatus } from "./status";

/** A server as the warnings see it. */
export interface WarningServer {
  id: string;
  name: string;
  status: string;
  enabled?: boolean;
  /** The effective (cluster + override) `enabled`; defaults to the cluster's. */
  probesEnabled?: boolean;
}

export interface MonitoringWarningInput {
  /** Whether the cluster's probe config has `enabled` (null/undefined config = defaults = on). */
  clusterProbesEnabled: boolean;
  servers: ReadonlyArray<
    WarningServer & {
      /** The agent has never sent a report (absent = unknown, no warning). */
      neverReported?: boolean;
    }
  >;
  inbounds: ReadonlyArray<{ id: string; name: string; serverId: string; routeId: string | null; isFallback: boolean }>;
  routes: ReadonlyArray<{ id: string; name: string }>;
}

export type MonitoringWarning =
  | { kind: "no-agent"; id: string; message: string; serverIds: string[] }
  | { kind: "probes-disabled"; id: string; message: string; serverIds: string[] }
  | {
      kind: "fallback-down";
      id: string;
      message: string;
      routeId: string;
      routeName: string;
      inboundId: string;
      inboundName: string;
      serverId: string;
      serverName: string;
      status: string;
    };

function label(status: string): string {
  return (STATUS_LABELS as Record<string, string>)[status as ServerStatus] ?? status;
}

function list(names: string[]): string {
  if (names.length <= 3) return names.join(", ");
  return `${names.slice(0, 3).join(", ")} and ${names.length - 3} more`;
}

/** A warning about a group of servers, worded for one of them or for several (names listed). */
function serverGroup<K extends "no-agent" | "probes-disabled">(
  kind: K,
  id: string,
  group: ReadonlyArray<{ id: string; name: string }>,
  words: { one(name: string): string; many(count: number, names: string): string },
): { kind: K; id: string; message: string; serverIds: string[] } {
  return {
    kind,
    id,
    serverIds: group.map((s) => s.id),
    message: group.length === 1 ? words.one(group[0]!.name) : words.many(group.length, list(group.map((s) => s.name))),
  };
}

/** Warnings in a stable order: agents never heard from, probes, then fallbacks in route order. */
export function computeMonitoringWarnings(input: MonitoringWarningInput): MonitoringWarning[] {
  const out: MonitoringWarning[] = [];
  const silent = input.servers.filter((s) => s.enabled !== false && s.neverReported === true);
  if (silent.length > 0) {
    out.push(
      serverGroup("no-agent", "no-agent", silent, {
        one: (name) => `${name} has never heard from its agent — install the agent on it (the Servers page gives its token and the install command)`,
        many: (n, names) => `${n} servers have never heard from their agent (${names}) — install the agent on each (the Servers page gives their tokens and the install command)`,
      }),
    );
  }
  if (!input.clusterProbesEnabled) {
    out.push({
      kind: "probes-disabled",
      id: "probes-disabled:cluster",
      serverIds: input.servers.map((s) => s.id),
      message: "Active health probes are turned off for this cluster — a dead listener is only noticed when its agent says so",
    });
  } else {
    const off = input.servers.filter((s) => s.enabled !== false && s.probesEnabled === false);
    if (off.length > 0) {
      out.push(
        serverGroup("probes-disabled", "probes-disabled:servers", off, {
          one: (name) => `Active health probes are turned off for ${name} — a dead listener there is only noticed when its agent says so`,
          many: (n, names) => `Active health probes are turned off for ${n} servers (${names})`,
        }),
      );
    }
  }
  const serverById = new Map(input.servers.map((s) => [s.id, s]));
  const routeById = new Map(input.routes.map((r) => [r.id, r]));
  const order = new Map(input.routes.map((r, i) => [r.id, i]));
  const fallbacks = input.inbounds
    .flatMap((ib) => {
      const routeId = ib.isFallback ? effectiveRouteId(ib, routeById) : null;
      return routeId === null ? [] : [{ ib, route: routeById.get(routeId)! }];
    })
    .sort((a, b) => (order.get(a.route.id) ?? 0) - (order.get(b.route.id) ?? 0));
  for (const { ib, route } of fallbacks) {
    const server = serverById.get(ib.serverId);
    const status = server ? (server.enabled === false ? "disabled" : server.status) : "unknown";
    if (status === "healthy") continue;
    const serverName = server?.name ?? "an unknown server";
    out.push({
      kind: "fallback-down",
      id: `fallback-down:${route.id}`,
      routeId: route.id,
      routeName: route.name,
      inboundId: ib.id,
      inboundName: ib.name,
      serverId: ib.serverId,
      serverName,
      status,
      message: `The fallback of ${route.name} (${ib.name}) is on ${serverName}, which is itself down: ${label(status)}`,
    });
  }
  return out;
}
