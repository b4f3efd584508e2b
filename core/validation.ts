/**
 * The input rules shared by every tRPC procedure and by the forms that call them, so the
 * browser and the server say the same thing about the same field. Browser-safe: no node
 * modules, so client components import these schemas too.
 */
import { z } from "zod";
import { API_SCOPES } from "./api-tokens";
import { MAX_ALLOWED_DESTINATIONS, parseAllowedDestination } from "./edge";
import { ALGORITHMS, LINE_NAMES } from "./format";
import { INBOUND_DEFAULTS, PROTOCOLS, SS_METHODS, TRANSPORTS, protocolIssues } from "./inbound-protocols";
import { DEVICE_LIMIT_MAX } from "./devices";

// Control characters, and the bidi overrides/isolates that can make a name display as
// something else. Right-to-left text itself is fine; so are emoji joiners.
const FORBIDDEN_CHARS = /[\p{Cc}\u202A-\u202E\u2066-\u2069]/u;

export const NAME_MAX = 64;

// Characters that show nothing by themselves: spaces of every kind, zero-width characters
// (U+200B–U+200D, U+2060, U+FEFF), bidi marks and controls, variation selectors, tags, the
// Hangul fillers, the braille blank. A name made only of these looks empty in every list.
const INVISIBLE = /^[\p{Default_Ignorable_Code_Point}\p{White_Space}\p{Cc}\p{Cf}\u2800]*$/u;
/** Does `s` have at least one character a person can see? */
export const hasVisibleChar = (s: string) => !INVISIBLE.test(s);
const INVISIBLE_MESSAGE = "Name must have a visible character: this one is only spaces or invisible characters";

/** A display name: trimmed, 1–64 characters (code points), no control characters. */
export const nameSchema = z
  .string({ error: "Name is required" })
  .max(NAME_MAX * 8, `Name must be at most ${NAME_MAX} characters`)
  .transform((s) => s.trim())
  .refine((s) => s.length > 0, "Name is required")
  .refine((s) => [...s].length <= NAME_MAX, `Name must be at most ${NAME_MAX} characters`)
  .refine((s) => !FORBIDDEN_CHARS.test(s), "Name must not contain control characters")
  // Empty is "Name is required" (zod runs every refinement).
  .refine((s) => s.length === 0 || hasVisibleChar(s), INVISIBLE_MESSAGE);

export const portSchema = z.coerce
  .number({ error: "Port must be a number" })
  .int("Port must be a whole number")
  .min(1, "Port must be between 1 and 65535")
  .max(65535, "Port must be between 1 and 65535");

