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
import { clusters, inbounds, planRoutes, plans, servers, subscribers } from "@/db/schema";
import { mayConnect } from "@/server/usage/access";
import { MAX_NEIGHBOURS, sameAgentUser, type AgentConfig, type AgentInbound, type AgentNeighbour, type AgentUser } from "@/core/agent-wire";
import { usesPath, type InboundTransport, type SsMethod } from "@/core/inbound-protocols";
import { UserList } from "./user-list";
import { byEmail, legacyUsersHashInSteps, legacyVersionHasher, UsersDigest, versionHasher } from "@/core/config-version";

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
  /** Scheme 2 (core/config-version.ts): what agents sending ?scheme=2 check, and the hub's key. */
  version: string;
  rest: Omit<AgentConfig, "version" | "users">;
  /** This server's version with other users (matching a delta's `from`: config-journal.ts). */
  versionWith: (usersHash: string) => string;
  /** This server's scheme-1 version with other users (agents from before scheme 2: legacyVersion). */
  legacyVersionWith: (legacyUsersHash: string) => string;
}

export interface ClusterConfigs {
  clusterId: string;
  builtAtMs: number;
  byServer: Map<string, BuiltConfig>;
  /** Every server of the cluster gets the same users, sorted by email, in chunks (user-list.ts). */
  userList: UserList;
  /** userList as one array, made on first use (tests and tools; the panel's own paths use userList). */
  readonly users: AgentUser[];
  /** The users' scheme-2 digest (core/config-version.ts), patched per change. */
  usersDigest: UsersDigest;
  /** usersDigest.hash: the key of the config journal. */
  usersHash: string;
  /**
   * The users' scheme-1 hash, computed (in steps) when the first agent from before scheme 2
   * asks for this build, then kept: a fleet of upgraded agents never pays for it.
   */
  legacyUsersHash: () => Promise<string>;
  /** The soonest expiry of an allowed subscriber: the config changes then. */
  nextExpiryMs: number | null;
  /** Which plan each user carries (issue 27 point 2): a patch reads subscribers, not plans. */
  plans: PlanTags;
  /**
   * A patch's exact change from the build it patched (whose users hash is `fromUsersHash`):
   * the journal takes it instead of walking two lists of a million users.
   */
  patchedFrom?: { fromUsersHash: string; added: AgentUser[]; removed: AgentUser[] };
}

/** The server's version in scheme 1, for an agent from before scheme 2. */
export async function legacyVersion(c: ClusterConfigs, b: BuiltConfig): Promise<string> {
  return b.legacyVersionWith(await c.legacyUsersHash());
}

/** Characters of users' JSON per piece of a streamed config body: about 1 MB. */
const PIECE_CHARS = 1_000_000;

/**
 * The JSON body for one server in pieces of about a megabyte of users each, so that a
 * million users' config is compressed and sent as it is written, never held as one string
 * (config-http.ts). `kind` "full" marks the answer to ?delta=1.
 */
export function* configBodyPieces(c: ClusterConfigs, b: BuiltConfig, version = b.version, kind?: "full"): Generator<string> {
  const { server, reportIntervalS, inbounds: ibs, neighbours, allowedPrivateDestinations: allowed } = b.rest;
  let piece =
    `{${kind ? `"kind":${JSON.stringify(kind)},` : ""}"version":${JSON.stringify(version)},"server":${JSON.stringify(server)},` +
    `"reportIntervalS":${reportIntervalS},"inbounds":${JSON.stringify(ibs)},"users":[`;
  let first = true;
  for (const users of c.userList.jsonPieces(PIECE_CHARS)) {
    // The chunks' own JSON without brackets, joined by commas: the same bytes as the whole list's.
    piece += (first ? "" : ",") + users;
    first = false;
    yield piece;
    piece = "";
  }
  yield `${piece}],"neighbours":${JSON.stringify(neighbours)}${allowed ? `,"allowedPrivateDestinations":${JSON.stringify(allowed)}` : ""}}`;
}

/** The whole JSON body for one server as one string (small configs, tests and tools). */
export function configBody(c: ClusterConfigs, b: BuiltConfig, version = b.version, kind?: "full"): string {
  return [...configBodyPieces(c, b, version, kind)].join("");
}

/** The parsed config of one server (tests, tools). */
export function configOf(c: ClusterConfigs, serverId: string): AgentConfig | null {
  const b = c.byServer.get(serverId);
  return b ? { version: b.version, ...b.rest, users: c.users } : null;
}

type InboundRow = typeof inbounds.$inferSelect;

