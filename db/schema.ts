/**
 * The whole domain of DESIGN §1–3 in one pg-core schema, shared by PGlite and PostgreSQL.
 * Invariants that the design promises are enforced here, not only in code:
 * - an inbound is in at most one route: a nullable `route_id` column, never a join table;
 * - at most one fallback per route: partial unique index;
 * - inbound ports are unique per server; route names unique per cluster, case-insensitive;
 * - an inbound, its server and its route belong to the same cluster (composite foreign keys).
 */
import { ALGORITHMS, DEFAULT_ALGORITHM } from "../core/format";
import { DEVICE_ID_MAX, DEVICE_LIMIT_MAX, DEVICE_TEXT_MAX, DEVICE_USER_AGENT_MAX, DEVICELESS_FETCHES } from "../core/devices";
import { sql, type SQL } from "drizzle-orm";
import {
  bigint,
  bigserial,
  boolean,
  check,
  date,
  doublePrecision,
  foreignKey,
  index,
  integer,
  jsonb,
  pgEnum,
  pgTable,
  primaryKey,
  real,
  text,
  timestamp,
  unique,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";

const createdAt = () => timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow();
const updatedAt = () => timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow();
const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

export const serverRole = pgEnum("server_role", ["master", "node", "both"]);
export const routeAlgorithm = pgEnum("route_algorithm", ALGORITHMS);
export const inboundSecurity = pgEnum("inbound_security", ["reality", "tls", "none"]);
export const operatorRole = pgEnum("operator_role", ["owner", "admin", "viewer"]);

export const clusters = pgTable(
  "clusters",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    name: text("name").notNull(),
    /** Active probe configuration of the cluster (DESIGN §3); null = defaults. */
    probeConfig: jsonb("probe_config"),
    /** How often agents are expected to report, in seconds. */
    reportIntervalS: integer("report_interval_s").notNull().default(60),
    /**
     * Exact private destinations subscribers may reach through this cluster's servers
     * (`ip[:port]` / `cidr[:port]`, core/edge.ts); empty = none, the default.
     */
    allowedPrivateDestinations: text("allowed_private_destinations").array().notNull().default(sql`'{}'::text[]`),
    /**
     * A subscription fetch without a device id (x-hwid) from a subscriber with a device limit:
     * served (allow, the default: many apps send none) or refused with one informational entry.
     */
    devicelessFetches: text("deviceless_fetches", { enum: DEVICELESS_FETCHES }).notNull().default("allow"),
    /** The subscribers' public page brand (core/branding.ts: title, logo, support link, colours); null = neutral. */
    branding: jsonb("branding"),
    /**
     * The plan new subscribers get when none is named. Null only inside the insert of the
     * cluster itself: a trigger (migration 0021, hand-written part) creates its "All routes"
     * plan and sets it.
     */
    defaultPlanId: uuid("default_plan_id"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  // The default plan is one of the cluster's own: foreign key clusters_default_plan_same_cluster,
  // hand-written in migration 0021 (declared here it would make the two tables' types circular).
  (t) => [uniqueIndex("clusters_name_ci").on(sql`lower(${t.name})`), check("clusters_deviceless_fetches", sql`${t.devicelessFetches} in ('allow', 'refuse')`)],
);

export const servers = pgTable(
  "servers",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    clusterId: uuid("cluster_id")
      .notNull()
      .references(() => clusters.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    address: text("address").notNull(),
    role: serverRole("role").notNull().default("node"),
    coefficient: real("coefficient").notNull().default(1),
    /** Operator-set link capacity; overrides the capacity learned from peaks. */
    capacityMbps: integer("capacity_mbps"),
    /**
     * Link speed that bounds what the agent may report (issue 21): per-user bytes in a report
     * above what this speed moves in the elapsed interval are refused. Not the balancer's
     * capacity above (null there means "learn it"; an operator may set that one low on purpose).
     */
    reportCapacityMbps: integer("report_capacity_mbps").notNull().default(10_000),
    enabled: boolean("enabled").notNull().default(true),
    /** sha256 of the agent's bearer token; the token itself is shown once and never stored. */
    agentTokenHash: text("agent_token_hash").notNull(),
    probeOverride: jsonb("probe_override"),
    version: integer("version").notNull().default(1),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    unique("servers_id_cluster").on(t.id, t.clusterId),
    uniqueIndex("servers_agent_token_hash").on(t.agentTokenHash),
    uniqueIndex("servers_name_ci").on(t.clusterId, sql`lower(${t.name})`),
    check("servers_coefficient_range", sql`${t.coefficient} >= 0.1 and ${t.coefficient} <= 100`),
    check("servers_capacity_positive", sql`${t.capacityMbps} is null or ${t.capacityMbps} > 0`),
    check("servers_report_capacity_range", sql`${t.reportCapacityMbps} between 1 and 10000000`),
  ],
);

export const routes = pgTable(
  "routes",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    clusterId: uuid("cluster_id")
      .notNull()
      .references(() => clusters.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /** ISO 3166-1 alpha-2 country code of the flag, or null for none. */
    flag: text("flag"),
    algorithm: routeAlgorithm("algorithm").notNull().default(DEFAULT_ALGORITHM),
    hysteresis: real("hysteresis").notNull().default(0.25),
    /**
     * What name VPN apps give this route's line: "inbound" (the chosen inbound's, the default)
     * or "route" (this route's name, one stable name whichever inbound serves). core/format.ts LINE_NAMES.
     */
    lineName: text("line_name").notNull().default("inbound"),
    position: integer("position").notNull().default(0),
    version: integer("version").notNull().default(1),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    unique("routes_id_cluster").on(t.id, t.clusterId),
    uniqueIndex("routes_name_ci").on(t.clusterId, sql`lower(${t.name})`),
    index("routes_position").on(t.clusterId, t.position),
    check("routes_hysteresis_range", sql`${t.hysteresis} >= 0 and ${t.hysteresis} <= 10`),
    check("routes_line_name", sql`${t.lineName} in ('inbound', 'route')`),
  ],
);

/**
 * Plans (issue 27 point 2): which routes a subscriber gets, and the limits a subscriber created
 * on the plan starts with. `all_routes` means every route of the cluster, those created later
 * included (the plan migrated installs start with); otherwise the routes in plan_routes.
 */
export const plans = pgTable(
  "plans",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    clusterId: uuid("cluster_id")
      .notNull()
      .references(() => clusters.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    allRoutes: boolean("all_routes").notNull().default(false),
    /** Defaults for a subscriber created on this plan (or moved with "apply the plan's limits"); null = none. */
    trafficLimitBytes: bigint("traffic_limit_bytes", { mode: "number" }),
    /** Days from creation to expiry; null = never expires. */
    expiryDays: integer("expiry_days"),
    trafficResetStrategy: text("traffic_reset_strategy", { enum: ["never", "daily", "weekly", "monthly"] }).notNull().default("never"),
    trafficResetDay: integer("traffic_reset_day"),
    deviceLimit: integer("device_limit"),
    version: integer("version").notNull().default(1),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    unique("plans_id_cluster").on(t.id, t.clusterId),
    uniqueIndex("plans_name_ci").on(t.clusterId, sql`lower(${t.name})`),
    check("plans_traffic_limit_positive", sql`${t.trafficLimitBytes} is null or ${t.trafficLimitBytes} > 0`),
    check("plans_expiry_days", sql`${t.expiryDays} is null or ${t.expiryDays} between 1 and 3650`),
    check("plans_reset_strategy", sql`${t.trafficResetStrategy} in ('never', 'daily', 'weekly', 'monthly')`),
    check(
      "plans_reset_day",
      sql`case ${t.trafficResetStrategy} when 'weekly' then ${t.trafficResetDay} between 1 and 7 when 'monthly' then ${t.trafficResetDay} between 1 and 31 else ${t.trafficResetDay} is null end`,
    ),
    check("plans_device_limit", sql`${t.deviceLimit} is null or ${t.deviceLimit} between 1 and ${sql.raw(String(DEVICE_LIMIT_MAX))}`),
  ],
);

/** The routes of a plan that is not "all routes"; a deleted route leaves its plans. */
export const planRoutes = pgTable(
  "plan_routes",
  {
    planId: uuid("plan_id").notNull(),
    routeId: uuid("route_id").notNull(),
    clusterId: uuid("cluster_id").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.planId, t.routeId] }),
    // Plan and route of the same cluster, enforced by the database.
    foreignKey({ name: "plan_routes_plan_same_cluster", columns: [t.planId, t.clusterId], foreignColumns: [plans.id, plans.clusterId] }).onDelete("cascade"),
    foreignKey({ name: "plan_routes_route_same_cluster", columns: [t.routeId, t.clusterId], foreignColumns: [routes.id, routes.clusterId] }).onDelete("cascade"),
    index("plan_routes_route").on(t.routeId),
  ],
);