const HOSTNAME = /^(?=.{1,253}$)(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*\.?$/i;
const IPV4 = z.ipv4();
const IPV6 = z.ipv6();

/** True for an IPv4 address, or an IPv6 address with or without [brackets]. */
export function isIpAddress(s: string): boolean {
  if (IPV4.safeParse(s).success) return true;
  const bare = s.startsWith("[") && s.endsWith("]") ? s.slice(1, -1) : s;
  return IPV6.safeParse(bare).success;
}

export function isHostname(s: string): boolean {
  // All-numeric dotted names are IPv4 attempts, not hostnames ("999.1.1.1", "1.2.3").
  return HOSTNAME.test(s) && !/^[\d.]+$/.test(s);
}

/** A public address: an IPv4/IPv6 address or a hostname. */
export const addressSchema = z
  .string({ error: "Address is required" })
  .max(300, "Address is too long")
  .transform((s) => s.trim())
  .refine((s) => s.length > 0, "Address is required")
  .refine((s) => isIpAddress(s) || isHostname(s), "Address must be a hostname or an IP address");

/** A TLS server name (masquerade SNI): a hostname, never an IP address. */
export const sniSchema = z
  .string({ error: "SNI is required" })
  .max(300, "SNI is too long")
  .transform((s) => s.trim())
  .refine((s) => s.length > 0, "SNI is required")
  .refine((s) => isHostname(s) && !s.endsWith("."), "SNI must be a hostname such as www.example.com");

export const coefficientSchema = z.coerce
  .number({ error: "Coefficient must be a number" })
  .refine((n) => Number.isFinite(n), "Coefficient must be a number")
  .refine((n) => n >= 0.1 && n <= 100, "Coefficient must be between 0.1 and 100");

/** Operator-set link capacity in Mbit/s; null = learn it from observed peaks. */
export const capacitySchema = z.coerce
  .number({ error: "Capacity must be a number" })
  .int("Capacity must be a whole number of Mbit/s")
  .min(1, "Capacity must be between 1 and 10,000,000 Mbit/s")
  .max(10_000_000, "Capacity must be between 1 and 10,000,000 Mbit/s")
  .nullable();

/** Issue 21: the link speed that bounds a server's agent reports (servers.report_capacity_mbps). */
export const DEFAULT_REPORT_CAPACITY_MBPS = 10_000;
export const reportCapacitySchema = z.coerce
  .number({ error: "Report capacity must be a number" })
  .int("Report capacity must be a whole number of Mbit/s")
  .min(1, "Report capacity must be between 1 and 10,000,000 Mbit/s")
  .max(10_000_000, "Report capacity must be between 1 and 10,000,000 Mbit/s");

export const idSchema = z.uuid("Not a valid id");

export const serverRoleSchema = z.enum(["master", "node", "both"], { error: "Role must be master, node or both" });
export const algorithmSchema = z.enum(ALGORITHMS, { error: "Choose a load-balancing algorithm" });
export const lineNameSchema = z.enum(LINE_NAMES, { error: "Line name must be the inbound's (inbound) or the route's (route)" });
export const securitySchema = z.enum(["reality", "tls", "none"], { error: "Security must be Reality, TLS or none" });

/** ISO 3166-1 alpha-2: every officially assigned code. */
export const COUNTRY_CODES: readonly string[] = (
  "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ " +
  "CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR " +
  "GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP " +
  "KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT " +
  "MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW " +
  "SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ " +
  "UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW"
).split(" ");
const COUNTRY_SET = new Set(COUNTRY_CODES);

/** A route's flag: an ISO 3166-1 alpha-2 code ("us" is accepted as "US"), or null for none. */
export const flagSchema = z
  .string()
  .max(8, "Choose a country from the list")
  .transform((s) => s.trim().toUpperCase())
  .refine((s) => COUNTRY_SET.has(s), "Choose a country from the list")
  .nullable();

/** Optional expiry date of a subscriber. */
export const expirySchema = z.coerce
  .date({ error: "Expiry must be a date" })
  .refine((d) => !Number.isNaN(d.getTime()), "Expiry must be a date")
  .nullable();

export const GIB = 1024 ** 3;
/** Optional traffic limit in GB (GiB, as VPN panels count), 0.001–1,000,000. */
export const trafficLimitGbSchema = z.coerce
  .number({ error: "Traffic limit must be a number" })
  .refine((n) => Number.isFinite(n), "Traffic limit must be a number")
  .refine((n) => n > 0 && n <= 1_000_000, "Traffic limit must be more than 0 and at most 1,000,000 GB")
  .nullable();

/** When a subscriber's used traffic goes back to 0 (server/usage/limits.ts). */
export const resetStrategySchema = z.enum(["never", "daily", "weekly", "monthly"], { error: "Reset must be never, daily, weekly or monthly" });

/** Weekly: ISO weekday 1 (Monday)–7 (Sunday); monthly: day 1–31; range checked with the strategy. */
export const resetDaySchema = z.coerce.number({ error: "Reset day must be a number" }).int("Reset day must be a whole number").nullable();

export const HOLD_DAYS_MAX = 3650;
/** "On hold until first connection": the subscription's length in days, counted from first use. */
export const holdDaysSchema = z.coerce
  .number({ error: "Hold duration must be a number of days" })
  .int("Hold duration must be a whole number of days")
  .refine((n) => n > 0, "Hold duration must be at least 1 day")
  .refine((n) => n <= HOLD_DAYS_MAX, `Hold duration must be at most ${HOLD_DAYS_MAX} days`)
  .nullable();

/** How many devices may fetch a subscriber's subscription (core/devices.ts); null = no limit. */
export const deviceLimitSchema = z.coerce
  .number({ error: "Device limit must be a number" })
  .int("Device limit must be a whole number")
  .refine((n) => n >= 1 && n <= DEVICE_LIMIT_MAX, `Device limit must be between 1 and ${DEVICE_LIMIT_MAX}`)
  .nullable();

/** Usage history ranges the subscriber page offers, in days. */
export const USAGE_HISTORY_DAYS = [7, 30, 90] as const;
export const usageHistoryDaysSchema = z.union([z.literal(7), z.literal(30), z.literal(90)], { error: "Range must be 7, 30 or 90 days" });

export interface SubscriberLimitsInput {
  expiresAt: Date | null;
  trafficResetStrategy: "never" | "daily" | "weekly" | "monthly";
  trafficResetDay: number | null;
  holdDays: number | null;
}

/**
 * The rules across a subscriber's limit fields, as field → message: the reset day fits the
 * strategy, and on hold goes without an expiry (the expiry is set at first use). Shared by the
 * procedures (superRefine) and the form.
 */
export function subscriberLimitsIssues(v: SubscriberLimitsInput): Array<{ path: string; message: string }> {
  const out: Array<{ path: string; message: string }> = [];
  const day = v.trafficResetDay;
  if (v.trafficResetStrategy === "weekly" && (day === null || day < 1 || day > 7)) out.push({ path: "trafficResetDay", message: "Weekly reset day must be a weekday, 1 (Monday) to 7 (Sunday)" });
  if (v.trafficResetStrategy === "monthly" && (day === null || day < 1 || day > 31)) out.push({ path: "trafficResetDay", message: "Monthly reset day must be between 1 and 31" });
  if (v.holdDays !== null && v.expiresAt !== null) out.push({ path: "holdDays", message: "On hold sets the expiry at first connection: leave the expiry empty" });
  return out;
}

/** zod refinement of subscriberLimitsIssues, with field-named issues. */
export function refineSubscriberLimits(v: SubscriberLimitsInput, ctx: z.RefinementCtx): void {
  for (const i of subscriberLimitsIssues(v)) ctx.addIssue({ code: "custom", path: [i.path], message: i.message });
}

export const usernameSchema = z
  .string()
  .transform((s) => s.trim())
  .refine((s) => /^[\p{L}\p{N}._@-]{1,64}$/u.test(s), "Username: 1–64 letters, digits, dots, dashes, @ or _")
  // Hangul fillers are letters that show nothing: a username of them looks empty.
  .refine((s) => s.length === 0 || hasVisibleChar(s), "Username must have a visible character");

export const passwordSchema = z
  .string()
  .min(8, "Password must be at least 8 characters")
  .max(512, "Password must be at most 512 characters");

/** First-run setup code (printed at start, see server/auth/setup-code.ts). */
export const setupCodeSchema = z
  .string({ error: "Setup code is required" })
  .max(100, "Setup code is too long")
  .refine((s) => s.trim().length > 0, "Setup code is required");

/** An API token's name, as the audit log shows it ("token:<name>"): short, no spaces. */
export const apiTokenNameSchema = z
  .string({ error: "Name is required" })
  .max(400, "Name must be at most 40 characters")
  .transform((s) => s.trim())
  .refine((s) => s.length > 0, "Name is required")
  // Empty is the rule above's to report (zod runs every refinement).
  .refine((s) => s.length === 0 || /^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$/.test(s), "Name: 1–40 letters, digits, dots, dashes or _, starting with a letter or digit");

export const apiScopesSchema = z
  .array(z.enum(API_SCOPES, { error: `Unknown scope: use ${API_SCOPES.join(", ")}` }), { error: "Scopes must be a list" })
  .min(1, "Choose at least one scope")
  .max(10, "List each scope once");

/** Longest a token may be set to live; "never" is a choice of its own (null). */
export const API_TOKEN_MAX_YEARS = 10;

/** A token's expiry: a future date within API_TOKEN_MAX_YEARS, null for never, absent for the default. */
export const apiTokenExpirySchema = z.coerce
  .date({ error: "Expiry must be a date" })
  .refine((d) => !Number.isNaN(d.getTime()), "Expiry must be a date")
  .refine((d) => d.getTime() > Date.now(), "Expiry must be in the future")
  .refine((d) => d.getTime() <= Date.now() + API_TOKEN_MAX_YEARS * 366 * 86_400_000, `Expiry must be within ${API_TOKEN_MAX_YEARS} years: choose "never" instead`)
  .nullable()
  .optional();

export const operatorRoleSchema = z.enum(["owner", "admin", "viewer"], { error: "Role must be owner, admin or viewer" });

/**
 * Where to go after logging in (`/login?next=…`): only a path on this dashboard. Refused:
 * other origins ("https://evil.com"), protocol-relative ("//evil.com") and browser-lenient
 * variants ("/\evil.com", tabs and newlines that URL parsing drops), "javascript:".
 */
export function safeNextPath(next: string | null | undefined): string | null {
  if (!next || next.length > 2000) return null;
  if (!next.startsWith("/") || next.startsWith("//") || next.startsWith("/\\")) return null;
  if (next.includes("\\") || FORBIDDEN_CHARS.test(next)) return null;
  try {
    const base = "http://routeboard.invalid";
    const url = new URL(next, base);
    if (url.origin !== base) return null;
    return url.pathname + url.search + url.hash;
  } catch {
    return null;
  }
}

/** Reality masquerade target: host:port (IPv6 in brackets), e.g. www.microsoft.com:443. */
export const realityDestSchema = z
  .string()
  .max(300, "Dest is too long")
  .transform((s) => s.trim())
  .refine((s) => {
    const m = /^(.+):(\d{1,5})$/.exec(s);
    if (!m) return false;
    const port = Number(m[2]);
    const host = m[1]!;
    const hostOk = host.startsWith("[") ? host.endsWith("]") && isIpAddress(host) : !host.includes(":") && (isHostname(host) || isIpAddress(host));
    return hostOk && port >= 1 && port <= 65535;
  }, "Dest must be host:port, e.g. www.microsoft.com:443");

/** Reality server names: the SNI values the core accepts (at most 32 hostnames). */
export const realityServerNamesSchema = z
  .array(sniSchema, { error: "Server names must be a list of hostnames" })
  .max(32, "At most 32 server names");

/** Reality short ids: hex, an even number of digits up to 16 (Xray's rule); links use the first. */
export const realityShortIdsSchema = z
  .array(
    z
      .string()
      .transform((s) => s.trim().toLowerCase())
      .refine((s) => /^([0-9a-f]{2}){0,8}$/.test(s), "Short ids are hex digits (0-9, a-f), an even number of them, at most 16"),
    { error: "Short ids must be a list" },
  )
  .min(1, "At least one short id")
  .max(16, "At most 16 short ids")
  .refine((a) => new Set(a).size === a.length, "Short ids must differ from each other");

/** An absolute file path on the VPN server (TLS certificate or key). */
export const serverFilePathSchema = z
  .string()
  .max(4096, "Path is too long")
  .transform((s) => s.trim())
  .refine((s) => s.startsWith("/"), "Use an absolute path, e.g. /etc/ssl/private/example.key")
  .refine((s) => !/[\0\r\n]/.test(s), "Path must not contain line breaks");

/**
 * A cluster's allowed private destinations (core/edge.ts): each `ip[:port]` or `cidr[:port]`,
 * trimmed; an entry's error names it and sits on its index ("destinations.2").
 */
export const allowedPrivateDestinationsSchema = z
  .array(
    z
      .string({ error: "Each destination must be text such as 10.0.0.5:5432" })
      .max(100, "A destination is at most 100 characters")
      .transform((s) => s.trim())
      .superRefine((s, ctx) => {
        const p = parseAllowedDestination(s);
        if (!p.ok) ctx.addIssue({ code: "custom", message: p.error });
      }),
    { error: "Destinations must be a list" },
  )
  .max(MAX_ALLOWED_DESTINATIONS, `At most ${MAX_ALLOWED_DESTINATIONS} allowed destinations`)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((s, i) => {
      const key = s.toLowerCase();
      if (seen.has(key)) ctx.addIssue({ code: "custom", path: [i], message: `"${s}" is listed twice` });
      seen.add(key);
    });
  });

