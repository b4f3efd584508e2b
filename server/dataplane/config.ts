/**
 * What every server's agent must run (GET /api/agent/config, DESIGN §6), built per cluster
 * once per change and kept in memory: a fleet of long-polling agents costs one build per
 * change, not one per agent.
 *
 * This is the one place where the Reality private key leaves the database.
 */
import "server-only";
import { and, asc, eq, inArray } from "drizzle-orm";
import type { DbOrTx } from "@/db/client";
import { clusters, inbounds, servers, subscribers } from "@/db/schema";
import { mayConnect } from "@/server/usage/access";
import { MAX_NEIGHBOURS, type AgentConfig, type AgentInbound, type AgentNeighbour, type AgentUser } from "@/core/agent-wire";
import { usesPath, type InboundTransport, type SsMethod } from "@/core/inbound-protocols";
import { byEmail, usersHash, usersHashInSteps, versionHasher } from "@/core/config-version";

export const REALITY_FLOW = "xtls-rprx-vision";

/**
 * The flow the share links of an inbound carry (server/subscription/formats.ts): Vision for
 * VLESS over tcp with Reality, none for every other combination (Vision needs raw tcp).
 */
export function flowFor(security: "reality" | "tls" | "none", protocol = "vless", transport = "tcp"): "" | typeof REALITY_FLOW {
  return security === "reality" && protocol === "vless" && transport === "tcp" ? REALITY_FLOW : "";
}

/** One server's config without its users (shared by the whole cluster). */
export interface BuiltConfig {
  version: string;
  rest: Omit<AgentConfig, "version" | "users">;
  /** This server's version with other users (matching a delta's `from`: config-journal.ts). */
  versionWith: (usersHash: string) => string;
}

export interface ClusterConfigs {
  clusterId: string;
  builtAtMs: number;
  byServer: Map<string, BuiltConfig>;
  /** Serialised once per build: every server of the cluster gets the same users. */
  users: AgentUser[];
  /**
   * `users` as JSON, made on the first full config asked for and kept: a change answered by
   * deltas alone never serialises a million users.
   */
  usersJson: () => string;
  /** core/config-version.ts usersHash of `users`: the key of the config journal. */
  usersHash: string;
  /** The soonest expiry of an allowed subscriber: the config changes then. */
  nextExpiryMs: number | null;
}

/** The JSON body for one server: strings joined, so the users are not serialised per server. */
export function configBody(c: ClusterConfigs, b: BuiltConfig): string {
  const { server, reportIntervalS, inbounds: ibs, neighbours, allowedPrivateDestinations: allowed } = b.rest;
  return (
    `{"version":${JSON.stringify(b.version)},"server":${JSON.stringify(server)},"reportIntervalS":${reportIntervalS},` +
    `"inbounds":${JSON.stringify(ibs)},"users":${c.usersJson()},"neighbours":${JSON.stringify(neighbours)}` +
    `${allowed ? `,"allowedPrivateDestinations":${JSON.stringify(allowed)}` : ""}}`
  );
}

/** The parsed config of one server (tests, tools). */
export function configOf(c: ClusterConfigs, serverId: string): AgentConfig | null {
  const b = c.byServer.get(serverId);
  return b ? { version: b.version, ...b.rest, users: c.users } : null;
}

type InboundRow = typeof inbounds.$inferSelect;

function evenShortIds(ids: readonly string[]): string[] {
  const ok = ids.filter((id) => /^([0-9a-f]{2}){0,8}$/.test(id));
  return ok.length > 0 ? ok : [""];
}

/** The transport's fields, all left out for tcp (agents from before issue 26 know none of them). */
function transportFields(i: InboundRow): Pick<AgentInbound, "transport" | "path" | "host" | "serviceName"> {
  if (i.transport === "tcp") return {};
  return {
    transport: i.transport as InboundTransport,
    ...(usesPath(i.transport as InboundTransport) ? { path: i.path ?? "/", ...(i.host ? { host: i.host } : {}) } : {}),
    ...(i.transport === "grpc" ? { serviceName: i.serviceName ?? "grpc" } : {}),
  };
}