export const inbounds = pgTable(
  "inbounds",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    clusterId: uuid("cluster_id").notNull(),
    serverId: uuid("server_id").notNull(),
    /** The one route this inbound is in; null = unassigned. */
    routeId: uuid("route_id"),
    name: text("name").notNull(),
    port: integer("port").notNull(),
    /** core/inbound-protocols.ts PROTOCOLS. */
    protocol: text("protocol").notNull().default("vless"),
    /** core/inbound-protocols.ts TRANSPORTS. */
    transport: text("transport").notNull().default("tcp"),
    /** HTTP path of ws, httpupgrade, xhttp and h2; null for the other transports. */
    path: text("path"),
    /** Optional Host header of ws, httpupgrade, xhttp and h2. */
    host: text("host"),
    /** gRPC service name; null for the other transports. */
    serviceName: text("service_name"),
    /** Shadowsocks cipher; null for the other protocols. */
    ssMethod: text("ss_method"),
    /**
     * Shadowsocks-2022's server key (base64 of the cipher's key length), which every link of
     * the inbound carries next to the subscriber's own key; null for other ciphers.
     */
    ssServerKey: text("ss_server_key"),
    security: inboundSecurity("security").notNull().default("reality"),
    sni: text("sni"),
    realityPublicKey: text("reality_public_key"),
    /** Leaves the database only in GET /api/agent/config (server/dataplane/config.ts). */
    realityPrivateKey: text("reality_private_key"),
    /** Reality short ids the core accepts; share links carry the first one. */
    realityShortIds: text("reality_short_ids").array().notNull().default(sql`'{}'::text[]`),
    /** SNI values the core accepts for Reality; empty = the inbound's SNI. */
    realityServerNames: text("reality_server_names").array().notNull().default(sql`'{}'::text[]`),
    /** Reality masquerade target, host:port; null = `<sni>:443`. */
    realityDest: text("reality_dest"),
    /** TLS certificate and key paths on the server itself (the panel never sees the key). */
    tlsCertificateFile: text("tls_certificate_file"),
    tlsKeyFile: text("tls_key_file"),
    isFallback: boolean("is_fallback").notNull().default(false),
    /** Optimistic concurrency: every move bumps it; a drop made on stale data is refused. */
    version: integer("version").notNull().default(1),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    foreignKey({
      name: "inbounds_server_same_cluster",
      columns: [t.serverId, t.clusterId],
      foreignColumns: [servers.id, servers.clusterId],
    }).onDelete("cascade"),
    // ON DELETE SET NULL (route_id) keeps the cluster id: deleting a route unassigns.
    foreignKey({
      name: "inbounds_route_same_cluster",
      columns: [t.routeId, t.clusterId],
      foreignColumns: [routes.id, routes.clusterId],
    }).onDelete("set null (route_id)" as "set null"),
    uniqueIndex("inbounds_port_per_server").on(t.serverId, t.port),
    uniqueIndex("inbounds_one_fallback_per_route").on(t.routeId).where(sql`${t.isFallback}`),
    index("inbounds_route").on(t.routeId),
    check("inbounds_port_range", sql`${t.port} between 1 and 65535`),
    check("inbounds_fallback_needs_route", sql`not ${t.isFallback} or ${t.routeId} is not null`),
    // Xray accepts at most 16 hex digits per short id; links and configs rely on the format.
    check(
      "inbounds_reality_short_ids_format",
      sql`cardinality(${t.realityShortIds}) <= 16 and array_to_string(${t.realityShortIds}, ',') ~ '^([0-9a-f]{0,16})?(,[0-9a-f]{0,16})*$'`,
    ),
    check("inbounds_reality_server_names_count", sql`cardinality(${t.realityServerNames}) <= 32`),
    check("inbounds_protocol_known", sql`${t.protocol} in ('vless', 'vmess', 'trojan', 'shadowsocks')`),
    check("inbounds_transport_known", sql`${t.transport} in ('tcp', 'ws', 'grpc', 'httpupgrade', 'xhttp', 'h2')`),
  ],
);