export const protocolSchema = z.enum(PROTOCOLS, { error: "Protocol must be VLESS, VMess, Trojan or Shadowsocks" });
export const transportSchema = z.enum(TRANSPORTS, { error: "Transport must be tcp, ws, grpc, httpupgrade, xhttp or h2" });
export const ssMethodSchema = z.enum(SS_METHODS, { error: `Cipher must be one of ${SS_METHODS.join(", ")}` });

/** The HTTP path of ws, HTTPUpgrade, XHTTP and h2: "/" and printable characters, no spaces. */
export const transportPathSchema = z
  .string({ error: "Path must be text such as /ws" })
  .max(200, "Path must be at most 200 characters")
  .transform((s) => s.trim())
  .refine((s) => s.startsWith("/"), "Path must start with /, e.g. /ws")
  .refine((s) => /^[\x21-\x7e]*$/.test(s), "Path must be printable ASCII without spaces");

/** The Host header the client sends (a CDN's front name); a hostname. */
export const transportHostSchema = z
  .string({ error: "Host must be a hostname" })
  .max(253, "Host is too long")
  .transform((s) => s.trim())
  .refine((s) => isHostname(s) && !s.endsWith("."), "Host must be a hostname such as cdn.example.com");

/** gRPC's service name: what the client's path is made of (/<name>/Tun). */
export const grpcServiceNameSchema = z
  .string({ error: "Service name must be text such as grpc" })
  .max(100, "Service name must be at most 100 characters")
  .transform((s) => s.trim())
  .refine((s) => /^[A-Za-z0-9._~-]+$/.test(s), "Service name: letters, digits, dots, dashes, _ or ~, e.g. grpc");