/** The inbound as the core needs it; null pieces are what the security does not use. */
export function agentInbound(i: InboundRow): AgentInbound {
  const serverNames = i.realityServerNames.length > 0 ? i.realityServerNames : i.sni ? [i.sni] : [];
  const dest = i.realityDest ?? (i.sni ? `${i.sni}:443` : null);
  // Without keys, names or dest the core cannot serve it: null, and the agent reports it unserved.
  const reality =
    i.security === "reality" && i.realityPrivateKey && i.realityPublicKey && serverNames.length > 0 && dest
      ? {
          privateKey: i.realityPrivateKey,
          publicKey: i.realityPublicKey,
          // Only the ids Xray can decode (even-length hex): one odd id stored before the rule
          // would otherwise make the whole config invalid for every agent.
          shortIds: evenShortIds(i.realityShortIds),
          serverNames,
          dest,
        }
      : null;
  const tls = i.security === "tls" && i.tlsCertificateFile && i.tlsKeyFile ? { certificateFile: i.tlsCertificateFile, keyFile: i.tlsKeyFile } : null;
  return {
    id: i.id,
    tag: `in-${i.port}`,
    name: i.name,
    port: i.port,
    protocol: i.protocol as AgentInbound["protocol"],
    ...transportFields(i),
    ...(i.protocol === "shadowsocks" && i.ssMethod ? { shadowsocks: { method: i.ssMethod as SsMethod, serverKey: i.ssServerKey } } : {}),
    security: i.security,
    sni: i.sni,
    flow: flowFor(i.security, i.protocol, i.transport),
    tls,
    reality,
  };
}

/**
 * The servers one server checks: all other enabled ones, or in clusters larger than
 * MAX_NEIGHBOURS the MAX_NEIGHBOURS that follow it in id order (a ring), so every server is
 * still watched by as many observers as it watches.
 */
export function neighboursOf(enabledById: readonly AgentNeighbour[], serverId: string): AgentNeighbour[] {
  const others = enabledById.filter((n) => n.serverId !== serverId);
  if (others.length <= MAX_NEIGHBOURS) return others;
  const start = others.findIndex((n) => n.serverId > serverId);
  const from = start === -1 ? 0 : start;
  return Array.from({ length: MAX_NEIGHBOURS }, (_, k) => others[(from + k) % others.length]!);
}

/** Lets the event loop answer other requests between steps of a long computation. */
const yieldToEvents = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Each user's canonical JSON, kept while its object lives: a patch hashes mostly the same users again. */
const userJsonCache = new WeakMap<AgentUser, string>();

/** The columns of a subscriber that decide whether, and as whom, the config has them. */
const userColumns = {
  id: subscribers.id,
  vlessUuid: subscribers.vlessUuid,
  enabled: subscribers.enabled,
  expiresAt: subscribers.expiresAt,
  trafficLimitBytes: subscribers.trafficLimitBytes,
  trafficUsedBytes: subscribers.trafficUsedBytes,
};

/** Builds the config of every server of one cluster from the database. */
export async function buildClusterConfigs(db: DbOrTx, clusterId: string, nowMs = Date.now()): Promise<ClusterConfigs> {
  const [[cluster], serverRows, inboundRows, subscriberRows] = await Promise.all([
    db.select({ reportIntervalS: clusters.reportIntervalS, allowedPrivateDestinations: clusters.allowedPrivateDestinations }).from(clusters).where(eq(clusters.id, clusterId)),
    db
      .select({ id: servers.id, name: servers.name, address: servers.address, enabled: servers.enabled })
      .from(servers)
      .where(eq(servers.clusterId, clusterId))
      .orderBy(asc(servers.id)),
    db.select().from(inbounds).where(eq(inbounds.clusterId, clusterId)).orderBy(asc(inbounds.port), asc(inbounds.id)),
    db
      .select(userColumns)
      .from(subscribers)
      .where(and(eq(subscribers.clusterId, clusterId), eq(subscribers.enabled, true)))
      .orderBy(asc(subscribers.id)),
  ]);
  const out: ClusterConfigs = { clusterId, builtAtMs: nowMs, byServer: new Map(), users: [], usersJson: () => "[]", usersHash: usersHash([]), nextExpiryMs: null };
  if (!cluster) return out;

  const users: AgentUser[] = [];
  for (const s of subscriberRows) {
    if (!mayConnect(s, nowMs)) continue;
    users.push({ id: s.vlessUuid, email: s.id });
    if (s.expiresAt && (out.nextExpiryMs === null || s.expiresAt.getTime() < out.nextExpiryMs)) out.nextExpiryMs = s.expiresAt.getTime();
  }
  // Already in id order; sorted again in the order agents rebuild deltas in (code units), so
  // the two never depend on how the database collates.
  users.sort(byEmail);
  out.users = users;
  out.usersJson = usersJsonOf(users);
  out.usersHash = await usersHashInSteps(users, userJsonCache, yieldToEvents);
  const byServerInbounds = new Map<string, InboundRow[]>();
  for (const i of inboundRows) {
    const list = byServerInbounds.get(i.serverId) ?? [];
    list.push(i);
    byServerInbounds.set(i.serverId, list);
  }
  const neighboursAll: AgentNeighbour[] = serverRows
    .filter((s) => s.enabled)
    .map((s) => ({ serverId: s.id, name: s.name, address: s.address, ports: (byServerInbounds.get(s.id) ?? []).map((i) => i.port) }));

  for (const s of serverRows) {
    const rest: BuiltConfig["rest"] = {
      server: { id: s.id, name: s.name, address: s.address, enabled: s.enabled },
      reportIntervalS: cluster.reportIntervalS,
      inbounds: (byServerInbounds.get(s.id) ?? []).map(agentInbound),
      neighbours: neighboursOf(neighboursAll, s.id),
      // Left out when empty: agents from before the field parse the config strictly.
      ...(cluster.allowedPrivateDestinations.length > 0 ? { allowedPrivateDestinations: cluster.allowedPrivateDestinations } : {}),
    };
    const versionWith = versionHasher(rest);
    out.byServer.set(s.id, { version: versionWith(out.usersHash), rest, versionWith });
  }
  return out;
}