export const subscribers = pgTable(
  "subscribers",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    clusterId: uuid("cluster_id")
      .notNull()
      .references(() => clusters.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /**
     * lower(name), stored: the list's substring search reads it instead of lowering (or
     * ILIKE-ing) every name of the cluster on each keystroke, 3× cheaper at 100,000.
     */
    nameLower: text("name_lower")
      .notNull()
      .generatedAlwaysAs((): SQL => sql`lower(${subscribers.name})`),
    vlessUuid: uuid("vless_uuid").notNull().defaultRandom(),
    token: text("token").notNull(),
    expiresAt: ts("expires_at"),
    trafficLimitBytes: bigint("traffic_limit_bytes", { mode: "number" }),
    /** Always traffic_up_bytes + traffic_down_bytes (checked), kept for the limit comparison. */
    trafficUsedBytes: bigint("traffic_used_bytes", { mode: "number" }).notNull().default(0),
    /** Totals of the per-day traffic (subscriber_traffic), added in the same transaction. */
    trafficUpBytes: bigint("traffic_up_bytes", { mode: "number" }).notNull().default(0),
    trafficDownBytes: bigint("traffic_down_bytes", { mode: "number" }).notNull().default(0),
    /** End of the last report interval in which this subscriber moved traffic. */
    lastSeenAt: ts("last_seen_at"),
    enabled: boolean("enabled").notNull().default(true),
    /**
     * When the used traffic goes back to 0 (server/usage/limits.ts): never, or
     * daily / weekly / monthly at 00:00 UTC; `traffic_reset_day` is the ISO weekday (1 = Monday)
     * for weekly, the day of the month (1–31, the month's last day when it is shorter) for monthly.
     */
    trafficResetStrategy: text("traffic_reset_strategy", { enum: ["never", "daily", "weekly", "monthly"] }).notNull().default("never"),
    trafficResetDay: integer("traffic_reset_day"),
    /** Start of the usage period the totals above count (the last reset, or creation). */
    usagePeriodStart: ts("usage_period_start").notNull().defaultNow(),
    /** The next scheduled reset; null for `never`. Indexed: the reset job reads only what is due. */
    nextResetAt: ts("next_reset_at"),
    /** On hold: no expiry yet; the first traffic folded sets expires_at = first use + this many days. */
    holdDays: integer("hold_days"),
    /** How many devices (x-hwid) may fetch the subscription (core/devices.ts); null = no limit. */
    deviceLimit: integer("device_limit"),
    /** The operator's note (imported from another panel's note/comment/description). */
    note: text("note"),
    /**
     * The Trojan password the subscriber had on another panel (server/import): kept so their
     * app keeps working; null = derived from vless_uuid (core/credentials.ts). Cleared by a
     * key rotation, like the UUID it stands beside.
     */
    trojanPassword: text("trojan_password"),
    /**
     * The subscriber's plan (which routes they get). NOT NULL in the database (set by the
     * hand-written part of migration 0021, after its backfill: declared here, the generated
     * ADD COLUMN would fail on existing rows); an insert that names none gets the cluster's
     * default plan from a BEFORE INSERT trigger (same migration). Readers may still treat a
     * null as the cluster's default plan.
     */
    planId: uuid("plan_id"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    // A plan of the subscriber's own cluster; a plan in use cannot be deleted (no action).
    foreignKey({ name: "subscribers_plan_same_cluster", columns: [t.planId, t.clusterId], foreignColumns: [plans.id, plans.clusterId] }),
    index("subscribers_plan").on(t.clusterId, t.planId),
    uniqueIndex("subscribers_token").on(t.token),
    uniqueIndex("subscribers_vless_uuid").on(t.vlessUuid),
    // A Trojan password names its user on every inbound: two alike would be one user to the core.
    uniqueIndex("subscribers_trojan_password").on(t.trojanPassword),
    index("subscribers_cluster").on(t.clusterId),
    index("subscribers_next_reset").on(t.nextResetAt).where(sql`${t.nextResetAt} is not null`),
    // Names are unique per cluster, case-insensitively, as route and server names are.
    uniqueIndex("subscribers_name_ci").on(t.clusterId, sql`lower(${t.name})`),
    // One per sort key of the subscribers list (server/accounts/subscriber-list.ts), each ending
    // in the id tie-break, so a page is an index range scan even at 100,000 subscribers. A
    // never-seen subscriber sorts as the longest ago (nulls first); no expiry as the latest.
    index("subscribers_list_usage").on(t.clusterId, t.trafficUsedBytes, t.id),
    index("subscribers_list_last_seen").on(t.clusterId, t.lastSeenAt.asc().nullsFirst(), t.id),
    index("subscribers_list_expiry").on(t.clusterId, t.expiresAt, t.id),
    index("subscribers_list_created").on(t.clusterId, t.createdAt, t.id),
    check("subscribers_traffic_non_negative", sql`${t.trafficUpBytes} >= 0 and ${t.trafficDownBytes} >= 0`),
    check("subscribers_traffic_used_sum", sql`${t.trafficUsedBytes} = ${t.trafficUpBytes} + ${t.trafficDownBytes}`),
    check("subscribers_reset_strategy", sql`${t.trafficResetStrategy} in ('never', 'daily', 'weekly', 'monthly')`),
    check(
      "subscribers_reset_day",
      sql`case ${t.trafficResetStrategy} when 'weekly' then ${t.trafficResetDay} between 1 and 7 when 'monthly' then ${t.trafficResetDay} between 1 and 31 else ${t.trafficResetDay} is null end`,
    ),
    check("subscribers_hold_days", sql`${t.holdDays} is null or (${t.holdDays} > 0 and ${t.expiresAt} is null)`),
    check("subscribers_note_length", sql`${t.note} is null or char_length(${t.note}) <= 1000`),
    check("subscribers_trojan_password_length", sql`${t.trojanPassword} is null or char_length(${t.trojanPassword}) between 1 and 128`),
    check("subscribers_device_limit", sql`${t.deviceLimit} is null or ${t.deviceLimit} between 1 and ${sql.raw(String(DEVICE_LIMIT_MAX))}`),
  ],
);

/**
 * Old subscription URLs of imported subscribers (server/import): `GET <path>` on `host` (or on
 * any host when host is "") answers exactly as `/sub/<token>` of the subscriber. `path` is
 * the whole path as the old panel served it ("/sub/<token>", "/<shortUuid>"). A Marzban
 * link carries a token the panel signed at the time it was shown, so its users have many
 * valid tokens: for those the row is keyed by "marzban:<secret tag>:<username>" and the
 * token is checked against the secret in legacy_marzban_secrets (server/import/legacy.ts).
 */
export const subscriberLegacyLinks = pgTable(
  "subscriber_legacy_links",
  {
    host: text("host").notNull().default(""),
    path: text("path").notNull(),
    subscriberId: uuid("subscriber_id")
      .notNull()
      .references(() => subscribers.id, { onDelete: "cascade" }),
    /** Marzban: tokens signed before this (the user's "revoke subscription") are refused. */
    notBefore: ts("not_before"),
  },
  (t) => [
    primaryKey({ columns: [t.host, t.path] }),
    index("subscriber_legacy_links_subscriber").on(t.subscriberId),
    check("subscriber_legacy_links_path", sql`char_length(${t.path}) between 2 and 512 and left(${t.path}, 1) = '/'`),
    check("subscriber_legacy_links_host", sql`char_length(${t.host}) <= 253`),
  ],
);

/** The secret a Marzban panel signed its subscription tokens with, per path prefix (see above). */
export const legacyMarzbanSecrets = pgTable(
  "legacy_marzban_secrets",
  {
    clusterId: uuid("cluster_id")
      .notNull()
      .references(() => clusters.id, { onDelete: "cascade" }),
    prefix: text("prefix").notNull(),
    /** sha256(secret) in hex, first 12 digits: the key part naming this secret. */
    tag: text("tag").notNull(),
    secret: text("secret").notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.prefix, t.tag] })],
);