/** "a, b ,c" → ["a","b","c"] (form fields that hold lists). */
export function splitList(s: string): string[] {
  return s
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x.length > 0);
}

/**
 * The fields of an inbound, shared by the API and the form. Security-specific fields are
 * checked only for their security; the others are ignored (stored as given).
 */
export const inboundFieldsSchema = z
  .object({
    name: nameSchema,
    port: portSchema,
    protocol: protocolSchema.default(INBOUND_DEFAULTS.protocol),
    transport: transportSchema.default(INBOUND_DEFAULTS.transport),
    /** ws, httpupgrade, xhttp and h2; ignored (stored null) for the others. */
    path: transportPathSchema.nullable().default(null),
    /** Optional Host header for ws, httpupgrade, xhttp and h2. */
    host: transportHostSchema.nullable().default(null),
    /** gRPC only. */
    serviceName: grpcServiceNameSchema.nullable().default(null),
    /** Shadowsocks only. */
    ssMethod: ssMethodSchema.nullable().default(null),
    security: securitySchema.default(INBOUND_DEFAULTS.security),
    sni: sniSchema.nullable().default(null),
    /** null = `<sni>:443`. */
    realityDest: realityDestSchema.nullable().default(null),
    /** [] = the SNI. */
    realityServerNames: realityServerNamesSchema.default([]),
    /** Absent = keep the stored ones (or generate one for a new Reality inbound). */
    realityShortIds: realityShortIdsSchema.optional(),
    tlsCertificateFile: serverFilePathSchema.nullable().default(null),
    tlsKeyFile: serverFilePathSchema.nullable().default(null),
  })
  .superRefine((v, ctx) => {
    for (const i of protocolIssues(v)) ctx.addIssue({ code: "custom", path: [i.path], message: i.message });
    if (v.security === "tls" && v.sni === null) ctx.addIssue({ code: "custom", path: ["sni"], message: "TLS needs the server name (SNI): your certificate's domain" });
    if (v.security === "reality" && v.sni === null) ctx.addIssue({ code: "custom", path: ["sni"], message: "Reality needs a masquerade SNI: the site the inbound looks like" });
    // No TLS, no ClientHello: an SNI would go nowhere, and a stored one would mislead whoever reads it.
    if (v.security === "none" && v.sni !== null) ctx.addIssue({ code: "custom", path: ["sni"], message: "Security none sends no SNI: leave the server name empty, or choose TLS or Reality" });
    // Reality refuses a ClientHello whose SNI is not in serverNames: a link with another SNI never connects.
    if (v.security === "reality" && v.sni !== null && v.realityServerNames.length > 0 && !v.realityServerNames.includes(v.sni)) {
      ctx.addIssue({ code: "custom", path: ["sni"], message: `The link SNI ${v.sni} must be one of the accepted SNIs (${v.realityServerNames.join(", ")}): Reality refuses any other` });
    }
    if (v.security === "tls") {
      if (v.tlsCertificateFile === null) ctx.addIssue({ code: "custom", path: ["tlsCertificateFile"], message: "TLS needs the certificate file's path on the server" });
      if (v.tlsKeyFile === null) ctx.addIssue({ code: "custom", path: ["tlsKeyFile"], message: "TLS needs the key file's path on the server" });
    }
  });
