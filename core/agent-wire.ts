/**
 * The wire contract between the panel and the agent on every VPN server (DESIGN §3, §6):
 * - `GET /api/agent/config`: what the server's core must serve (agentConfigSchema);
 * - `POST /api/agent/report`: health, load and per-user traffic (agentReportSchema);
 * - `POST /api/agent/heartbeat`: alive, and every LOAD_INTERVAL_S the load (heartbeatBodySchema).
 * The panel, the agent and the fleet simulator all validate with these schemas, so a field
 * is named the same everywhere. Browser-safe: zod only, no Node imports.
 *
 * Numeric bounds match the database columns they land in (integer = 2^31 − 1, bigint byte
 * counters), so a schema-valid report can never fail on insert.
 */
import { z } from "zod";
import { parseAllowedDestination } from "./edge";
import { PROTOCOLS, SS_METHODS, TRANSPORTS } from "./inbound-protocols";

/** Largest value of a PostgreSQL `integer` column. */
export const PG_INT_MAX = 2_147_483_647;
/** 100 Tbit/s: far above any link, far below where doubles lose meaning. */
export const MAX_BPS = 1e14;
/** One minute: a neighbour check slower than that is a failure, not a measurement. */
export const MAX_RTT_MS = 60_000;
/** Bytes one user may move in one report: 1 PB, absurd on purpose (bigint column, safe integer). */
export const MAX_USER_BYTES_PER_REPORT = 1e15;
/** Users per report: every subscriber of a large cluster may be online at once. */
export const MAX_REPORT_USERS = 200_000;
export const MAX_NEIGHBOURS = 1000;
/** Longest long-poll of GET /api/agent/config?wait=<s>. */
export const MAX_CONFIG_WAIT_S = 60;

// ---------------------------------------------------------------------------
// Agent report: POST /api/agent/report
// ---------------------------------------------------------------------------

export const neighbourCheckSchema = z
  .object({
    serverId: z.uuid(),
    ok: z.boolean(),
    /** Round-trip of the TCP connect in ms; null when the check failed. */
    rttMs: z.number().min(0).max(MAX_RTT_MS).nullable(),
  })
  .strict();

/** Traffic of one user since the previous report, in bytes (the core's counters, reset on read). */
export const userTrafficSchema = z
  .object({
    /** The `email` key the config handed out for this subscriber. */
    email: z.string().min(1).max(128),
    up: z.int().min(0).max(MAX_USER_BYTES_PER_REPORT),
    down: z.int().min(0).max(MAX_USER_BYTES_PER_REPORT),
  })
  .strict();

/** An inbound of the config that this server's core does not serve (e.g. Reality on v2ray). */
export const unservedInboundSchema = z
  .object({
    inboundId: z.uuid(),
    reason: z.string().min(1).max(500),
  })
  .strict();

/**
 * A served inbound whose port did not accept a TCP connection on 127.0.0.1 in this report's
 * listener check (issue 25): the core should serve it and does not. One row per inbound.
 */
export const listenerDownSchema = z
  .object({
    inboundId: z.uuid(),
    port: z.int().min(1).max(65535),
    /** What the connect said: ECONNREFUSED, "no answer within 2000 ms", … */
    error: z.string().min(1).max(200),
  })
  .strict();