/**
 * The devices that fetched a subscriber's subscription with a device id (x-hwid), as their app
 * named them: subscriber input, cleaned and bounded (core/devices.ts), at most
 * DEVICES_STORED_MAX per subscriber. A device belongs to one subscriber: the same id sent with
 * two links is two rows, and neither subscriber sees the other's.
 */
export const subscriberDevices = pgTable(
  "subscriber_devices",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    subscriberId: uuid("subscriber_id")
      .notNull()
      .references(() => subscribers.id, { onDelete: "cascade" }),
    hwid: text("hwid").notNull(),
    os: text("os"),
    osVersion: text("os_version"),
    model: text("model"),
    userAgent: text("user_agent"),
    firstSeenAt: ts("first_seen_at").notNull().defaultNow(),
    lastSeenAt: ts("last_seen_at").notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("subscriber_devices_hwid").on(t.subscriberId, t.hwid),
    check("subscriber_devices_hwid_length", sql`char_length(${t.hwid}) between 1 and ${sql.raw(String(DEVICE_ID_MAX))}`),
    check(
      "subscriber_devices_text_length",
      sql`coalesce(char_length(${t.os}), 0) <= ${sql.raw(String(DEVICE_TEXT_MAX))} and coalesce(char_length(${t.osVersion}), 0) <= ${sql.raw(String(DEVICE_TEXT_MAX))} and coalesce(char_length(${t.model}), 0) <= ${sql.raw(String(DEVICE_TEXT_MAX))} and coalesce(char_length(${t.userAgent}), 0) <= ${sql.raw(String(DEVICE_USER_AGENT_MAX))}`,
    ),
  ],
);

/**
 * A subscriber's usage of one finished period, written by each reset (scheduled or manual),
 * so the operator can see last month's usage after the counters went back to 0.
 */