export type InboundFieldsInput = z.input<typeof inboundFieldsSchema>;
export type InboundFields = z.output<typeof inboundFieldsSchema>;

/** Sort keys of the subscribers list; each sorts with the id as the tie-break. */
export const SUBSCRIBER_SORT_KEYS = ["usage", "lastSeen", "expiry", "created", "name"] as const;
export type SubscriberSortKey = (typeof SUBSCRIBER_SORT_KEYS)[number];
/** A subscriber is in exactly one of these (server/accounts/subscriber-list.ts: subscriberStatus). */
export const SUBSCRIBER_STATUSES = ["active", "limited", "expired", "disabled"] as const;
export type SubscriberStatus = (typeof SUBSCRIBER_STATUSES)[number];
export const SUBSCRIBER_PAGE_SIZE_MAX = 200;

/** Which subscribers of a cluster: the list's search and filters, and a bulk action's "all matching". */
export const subscriberFilterFields = {
  search: z.string({ error: "Search must be text" }).max(200, "Search must be at most 200 characters").optional(),
  status: z.enum(SUBSCRIBER_STATUSES, { error: "Status must be active, limited, expired or disabled" }).optional(),
  online: z.boolean({ error: "Online must be true or false" }).optional(),
  /** Only the subscribers on this plan. */
  planId: z.uuid("Plan must be a plan's id").optional(),
};