export const agentReportSchema = z
  .object({
    listenerAlive: z.boolean(),
    serviceRunning: z.boolean(),
    usersOnline: z.int().min(0).max(PG_INT_MAX),
    rxBps: z.number().min(0).max(MAX_BPS),
    txBps: z.number().min(0).max(MAX_BPS),
    cpu: z.number().min(0).max(100),
    memory: z.number().min(0).max(100),
    neighbours: z.array(neighbourCheckSchema).max(MAX_NEIGHBOURS),
    sentAt: z.iso.datetime({ offset: true }).optional(),
    /**
     * Delivery of per-user traffic exactly once: `instance` is a random id the agent keeps in
     * its state folder, `seq` grows by one per report that carries traffic. The panel stores
     * the last (instance, seq) per server and ignores the traffic of a report it has seen.
     */
    instance: z.string().min(8).max(64).regex(/^[A-Za-z0-9_-]+$/, { error: "expected letters, digits, - and _" }).optional(),
    seq: z.int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
    users: z.array(userTrafficSchema).max(MAX_REPORT_USERS).optional(),
    /** The config version (ETag value) the core is running now. */
    configVersion: z.string().min(1).max(128).optional(),
    /** Why the core rejected the newest config (the previous one keeps running); null = accepted. */
    configError: z.string().max(4000).nullable().optional(),
    unservedInbounds: z.array(unservedInboundSchema).max(1000).optional(),
    /**
     * The served inbounds whose port failed the listener check (`listenerAlive` is then false).
     * Absent (agents before issue 25): the panel knows only that some port failed, not which.
     */
    listenersDown: z.array(listenerDownSchema).max(1000).optional(),
    /** The core this agent drives: "xray" or "v2ray", and its version line. */
    core: z
      .object({ kind: z.enum(["xray", "v2ray"]), version: z.string().max(200) })
      .strict()
      .optional(),
    agentVersion: z.string().max(64).optional(),
  })
  .strict()
  .refine((r) => (r.seq === undefined) === (r.instance === undefined), {
    path: ["seq"],
    error: "seq and instance go together",
  })
  .refine((r) => r.users === undefined || r.seq !== undefined, {
    path: ["users"],
    error: "per-user traffic needs seq and instance, so it is counted once",
  })
  .refine((r) => !(r.listenerAlive && (r.listenersDown?.length ?? 0) > 0), {
    path: ["listenersDown"],
    error: "a listener is down, yet listenerAlive is true",
  })
  .superRefine((r, ctx) => {
    const down = r.listenersDown;
    if (!down) return;
    const seen = new Map<string, number>();
    for (let k = 0; k < down.length; k++) {
      const first = seen.get(down[k]!.inboundId);
      if (first !== undefined) {
        ctx.addIssue({ code: "custom", path: ["listenersDown", k, "inboundId"], message: `duplicate of listenersDown[${first}]: one row per inbound` });
        return;
      }
      seen.set(down[k]!.inboundId, k);
    }
  })
  .superRefine((r, ctx) => {
    // One row per user per report (issue 21): a repeated row was summed without a cap, so one
    // token could push any total past every bound. Emails compare as the panel stores them.
    const users = r.users;
    if (!users) return;
    const seen = new Map<string, number>();
    for (let k = 0; k < users.length; k++) {
      const key = users[k]!.email.toLowerCase();
      const first = seen.get(key);
      if (first !== undefined) {
        ctx.addIssue({ code: "custom", path: ["users", k, "email"], message: `duplicate of users[${first}] (${users[k]!.email.slice(0, 64)}): one row per user per report` });
        return;
      }
      seen.set(key, k);
    }
  });

export type NeighbourCheck = z.infer<typeof neighbourCheckSchema>;
export type UserTraffic = z.infer<typeof userTrafficSchema>;
export type ListenerDown = z.infer<typeof listenerDownSchema>;
export type AgentReport = z.infer<typeof agentReportSchema>;

/**
 * A limited user's bytes left as of the report an ack answers (issue 25 point 8): the agent
 * counts what it reads after that report and removes the user from the core once it passes
 * them, without waiting for the panel. Users of the report not listed have no limit.
 */
export const userRemainingSchema = z
  .object({
    email: z.string().min(1).max(128),
    remainingBytes: z.int().min(0).max(Number.MAX_SAFE_INTEGER),
  })
  .strict();
export const ackLimitsSchema = z.array(userRemainingSchema).max(MAX_REPORT_USERS);
export type UserRemaining = z.infer<typeof userRemainingSchema>;

/** The panel's answer to an accepted report. `duplicate`: this (instance, seq) was already counted. */
export interface AgentReportAck {
  ok: true;
  status: string;
  duplicate?: boolean;
  /** Emails the panel did not recognise (rows ignored; see routeboard_agent_unknown_users_total). */
  unknownUsers?: number;
  /**
   * The limited users of this report's traffic and what they have left (ackLimitsSchema).
   * Empty when the report carried no limited user's traffic; absent from panels before issue
   * 25, and the agent then enforces nothing itself. Agents before it ignore the field.
   */
  limits?: UserRemaining[];
}

// ---------------------------------------------------------------------------
// Agent config: GET /api/agent/config
// ---------------------------------------------------------------------------

export const FLOWS = ["", "xtls-rprx-vision"] as const;

const portSchema = z.int().min(1).max(65535);