/**
 * The plans of a cluster as its configs carry them (issue 27 point 2): a user on a plan that
 * gives every route carries none and is on every inbound (as before plans); a user on any other
 * plan carries its id and is on the inbounds whose `plans` list it (the inbounds of the plan's
 * routes). An unknown plan id (made after this build) counts as a plan with no route until the
 * next build: the config never grants more than the plan.
 */
export interface PlanTags {
  allRoutes: ReadonlySet<string>;
  /** For a subscriber whose plan is null (none should be: the column is NOT NULL). */
  defaultPlanId: string | null;
}

/** The `plan` a subscriber's user carries: none for a plan that gives every route. */
export function planTag(tags: PlanTags, planId: string | null): string | undefined {
  const id = planId ?? tags.defaultPlanId;
  if (id === null || tags.allRoutes.has(id)) return undefined;
  return id;
}

/**
 * A subscriber as agents see it: the Trojan password only where one was kept from another
 * panel, the plan only where it does not give every route (agents from before either field
 * parse strictly, so configs without them stay readable to them).
 */
function agentUser(s: { vlessUuid: string; id: string; planId: string | null; trojanPassword: string | null }, tags: PlanTags): AgentUser {
  const user: AgentUser = { id: s.vlessUuid, email: s.id };
  if (s.trojanPassword) user.password = s.trojanPassword;
  const plan = planTag(tags, s.planId);
  if (plan !== undefined) user.plan = plan;
  return user;
}

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
export const yieldToEvents = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Users digested between two yields of a build (a step of 50,000 took a few hundred ms on a busy panel). */
const DIGEST_STEP = 10_000;
/** Servers whose configs are hashed between two yields of a build. */
const SERVERS_PER_STEP = 25;

/** The columns of a subscriber that decide whether, and as whom, the config has them. */
const userColumns = {
  id: subscribers.id,
  vlessUuid: subscribers.vlessUuid,
  trojanPassword: subscribers.trojanPassword,
  enabled: subscribers.enabled,
  expiresAt: subscribers.expiresAt,
  trafficLimitBytes: subscribers.trafficLimitBytes,
  trafficUsedBytes: subscribers.trafficUsedBytes,
  planId: subscribers.planId,
};

/** Builds the config of every server of one cluster from the database. */
export async function buildClusterConfigs(db: DbOrTx, clusterId: string, nowMs = Date.now()): Promise<ClusterConfigs> {
  const [[cluster], serverRows, inboundRows, subscriberRows, planRows, planRouteRows] = await Promise.all([
    db
      .select({ reportIntervalS: clusters.reportIntervalS, allowedPrivateDestinations: clusters.allowedPrivateDestinations, defaultPlanId: clusters.defaultPlanId })
      .from(clusters)
      .where(eq(clusters.id, clusterId)),
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
    db.select({ id: plans.id, allRoutes: plans.allRoutes }).from(plans).where(eq(plans.clusterId, clusterId)),
    db.select({ planId: planRoutes.planId, routeId: planRoutes.routeId }).from(planRoutes).where(eq(planRoutes.clusterId, clusterId)),
  ]);
  const tags: PlanTags = { allRoutes: new Set(planRows.filter((p) => p.allRoutes).map((p) => p.id)), defaultPlanId: cluster?.defaultPlanId ?? null };
  if (!cluster) return withUsers(clusterId, nowMs, new Map(), UserList.of([]), UsersDigest.of([], { packed: true }), null, tags);
  // Per route, the plans (other than all-routes ones) that give it: its inbounds accept their users.
  const plansOfRoute = new Map<string, string[]>();
  for (const pr of planRouteRows) {
    if (tags.allRoutes.has(pr.planId)) continue;
    plansOfRoute.set(pr.routeId, [...(plansOfRoute.get(pr.routeId) ?? []), pr.planId]);
  }
  for (const list of plansOfRoute.values()) list.sort();

  const users: AgentUser[] = [];
  let nextExpiryMs: number | null = null;
  for (const s of subscriberRows) {
    if (!mayConnect(s, nowMs)) continue;
    users.push(agentUser(s, tags));
    if (s.expiresAt && (nextExpiryMs === null || s.expiresAt.getTime() < nextExpiryMs)) nextExpiryMs = s.expiresAt.getTime();
  }
  // Already in id order; sorted again in the order agents rebuild deltas in (code units), so
  // the two never depend on how the database collates.
  users.sort(byEmail);
  // Packed: each bucket as its JSON text, not a million user objects for the collector to mark.
  const digest = await UsersDigest.inSteps(users, yieldToEvents, DIGEST_STEP, { packed: true });
  const byServer = new Map<string, BuiltConfig>();
  const byServerInbounds = new Map<string, InboundRow[]>();
  for (const i of inboundRows) {
    const list = byServerInbounds.get(i.serverId) ?? [];
    list.push(i);
    byServerInbounds.set(i.serverId, list);
  }
  const neighboursAll: AgentNeighbour[] = serverRows
    .filter((s) => s.enabled)
    .map((s) => ({ serverId: s.id, name: s.name, address: s.address, ports: (byServerInbounds.get(s.id) ?? []).map((i) => i.port) }));

  let sinceYield = 0;
  for (const s of serverRows) {
    // Each server's rest (its neighbours among them) is hashed here: a thousand servers with a
    // thousand neighbours each held the event loop for seconds in one go.
    if (++sinceYield % SERVERS_PER_STEP === 0) await yieldToEvents();
    const rest: BuiltConfig["rest"] = {
      server: { id: s.id, name: s.name, address: s.address, enabled: s.enabled },
      reportIntervalS: cluster.reportIntervalS,
      inbounds: (byServerInbounds.get(s.id) ?? []).map((i) => {
        const planIds = i.routeId ? plansOfRoute.get(i.routeId) : undefined;
        // Left out when empty: a cluster without such plans gets the configs it got before them.
        return planIds?.length ? { ...agentInbound(i), plans: planIds } : agentInbound(i);
      }),
      neighbours: neighboursOf(neighboursAll, s.id),
      // Left out when empty: agents from before the field parse the config strictly.
      ...(cluster.allowedPrivateDestinations.length > 0 ? { allowedPrivateDestinations: cluster.allowedPrivateDestinations } : {}),
    };
    const versionWith = versionHasher(rest);
    // Scheme 1 only for agents from before scheme 2, when one asks (legacyVersion).
    let legacyWith: ((legacyUsersHash: string) => string) | null = null;
    byServer.set(s.id, { version: versionWith(digest.hash), rest, versionWith, legacyVersionWith: (h) => (legacyWith ??= legacyVersionHasher(rest))(h) });
  }
  return withUsers(clusterId, nowMs, byServer, UserList.of(users), digest, nextExpiryMs, tags);
}