export const subscriberPageSchema = z.object({
  clusterId: idSchema,
  ...subscriberFilterFields,
  sort: z.enum(SUBSCRIBER_SORT_KEYS, { error: `Sort must be one of ${SUBSCRIBER_SORT_KEYS.join(", ")}` }).default("created"),
  dir: z.enum(["asc", "desc"], { error: "Direction must be asc or desc" }).default("desc"),
  page: z.number({ error: "Page must be a number" }).int("Page must be a whole number").min(1, "Page must be at least 1").max(1_000_000, "Page must be at most 1,000,000").default(1),
  pageSize: z
    .number({ error: "Page size must be a number" })
    .int("Page size must be a whole number")
    .min(1, `Page size must be between 1 and ${SUBSCRIBER_PAGE_SIZE_MAX}`)
    .max(SUBSCRIBER_PAGE_SIZE_MAX, `Page size must be between 1 and ${SUBSCRIBER_PAGE_SIZE_MAX}`)
    .default(50),
});
export type SubscriberPageQuery = z.output<typeof subscriberPageSchema>;

export const BULK_IDS_MAX = 1000;
export const EXTEND_DAYS_MAX = 3650;

export const subscriberBulkSchema = z.object({
  clusterId: idSchema,
  /** The selected rows, or every subscriber the filter matches ("all N matching"): exactly one. */
  selection: z
    .object({
      ids: z.array(idSchema).min(1, "Select at least one subscriber").max(BULK_IDS_MAX, `At most ${BULK_IDS_MAX} selected rows; use "all matching" for more`).optional(),
      matching: z.object(subscriberFilterFields).optional(),
    })
    .refine((s) => (s.ids === undefined) !== (s.matching === undefined), "Give either the selected ids or a filter, not both"),
  action: z.discriminatedUnion(
    "kind",
    [
      z.object({ kind: z.literal("enable") }),
      z.object({ kind: z.literal("disable") }),
      z.object({
        kind: z.literal("extend"),
        days: z
          .number({ error: "Days must be a number" })
          .int("Days must be a whole number")
          .min(1, `Days must be between 1 and ${EXTEND_DAYS_MAX}`)
          .max(EXTEND_DAYS_MAX, `Days must be between 1 and ${EXTEND_DAYS_MAX}`),
      }),
      z.object({ kind: z.literal("resetUsage") }),
      z.object({ kind: z.literal("delete") }),
      z.object({
        kind: z.literal("setPlan"),
        planId: idSchema,
        /** Also take the plan's traffic limit, reset and device limit (never the expiry); off = keep the subscribers' own. */
        applyLimits: z.boolean({ error: "Apply the plan's limits must be true or false" }).default(false),
      }),
    ],
    { error: "Action must be enable, disable, extend, resetUsage, delete or setPlan" },
  ),
  /** How many subscribers the confirmation named; the action is refused if that changed. */
  expectedCount: z.number().int().min(0).optional(),
});
export type SubscriberBulkInput = z.output<typeof subscriberBulkSchema>;