export const agentInboundSchema = z
  .object({
    id: z.uuid(),
    /** The core's inbound tag: stable, unique on the server ("in-<port>"). */
    tag: z.string().min(1).max(64),
    /** The inbound's display name (for logs only). */
    name: z.string().min(1).max(200),
    port: portSchema,
    /** Trojan and Shadowsocks users' secrets are derived from their ids (core/credentials.ts). */
    protocol: z.enum(PROTOCOLS),
    /**
     * The transport and its settings (issue 26). Left out for VLESS over tcp, as before the
     * field, so agents from before it keep parsing such configs strictly; absent = tcp.
     */
    transport: z.enum(TRANSPORTS).optional(),
    /** ws, httpupgrade, xhttp and h2: the HTTP path, and the Host header when one is set. */
    path: z.string().min(1).max(200).optional(),
    host: z.string().min(1).max(253).optional(),
    /** gRPC only. */
    serviceName: z.string().min(1).max(100).optional(),
    /** Shadowsocks only: the cipher and, for SS-2022, the server key (base64). */
    shadowsocks: z
      .object({ method: z.enum(SS_METHODS), serverKey: z.string().min(1).max(128).nullable() })
      .strict()
      .optional(),
    security: z.enum(["none", "tls", "reality"]),
    sni: z.string().max(253).nullable(),
    /** The VLESS flow every client of this inbound uses; "" = none. Share links carry the same. */
    flow: z.enum(FLOWS),
    tls: z
      .object({
        certificateFile: z.string().min(1).max(4096),
        keyFile: z.string().min(1).max(4096),
      })
      .strict()
      .nullable(),
    reality: z
      .object({
        privateKey: z.string().min(1).max(128),
        publicKey: z.string().min(1).max(128),
        // Xray hex-decodes each one: an odd number of digits fails, and with it the whole config.
        shortIds: z.array(z.string().regex(/^([0-9a-f]{2}){0,8}$/, { error: "short ids are hex, an even number of digits, at most 16" })).min(1).max(16),
        serverNames: z.array(z.string().min(1).max(253)).min(1).max(32),
        /** Masquerade target, host:port, e.g. "www.microsoft.com:443". */
        dest: z.string().min(3).max(300),
      })
      .strict()
      .nullable(),
    /**
     * Plans (issue 27 point 2): the plans whose users this inbound also accepts, besides the
     * users with no `plan`. Absent = only those (the panel leaves it out when it would be empty,
     * so a cluster whose plans all give every route gets the configs it got before plans, and
     * agents from before the field keep parsing them).
     */
    plans: z.array(z.string().min(1).max(64)).max(1000).optional(),
  })
  .strict();

export const agentUserSchema = z
  .object({
    /** The subscriber's VLESS id. */
    id: z.uuid(),
    /** Stable key of the subscriber in the core's counters: its Routeboard id. */
    email: z.string().min(1).max(128),
    /**
     * The Trojan password the subscriber kept from another panel (server/import); absent =
     * derived from `id` (core/credentials.ts). Sent only for such subscribers, so configs
     * without imported Trojan passwords stay readable by agents from before the field.
     */
    password: z.string().min(1).max(128).optional(),
    /**
     * The user's plan when it does not give every route (issue 27 point 2): the user is then
     * served only on the inbounds whose `plans` list it. Absent = every inbound of the server.
     */
    plan: z.string().min(1).max(64).optional(),
  })
  .strict();

export const agentNeighbourSchema = z
  .object({
    serverId: z.uuid(),
    name: z.string().min(1).max(200),
    address: z.string().min(1).max(253),
    /** Its inbound ports; the agent checks the first one with a TCP connect. */
    ports: z.array(portSchema).max(1000),
  })
  .strict();

export const agentConfigSchema = z
  .object({
    /** Same value as the ETag (without quotes): changes whenever anything below changes. */
    version: z.string().min(1).max(128),
    server: z
      .object({
        id: z.uuid(),
        name: z.string().min(1).max(200),
        address: z.string().min(1).max(253),
        enabled: z.boolean(),
      })
      .strict(),
    reportIntervalS: z.int().min(1).max(3600),
    inbounds: z.array(agentInboundSchema).max(1000),
    /** Every subscriber of the cluster allowed to connect now (enabled, not expired, under quota). */
    users: z.array(agentUserSchema),
    neighbours: z.array(agentNeighbourSchema).max(MAX_NEIGHBOURS),
    /**
     * The cluster's exact exceptions to the edge boundary (core/edge.ts): `ip[:port]` or
     * `cidr[:port]` a subscriber may reach although it is private or the server's own. Absent
     * (the panel leaves it out when empty, so older agents keep parsing) = none. The agent
     * blocks loopback, private, link-local, CGNAT, ULA and multicast ranges, `server.address`
     * and the addresses of its own network interfaces; the core's API port is never reachable.
     */
    allowedPrivateDestinations: z
      .array(
        z
          .string()
          .max(100)
          .superRefine((s, ctx) => {
            const p = parseAllowedDestination(s);
            if (!p.ok) ctx.addIssue({ code: "custom", message: p.error });
          }),
      )
      .max(256)
      .optional(),
  })
  .strict();