/** A cluster's configs from their parts; the scheme-1 hash is made when first asked for. */
function withUsers(
  clusterId: string,
  nowMs: number,
  byServer: Map<string, BuiltConfig>,
  userList: UserList,
  digest: UsersDigest,
  nextExpiryMs: number | null,
  plans: PlanTags,
): ClusterConfigs {
  let legacyHash: Promise<string> | null = null;
  let flat: AgentUser[] | null = null;
  return {
    clusterId,
    builtAtMs: nowMs,
    byServer,
    userList,
    get users() {
      return (flat ??= userList.toArray());
    },
    usersDigest: digest,
    usersHash: digest.hash,
    // Only for agents from before scheme 2 (one flat copy of the users, then kept).
    legacyUsersHash: () => (legacyHash ??= legacyUsersHashInSteps(userList.toArray(), yieldToEvents)),
    nextExpiryMs,
    plans,
  };
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
    // Moved to another plan: the same user with another `plan`, a delta like an id change.
    joining.push(agentUser(s, previous.plans));
    if (s.expiresAt && (nextExpiryMs === null || s.expiresAt.getTime() < nextExpiryMs)) nextExpiryMs = s.expiresAt.getTime();
  }
  joining.sort(byEmail);
  const added: AgentUser[] = [];
  const removed: AgentUser[] = [];
  const joiningByEmail = new Map(joining.map((u) => [u.email, u]));
  for (const email of ids) {
    const was = previous.userList.find(email);
    const now = joiningByEmail.get(email);
    if (was && now && sameAgentUser(was, now)) continue;
    if (was) removed.push(was);
    if (now) added.push(now);
  }
  const users = previous.userList.replaced(ids, joining);
  // Only the buckets of these subscribers are hashed again (core/config-version.ts UsersDigest).
  const digest = previous.usersDigest.patched(ids, joining);
  const byServer = new Map<string, BuiltConfig>();
  for (const [id, b] of previous.byServer) byServer.set(id, { ...b, version: b.versionWith(digest.hash) });
  const out = withUsers(previous.clusterId, nowMs, byServer, users, digest, nextExpiryMs, previous.plans);
  out.patchedFrom = { fromUsersHash: previous.usersHash, added: added.sort(byEmail), removed: removed.sort(byEmail) };
  return out;
}