// ---------------------------------------------------------------------------------------------
// Plans (issue 27 point 2): which routes a subscriber gets, and a new subscriber's defaults
// ---------------------------------------------------------------------------------------------

export const PLAN_EXPIRY_DAYS_MAX = 3650;
export const PLAN_ROUTES_MAX = 1000;

/** A plan's expiry length: days from a subscriber's creation on it; null = never expires. */
export const planExpiryDaysSchema = z.coerce
  .number({ error: "Expiry length must be a number of days" })
  .int("Expiry length must be a whole number of days")
  .refine((n) => n >= 1 && n <= PLAN_EXPIRY_DAYS_MAX, `Expiry length must be between 1 and ${PLAN_EXPIRY_DAYS_MAX} days`)
  .nullable();

/** A plan's fields, as the Plans form and API send them. */
export const planFieldsSchema = z
  .object({
    name: nameSchema,
    /** Every route of the cluster, those created later included; routeIds must then be empty. */
    allRoutes: z.boolean({ error: "All routes must be true or false" }).default(false),
    routeIds: z
      .array(idSchema)
      .max(PLAN_ROUTES_MAX, `At most ${PLAN_ROUTES_MAX} routes`)
      .default([])
      .transform((ids) => [...new Set(ids.map((id) => id.toLowerCase()))]),
    trafficLimitGb: trafficLimitGbSchema.default(null),
    expiryDays: planExpiryDaysSchema.default(null),
    trafficResetStrategy: resetStrategySchema.default("never"),
    trafficResetDay: resetDaySchema.default(null),
    deviceLimit: deviceLimitSchema.default(null),
  })
  .superRefine((v, ctx) => {
    if (v.allRoutes && v.routeIds.length > 0) ctx.addIssue({ code: "custom", path: ["routeIds"], message: "A plan with all routes lists no routes: untick All routes to choose them" });
    // Stored in bytes: a limit that rounds to none would be no limit at all.
    if (v.trafficLimitGb !== null && Math.round(v.trafficLimitGb * GIB) < 1) ctx.addIssue({ code: "custom", path: ["trafficLimitGb"], message: "Traffic limit must be at least 1 byte" });
    for (const i of subscriberLimitsIssues({ expiresAt: null, holdDays: null, trafficResetStrategy: v.trafficResetStrategy, trafficResetDay: v.trafficResetDay })) {
      ctx.addIssue({ code: "custom", path: [i.path], message: i.message });
    }
  });
export type PlanFields = z.output<typeof planFieldsSchema>;