export const subscriberUsagePeriods = pgTable(
  "subscriber_usage_periods",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    subscriberId: uuid("subscriber_id")
      .notNull()
      .references(() => subscribers.id, { onDelete: "cascade" }),
    periodStart: ts("period_start").notNull(),
    periodEnd: ts("period_end").notNull(),
    upBytes: bigint("up_bytes", { mode: "number" }).notNull(),
    downBytes: bigint("down_bytes", { mode: "number" }).notNull(),
    /** What ended the period: the schedule, an operator's reset of one, or a bulk reset. */
    reason: text("reason", { enum: ["schedule", "manual", "bulk"] }).notNull(),
  },
  (t) => [
    index("subscriber_usage_periods_subscriber").on(t.subscriberId, t.periodEnd),
    check("subscriber_usage_periods_non_negative", sql`${t.upBytes} >= 0 and ${t.downBytes} >= 0`),
    check("subscriber_usage_periods_reason", sql`${t.reason} in ('schedule', 'manual', 'bulk')`),
  ],
);

/**
 * Traffic per subscriber per server per UTC day, from agent reports (bytes since the previous
 * report, added once per (instance, seq): see server_agent_state).
 */
export const subscriberTraffic = pgTable(
  "subscriber_traffic",
  {
    subscriberId: uuid("subscriber_id")
      .notNull()
      .references(() => subscribers.id, { onDelete: "cascade" }),
    serverId: uuid("server_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    day: date("day", { mode: "string" }).notNull(),
    upBytes: bigint("up_bytes", { mode: "number" }).notNull().default(0),
    downBytes: bigint("down_bytes", { mode: "number" }).notNull().default(0),
  },
  (t) => [
    // The primary key is the only index: every report upserts up to 100+ rows here, and each
    // extra index costs on every one of them.
    primaryKey({ columns: [t.subscriberId, t.serverId, t.day] }),
    check("subscriber_traffic_non_negative", sql`${t.upBytes} >= 0 and ${t.downBytes} >= 0`),
  ],
);

/**
 * The balancer's stored choices, one compact row per subscriber: the inbounds it was given,
 * one per route (an inbound is in at most one route, so the route is the inbound's own).
 * One row instead of one per route: a first fetch of 100 routes is one row of 100 ids.
 * Ids of inbounds deleted since are ignored; two ids now in one route (an inbound was moved)
 * count as no choice there, so that route is decided again.
 */
export const subscriberAssignments = pgTable("subscriber_assignments", {
  subscriberId: uuid("subscriber_id")
    .primaryKey()
    .references(() => subscribers.id, { onDelete: "cascade" }),
  inboundIds: uuid("inbound_ids").array().notNull(),
  updatedAt: ts("updated_at").notNull().defaultNow(),
});

/** Latest agent report per server. */
export const serverMetrics = pgTable("server_metrics", {
  serverId: uuid("server_id")
    .primaryKey()
    .references(() => servers.id, { onDelete: "cascade" }),
  reportedAt: ts("reported_at").notNull(),
  listenerAlive: boolean("listener_alive").notNull(),
  serviceRunning: boolean("service_running").notNull(),
  usersOnline: integer("users_online").notNull(),
  rxBps: doublePrecision("rx_bps").notNull(),
  txBps: doublePrecision("tx_bps").notNull(),
  cpu: real("cpu").notNull(),
  memory: real("memory").notNull(),
  /** Learned link capacity: peak traffic that cools down (DESIGN §2). */
  peakBps: doublePrecision("peak_bps").notNull().default(0),
  /**
   * When a report last showed this server's users held back (they got less each than another
   * server's of its cluster at its latest report, by more than the default margin): once seen,
   * its learned peak is taken as what its link carries (balancer: ServerMetrics.heldBack).
   * Null: never seen.
   */
  heldBackAt: ts("held_back_at"),
  /**
   * The traffic of that report (bits/s): what the link carried when full. The balancer's peak
   * for this server never counts below it, however long the quiet since (ServerMetrics.heldBackBps).
   * Null: not known (never seen full, or seen before this was stored).
   */
  heldBackBps: doublePrecision("held_back_bps"),
  /**
   * The load the agent measured over its last LOAD_INTERVAL_S and sent in a heartbeat
   * (core/heartbeat.ts): when it arrived, the users who moved traffic, and the traffic (the
   * larger of rx and tx, bits/s). The balancer reads whichever of this and the report is newer;
   * health ("No data"), charts and accounting read the report. Null: no load heartbeat yet.
   */
  loadAt: ts("load_at"),
  loadUsers: integer("load_users"),
  loadBps: doublePrecision("load_bps"),
});

/**
 * Per-user traffic of committed agent report batches, not yet added where it is read: one row
 * per batch, written in the batch's own transaction (with the agents' seq), so an acknowledged
 * report is durable at once and counted once. Two folds apply it, each in one statement that
 * also marks or deletes what it applied (so a crash in between loses and repeats nothing):
 * - every ~0.5 s the per-subscriber totals (`sub_*`, one element per distinct subscriber of the
 *   batch) go into subscribers' totals and last_seen_at, and `totals_folded` is set; limits are
 *   checked there;
 * - every few seconds rows with `totals_folded` are deleted and their per-(subscriber, server,
 *   UTC day) entries (`ent_*`, parallel arrays) added to subscriber_traffic, summed first.
 */
export const trafficJournal = pgTable("traffic_journal", {
  id: bigserial("id", { mode: "number" }).primaryKey(),
  subIds: uuid("sub_ids").array().notNull(),
  subUp: bigint("sub_up", { mode: "number" }).array().notNull(),
  subDown: bigint("sub_down", { mode: "number" }).array().notNull(),
  seenAt: ts("seen_at").notNull(),
  totalsFolded: boolean("totals_folded").notNull().default(false),
  entSub: uuid("ent_sub").array().notNull(),
  entSrv: uuid("ent_srv").array().notNull(),
  entDay: date("ent_day", { mode: "string" }).array().notNull(),
  entUp: bigint("ent_up", { mode: "number" }).array().notNull(),
  entDown: bigint("ent_down", { mode: "number" }).array().notNull(),
  createdAt: createdAt(),
});

/**
 * Journal rows a fold could not apply (issue 21): one server's part of a batch, moved out of
 * traffic_journal with the reason, so the next folds carry on with everyone else's traffic.
 * `stage` says what was not applied: "totals" (nothing of it counted) or "days" (subscribers'
 * totals have it, subscriber_traffic does not). Shown on the cluster's health page.
 */
export const trafficQuarantine = pgTable(
  "traffic_quarantine",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    journalId: bigint("journal_id", { mode: "number" }).notNull(),
    /** Null when the row named no (existing) server or several that could not be told apart. */
    serverId: uuid("server_id").references(() => servers.id, { onDelete: "cascade" }),
    clusterId: uuid("cluster_id").references(() => clusters.id, { onDelete: "cascade" }),
    stage: text("stage", { enum: ["totals", "days"] }).notNull(),
    reason: text("reason").notNull(),
    seenAt: ts("seen_at").notNull(),
    quarantinedAt: ts("quarantined_at").notNull().defaultNow(),
    subIds: uuid("sub_ids").array().notNull(),
    subUp: bigint("sub_up", { mode: "number" }).array().notNull(),
    subDown: bigint("sub_down", { mode: "number" }).array().notNull(),
    entSub: uuid("ent_sub").array().notNull(),
    entSrv: uuid("ent_srv").array().notNull(),
    entDay: date("ent_day", { mode: "string" }).array().notNull(),
    entUp: bigint("ent_up", { mode: "number" }).array().notNull(),
    entDown: bigint("ent_down", { mode: "number" }).array().notNull(),
  },
  (t) => [index("traffic_quarantine_cluster").on(t.clusterId, t.quarantinedAt), check("traffic_quarantine_stage", sql`${t.stage} in ('totals', 'days')`)],
);