export type AgentInbound = z.infer<typeof agentInboundSchema>;
export type AgentUser = z.infer<typeof agentUserSchema>;

/** Whether an inbound serves a user: a user without a plan everywhere, one with a plan where the inbound lists it. */
export function inboundServes(inbound: Pick<AgentInbound, "plans">, user: Pick<AgentUser, "plan">): boolean {
  return user.plan === undefined || (inbound.plans?.includes(user.plan) ?? false);
}

/** The users an inbound serves (the same array when every user is served). */
export function usersOfInbound(inbound: Pick<AgentInbound, "plans">, users: readonly AgentUser[]): readonly AgentUser[] {
  let all = true;
  for (const u of users) if (u.plan !== undefined && !inboundServes(inbound, u)) all = false;
  return all ? users : users.filter((u) => inboundServes(inbound, u));
}

/** Two entries of the same email are the same user in the core: same id, same plan. */
export function sameAgentUser(a: AgentUser, b: AgentUser): boolean {
  return a.id === b.id && a.password === b.password && a.plan === b.plan;
}
export type AgentNeighbour = z.infer<typeof agentNeighbourSchema>;
export type AgentConfig = z.infer<typeof agentConfigSchema>;

// ---------------------------------------------------------------------------
// Config deltas: GET /api/agent/config?delta=1 (issue 23)
// ---------------------------------------------------------------------------

/** A config version's form: 1–128 letters, digits, - and _. */
const CONFIG_VERSION = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Whether `s` has a config version's form: configVersionSchema's rule without a zod parse
 * (the panel checks every poll of every agent with it).
 */
export function isConfigVersion(s: string): boolean {
  return CONFIG_VERSION.test(s);
}

/** A config version as the panel writes it (ETag value); also the form If-None-Match must name with delta=1. */
export const configVersionSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(CONFIG_VERSION, { error: "expected a config version (letters, digits, - and _)" });

/**
 * Only the users changed since `from` (the agent's If-None-Match): the config at `version` is
 * the one at `from` without the emails of `usersRemoved`, plus `usersAdded` (an id change is
 * in both), users sorted by email. The agent checks the result against `version`
 * (core/config-version.ts) and asks for the full config when it does not match.
 */
export const agentConfigDeltaSchema = z
  .object({
    kind: z.literal("delta"),
    from: configVersionSchema,
    version: configVersionSchema,
    usersAdded: z.array(agentUserSchema),
    usersRemoved: z.array(z.string().min(1).max(128)),
  })
  .strict();

export type AgentConfigDelta = z.infer<typeof agentConfigDeltaSchema>;

/** What `?delta=1` answers: a delta, or the whole config marked "full" (old agents never ask, and get it unmarked). */
export const agentConfigAnswerSchema = z.discriminatedUnion("kind", [agentConfigDeltaSchema, agentConfigSchema.extend({ kind: z.literal("full") }).strict()]);

/**
 * What a heartbeat may carry (core/heartbeat.ts): an empty body, or the server's load measured
 * by the agent over the last LOAD_INTERVAL_S: the users who moved traffic in that window and
 * the traffic's rate, counted as a report counts them. The balancer reads it as it reads a
 * report's load, six times as often at the default report interval; health, accounting and
 * "No data" stay with reports.
 */
export const heartbeatLoadSchema = z
  .object({
    usersOnline: z.int().min(0).max(PG_INT_MAX),
    rxBps: z.number().min(0).max(MAX_BPS),
    txBps: z.number().min(0).max(MAX_BPS),
  })
  .strict();
export type HeartbeatLoad = z.infer<typeof heartbeatLoadSchema>;

export const heartbeatBodySchema = z.object({ load: heartbeatLoadSchema.optional() }).strict();
export type HeartbeatBody = z.infer<typeof heartbeatBodySchema>;
/** A heartbeat body is a few numbers; anything longer is refused before parsing (413). */
export const MAX_HEARTBEAT_BODY_BYTES = 1024;