/** JSON.stringify(users), made once when first asked for. */
function usersJsonOf(users: readonly AgentUser[]): () => string {
  let json: string | null = null;
  return () => (json ??= JSON.stringify(users));
}

/** Where `email` is, or would go, in users sorted by email (byEmail: code units). */
function positionOf(users: readonly AgentUser[], email: string): number {
  let lo = 0;
  let hi = users.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (users[mid]!.email < email) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * `users` (sorted by email) without the emails of `leaving`, with `joining` added in order:
 * a copy, so builds already handed out keep their users. A binary search per change: the
 * cost of a few changes stays far below a walk over a million users.
 */
export function replaceUsers(users: readonly AgentUser[], leaving: Iterable<string>, joining: readonly AgentUser[]): AgentUser[] {
  const out = users.slice();
  for (const email of leaving) {
    const i = positionOf(out, email);
    if (out[i]?.email === email) out.splice(i, 1);
  }
  for (const u of joining) {
    const i = positionOf(out, u.email);
    if (out[i]?.email === u.email) out[i] = u;
    else out.splice(i, 0, u);
  }
  return out;
}

/**
 * The cluster's configs after a change to the named subscribers only: their rows read again
 * and `previous` patched (issue 23, point 4). Everything but the users is `previous`'s; the
 * result equals buildClusterConfigs' for the same database as long as only those subscribers
 * changed since `previous` (a subscriber who expired since is dropped at `nextExpiryMs`, when
 * the config hub rebuilds the cluster).
 */
export async function patchClusterConfigs(db: DbOrTx, previous: ClusterConfigs, subscriberIds: readonly string[], nowMs = Date.now()): Promise<ClusterConfigs> {
  const ids = [...new Set(subscriberIds.map((id) => id.toLowerCase()))];
  const rows = ids.length === 0 ? [] : await db.select(userColumns).from(subscribers).where(and(eq(subscribers.clusterId, previous.clusterId), inArray(subscribers.id, ids)));
  let nextExpiryMs = previous.nextExpiryMs;
  const joining: AgentUser[] = [];
  for (const s of rows) {
    if (!s.enabled || !mayConnect(s, nowMs)) continue;
    joining.push({ id: s.vlessUuid, email: s.id });
    if (s.expiresAt && (nextExpiryMs === null || s.expiresAt.getTime() < nextExpiryMs)) nextExpiryMs = s.expiresAt.getTime();
  }
  const users = replaceUsers(previous.users, ids, joining.sort(byEmail));
  const hash = await usersHashInSteps(users, userJsonCache, yieldToEvents);
  const byServer = new Map<string, BuiltConfig>();
  for (const [id, b] of previous.byServer) byServer.set(id, { ...b, version: b.versionWith(hash) });
  return { clusterId: previous.clusterId, builtAtMs: nowMs, byServer, users, usersJson: usersJsonOf(users), usersHash: hash, nextExpiryMs };
}