/**
 * How a cluster's users changed between two of its config builds (config deltas, issue 23):
 * `from_users` and `to_users` are the users' hashes (core/config-version.ts UsersDigest), and
 * `added` / `removed` the exact difference, sorted by email. The content is a function of the
 * two hashes, so every panel instance writes the same row for the same pair (upsert) and any
 * instance can answer a delta from another's builds. Kept: the newest 256 rows per cluster,
 * none older than 24 h (server/dataplane/config-journal.ts prunes on every write).
 */
export const configUserChanges = pgTable(
  "config_user_changes",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    clusterId: uuid("cluster_id")
      .notNull()
      .references(() => clusters.id, { onDelete: "cascade" }),
    fromUsers: text("from_users").notNull(),
    toUsers: text("to_users").notNull(),
    added: jsonb("added").$type<Array<{ id: string; email: string; plan?: string }>>().notNull(),
    removed: jsonb("removed").$type<Array<{ id: string; email: string; plan?: string }>>().notNull(),
    recordedAt: ts("recorded_at").notNull().defaultNow(),
  },
  (t) => [unique("config_user_changes_pair").on(t.clusterId, t.fromUsers, t.toUsers), index("config_user_changes_cluster_recent").on(t.clusterId, t.recordedAt)],
);

/**
 * What the server's agent last told about itself (DESIGN §6): the (instance, seq) of the last
 * report whose traffic was counted (exactly-once delivery), the config its core runs, why the
 * core refused the newest one, which inbounds it cannot serve, and its versions.
 */
export const serverAgentState = pgTable(
  "server_agent_state",
  {
    serverId: uuid("server_id")
      .primaryKey()
      .references(() => servers.id, { onDelete: "cascade" }),
    /** Random id the agent keeps in its state folder; a new one restarts the sequence. */
    instance: text("instance"),
    seq: bigint("seq", { mode: "number" }),
    configVersion: text("config_version"),
    configError: text("config_error"),
    configErrorAt: ts("config_error_at"),
    /**
     * [{ inboundId, reason }] of inbounds not served now: left out of the core's config (e.g.
     * Reality on v2ray), or (`listener: true`) served but failing the agent's listener check.
     * The balancer never hands them out (issue 25; server/dataplane/reports.ts notServed).
     */
    unservedInbounds: jsonb("unserved_inbounds").$type<Array<{ inboundId: string; reason: string; listener?: true }>>().notNull().default([]),
    coreKind: text("core_kind"),
    coreVersion: text("core_version"),
    agentVersion: text("agent_version"),
    updatedAt: updatedAt(),
  },
  (t) => [
    check("server_agent_state_seq", sql`(${t.instance} is null) = (${t.seq} is null) and (${t.seq} is null or ${t.seq} >= 1)`),
    check("server_agent_state_core_kind", sql`${t.coreKind} is null or ${t.coreKind} in ('xray', 'v2ray')`),
  ],
);

/** Downsampled history: one row per server per 5-minute bucket. */
export const serverMetricsHistory = pgTable(
  "server_metrics_history",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    serverId: uuid("server_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    bucketStart: ts("bucket_start").notNull(),
    samples: integer("samples").notNull(),
    usersOnlineAvg: real("users_online_avg").notNull(),
    trafficBpsMax: doublePrecision("traffic_bps_max").notNull(),
    trafficBpsAvg: doublePrecision("traffic_bps_avg").notNull(),
    /** Download and upload averages, for the health page's charts; 0 in buckets older than these columns. */
    rxBpsAvg: doublePrecision("rx_bps_avg").notNull().default(0),
    txBpsAvg: doublePrecision("tx_bps_avg").notNull().default(0),
    cpuAvg: real("cpu_avg").notNull(),
  },
  (t) => [uniqueIndex("server_metrics_history_bucket").on(t.serverId, t.bucketStart)],
);

/** Health state per server (DESIGN §3), written by the monitor. */
export const serverHealth = pgTable("server_health", {
  serverId: uuid("server_id")
    .primaryKey()
    .references(() => servers.id, { onDelete: "cascade" }),
  status: text("status").notNull().default("pending"),
  statusSince: ts("status_since").notNull().defaultNow(),
  statusReason: text("status_reason"),
  /**
   * When the server last came back to healthy from being down (no-data, unavailable,
   * probe-failing, unreachable); not set by a first success or by re-enabling. The balancer
   * damps fail-back to a server that came back recently (DESIGN §2 stickiness).
   */
  recoveredAt: ts("recovered_at"),
  everSucceeded: boolean("ever_succeeded").notNull().default(false),
  probeHealthy: boolean("probe_healthy"),
  probeFailStreak: integer("probe_fail_streak").notNull().default(0),
  probeOkStreak: integer("probe_ok_streak").notNull().default(0),
  lastProbeAt: ts("last_probe_at"),
  lastProbeOk: boolean("last_probe_ok"),
  lastProbeCode: integer("last_probe_code"),
  lastProbeLatencyMs: real("last_probe_latency_ms"),
  lastProbeReason: text("last_probe_reason"),
  meshUnreachable: boolean("mesh_unreachable").notNull().default(false),
  /** The mesh verdict's explanation (votes, discarded witnesses), for the health page. */
  meshReason: text("mesh_reason"),
  /** Sticky: some agent report ever said listener alive and service running (DESIGN §3). */
  reportEverHealthy: boolean("report_ever_healthy").notNull().default(false),
  /** The agent's last heartbeat (POST /api/agent/heartbeat); null = never (no fast failover for it). */
  heartbeatAt: ts("heartbeat_at"),
  /** When the failover watcher confirmed the heartbeat lost; a later heartbeatAt clears it (core/heartbeat.ts). */
  heartbeatLostAt: ts("heartbeat_lost_at"),
  updatedAt: updatedAt(),
});

/** Neighbour checks: observer server → target server, with the failure streak. */
export const meshChecks = pgTable(
  "mesh_checks",
  {
    observerId: uuid("observer_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    targetId: uuid("target_id")
      .notNull()
      .references(() => servers.id, { onDelete: "cascade" }),
    lastOk: boolean("last_ok").notNull(),
    failStreak: integer("fail_streak").notNull().default(0),
    rttMs: real("rtt_ms"),
    checkedAt: ts("checked_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.observerId, t.targetId] })],
);

export const operators = pgTable(
  "operators",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    username: text("username").notNull(),
    passwordHash: text("password_hash").notNull(),
    role: operatorRole("role").notNull(),
    createdAt: createdAt(),
    /**
     * Two-factor authentication (server/accounts/two-factor.ts): the TOTP secret in base32,
     * set once the operator confirmed a code; null = no second factor. Stored as is: the
     * server must read it to check codes, and there is no at-rest key to wrap it with.
     */
    totpSecret: text("totp_secret"),
    /** A secret shown for enrolment, not in effect until a code from it is confirmed. */
    totpPendingSecret: text("totp_pending_secret"),
    totpEnabledAt: ts("totp_enabled_at"),
    /** The last TOTP step a code was accepted at: that step and earlier are refused (replay). */
    totpLastStep: bigint("totp_last_step", { mode: "number" }),
  },
  (t) => [uniqueIndex("operators_username_ci").on(sql`lower(${t.username})`)],
);

/** One-time recovery codes of an operator's second factor: argon2id hashes, as passwords. */
export const operatorRecoveryCodes = pgTable(
  "operator_recovery_codes",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    operatorId: uuid("operator_id")
      .notNull()
      .references(() => operators.id, { onDelete: "cascade" }),
    codeHash: text("code_hash").notNull(),
    usedAt: ts("used_at"),
  },
  (t) => [index("operator_recovery_codes_operator").on(t.operatorId)],
);

export const sessions = pgTable(
  "sessions",
  {
    /** HMAC of the cookie token with the session secret; the raw token is never stored. */
    id: text("id").primaryKey(),
    operatorId: uuid("operator_id")
      .notNull()
      .references(() => operators.id, { onDelete: "cascade" }),
    createdAt: createdAt(),
    expiresAt: ts("expires_at").notNull(),
    lastSeenAt: ts("last_seen_at").notNull().defaultNow(),
    revokedAt: ts("revoked_at"),
    userAgent: text("user_agent"),
  },
  (t) => [index("sessions_operator").on(t.operatorId)],
);

/**
 * API tokens for shops and bots (`Authorization: Bearer rbt_<id>_<secret>`, see
 * core/api-tokens.ts). Only the secret's SHA-256 is kept: the secret is 256 random bits, not
 * a password, so a slow hash would buy nothing. A token acts with at most its creator's
 * current role, and goes away with its creator.
 */
export const apiTokens = pgTable(
  "api_tokens",
  {
    /** The token's public part (16 hex digits): lookups are by id, then one hash compare. */
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    secretHash: text("secret_hash").notNull(),
    scopes: text("scopes").array().notNull(),
    createdBy: uuid("created_by")
      .notNull()
      .references(() => operators.id, { onDelete: "cascade" }),
    createdAt: createdAt(),
    /** Null: never expires. */
    expiresAt: ts("expires_at"),
    lastUsedAt: ts("last_used_at"),
    revokedAt: ts("revoked_at"),
  },
  (t) => [
    // The audit log names a token's writes "token:<name>": two live tokens never share one.
    uniqueIndex("api_tokens_name_live").on(sql`lower(${t.name})`).where(sql`${t.revokedAt} is null`),
    check("api_tokens_scopes_known", sql`cardinality(${t.scopes}) > 0 and ${t.scopes} <@ array['read', 'subscribers:write', 'topology:write', 'backup']::text[]`),
  ],
);

/** Failed logins per key (username or client address), to slow down guessing. */
export const loginThrottle = pgTable("login_throttle", {
  key: text("key").primaryKey(),
  failures: integer("failures").notNull().default(0),
  lastFailureAt: ts("last_failure_at").notNull(),
  blockedUntil: ts("blocked_until"),
});

export const auditLog = pgTable(
  "audit_log",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    clusterId: uuid("cluster_id").references(() => clusters.id, { onDelete: "cascade" }),
    operatorId: uuid("operator_id").references(() => operators.id, { onDelete: "set null" }),
    operatorName: text("operator_name").notNull(),
    action: text("action").notNull(),
    entityType: text("entity_type").notNull(),
    entityId: text("entity_id"),
    summary: text("summary").notNull(),
    before: jsonb("before"),
    after: jsonb("after"),
    at: ts("at").notNull().defaultNow(),
  },
  (t) => [index("audit_log_cluster_at").on(t.clusterId, t.at)],
);

/** Key/value settings of this install (e.g. that the demo was seeded once). */
export const settings = pgTable("settings", {
  key: text("key").primaryKey(),
  value: jsonb("value").notNull(),
});

// ---------------------------------------------------------------------------
// Alerts (server/alerts): targets, a durable outbox of events, one delivery per event and
// target, and the last announced state of what is watched by comparison (routes, subscribers).
// ---------------------------------------------------------------------------

/**
 * Where alerts go. Installation-wide (like the team): one operator chat or webhook usually
 * watches the whole fleet; `cluster_id` narrows a target to one cluster (null = every cluster).
 */
export const alertTargets = pgTable(
  "alert_targets",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    name: text("name").notNull(),
    kind: text("kind").notNull(),
    clusterId: uuid("cluster_id").references(() => clusters.id, { onDelete: "cascade" }),
    /** Webhook: the URL and the HMAC-SHA256 secret of X-Routeboard-Signature. */
    url: text("url"),
    secret: text("secret"),
    /** Telegram: bot token and chat (numeric id or @channel). */
    botToken: text("bot_token"),
    chatId: text("chat_id"),
    events: text("events").array().notNull(),
    enabled: boolean("enabled").notNull().default(true),
    lastDeliveryAt: ts("last_delivery_at"),
    lastFailureAt: ts("last_failure_at"),
    lastError: text("last_error"),
    /** A delivery to it gave up (retries exhausted) and none succeeded since. */
    failing: boolean("failing").notNull().default(false),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("alert_targets_name_ci").on(sql`lower(${t.name})`),
    check("alert_targets_kind", sql`${t.kind} in ('webhook', 'telegram')`),
    check(
      "alert_targets_fields",
      sql`(${t.kind} = 'webhook' and ${t.url} is not null and ${t.secret} is not null) or (${t.kind} = 'telegram' and ${t.botToken} is not null and ${t.chatId} is not null)`,
    ),
  ],
);

/** The outbox: every event, written in the transaction of the change it reports. */
export const alertEvents = pgTable(
  "alert_events",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    type: text("type").notNull(),
    /** No foreign key: the event outlives a deleted cluster (its name is kept). */
    clusterId: uuid("cluster_id"),
    clusterName: text("cluster_name"),
    occurredAt: ts("occurred_at").notNull(),
    data: jsonb("data").notNull(),
  },
  (t) => [index("alert_events_occurred").on(t.occurredAt)],
);

/** One row per (event, target): the retry state of sending that event there. */
export const alertDeliveries = pgTable(
  "alert_deliveries",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    eventId: uuid("event_id")
      .notNull()
      .references(() => alertEvents.id, { onDelete: "cascade" }),
    targetId: uuid("target_id")
      .notNull()
      .references(() => alertTargets.id, { onDelete: "cascade" }),
    /** pending → delivered | failed. */
    state: text("state").notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    /** Due time while pending; also the lease of an attempt in flight. */
    nextAttemptAt: ts("next_attempt_at").notNull(),
    lastAttemptAt: ts("last_attempt_at"),
    lastError: text("last_error"),
    deliveredAt: ts("delivered_at"),
    createdAt: createdAt(),
  },
  (t) => [
    index("alert_deliveries_due").on(t.state, t.nextAttemptAt),
    index("alert_deliveries_target").on(t.targetId, t.id),
    unique("alert_deliveries_event_target").on(t.eventId, t.targetId),
    check("alert_deliveries_state", sql`${t.state} in ('pending', 'delivered', 'failed')`),
  ],
);

/** Last announced panic state of a route (alerts fire on a change of it). */
export const routeAlertState = pgTable("route_alert_state", {
  routeId: uuid("route_id")
    .primaryKey()
    .references(() => routes.id, { onDelete: "cascade" }),
  inPanic: boolean("in_panic").notNull(),
  /** Whether the panic was announced (a route first seen in panic is not: see server/alerts). */
  announced: boolean("announced").notNull().default(false),
  changedAt: ts("changed_at").notNull(),
});

/** Last announced block of a subscriber (limited or expired); no row = may connect. */
export const subscriberAlertState = pgTable("subscriber_alert_state", {
  subscriberId: uuid("subscriber_id")
    .primaryKey()
    .references(() => subscribers.id, { onDelete: "cascade" }),
  kind: text("kind").notNull(),
  /** The expiry that was announced: only a changed expiry lifts an expired block. */
  expiresAt: ts("expires_at"),
  changedAt: ts("changed_at").notNull(),
});
