/**
 * Marzban (github.com/Gozargah/Marzban v0.8.4, app/db/models.py and app/models/user.py) to
 * import rows. Three forms of the same users:
 * - its database: the SQLite file (db.sqlite3) or a MySQL dump's rows of `users`, `proxies`
 *   (type VLESS/VMess/Trojan/Shadowsocks, settings JSON) and `jwt` (the signing secret);
 * - its API's user JSON: `GET /api/users` ({"users": [...], "total"}) or a list of users.
 *
 * Mapping (README, "Importing from another panel"):
 * - status: disabled → disabled; active, limited and expired → enabled, their limit and expiry
 *   block them as before; on_hold → hold days = on_hold_expire_duration (seconds) in days, up.
 * - expire: unix seconds (0/null = never); data_limit 0/null = no limit.
 * - used_traffic is one total: counted as download (a VPN user's traffic is mostly that; only
 *   the sum matters to the limit).
 * - data_limit_reset_strategy: no_reset/day/week/month → never/daily/weekly/monthly (weekly
 *   on the weekday, monthly on the day of the month, of the user's created_at: Marzban resets
 *   in periods counted from then); `year` has no equivalent and is a row error (a yearly
 *   reset mapped to never or monthly would block or free the user at the wrong time).
 * - proxies: the VLESS id (else the VMess id) is kept as the UUID, the Trojan password as is;
 *   a Shadowsocks password is not kept (a warning names the user).
 * - subscription: Marzban signs a new token each time a user is shown (app/utils/jwt.py
 *   create_subscription_token: base64url("username,unix time") + 10 characters of
 *   base64url(sha256(that + secret))), so a user's app may hold any of many tokens. With the
 *   secret (in the database's `jwt` table, or given for API JSON) every one of them keeps
 *   working; without it only the token in the JSON's subscription_url does.
 */
import { DAY_MS, RowError, bytes, emptyParsed, mapRow, textOrNull, uuidOrNull, type ImportRow, type Parsed } from "./rows";
import { dumpRows, type SqlValue } from "./sql-dump";
import { allRows, isSqlite, tableExists, withSqlite } from "./sqlite";
import type { ResetStrategy } from "@/server/usage/limits";

interface MarzbanUser {
  username: unknown;
  status: unknown;
  used_traffic: unknown;
  data_limit: unknown;
  data_limit_reset_strategy: unknown;
  expire: unknown;
  note: unknown;
  on_hold_expire_duration: unknown;
  sub_revoked_at?: unknown;
  created_at?: unknown;
  subscription_url?: unknown;
  proxies: Record<string, Record<string, unknown> | undefined>;
}

export async function parseMarzban(bytesIn: Uint8Array, opts: { secret?: string | null } = {}): Promise<Parsed> {
  if (isSqlite(bytesIn)) return fromDatabase(await readSqlite(bytesIn), opts);
  const text = Buffer.from(bytesIn).toString("utf8").replace(/^\uFEFF/, "");
  if (/^\s*[[{]/.test(text)) return fromApiJson(text, opts);
  if (/INSERT\s+INTO\s+[`"]?users[`"]?/i.test(text)) return fromDatabase(readDump(text), opts);
  const out = emptyParsed();
  out.errors.push({ ref: "file", reason: "Not a Marzban export: expected its SQLite database, a MySQL dump with INSERT INTO `users`, or the JSON of GET /api/users" });
  return out;
}

interface DbRows {
  users: Array<Record<string, SqlValue>>;
  proxies: Array<Record<string, SqlValue>>;
  secret: string | null;
}

function readDump(text: string): DbRows {
  const jwt = dumpRows(text, "jwt")[0];
  return { users: dumpRows(text, "users"), proxies: dumpRows(text, "proxies"), secret: secretOf(jwt) };
}

function secretOf(jwt: Record<string, SqlValue> | undefined): string | null {
  // v0.8 has secret_key; later versions split it and sign subscriptions with subscription_secret_key.
  const s = jwt?.subscription_secret_key ?? jwt?.secret_key;
  return typeof s === "string" && s.length > 0 ? s : null;
}

function readSqlite(bytesIn: Uint8Array): Promise<DbRows> {
  return withSqlite(bytesIn, (db) => {
    if (!tableExists(db, "users") || !tableExists(db, "proxies")) throw new RowError("file", "is a SQLite database without Marzban's users and proxies tables");
    const jwt = tableExists(db, "jwt") ? allRows(db, `select * from jwt limit 1`)[0] : undefined;
    return { users: allRows(db, "select * from users order by id"), proxies: allRows(db, "select * from proxies order by id"), secret: secretOf(jwt) };
  });
}

function fromDatabase(rows: DbRows, opts: { secret?: string | null }): Parsed {
  const out = emptyParsed();
  out.marzbanSecret = opts.secret ?? rows.secret;
  const proxiesByUser = new Map<string, Record<string, Record<string, unknown>>>();
  for (const p of rows.proxies) {
    const key = String(p.user_id);
    const list = proxiesByUser.get(key) ?? {};
    let settings: Record<string, unknown> = {};
    try {
      settings = typeof p.settings === "string" ? (JSON.parse(p.settings) as Record<string, unknown>) : {};
    } catch {
      out.errors.push({ ref: `proxy ${String(p.id)}`, field: "settings", reason: "settings is not JSON" });
    }
    list[String(p.type).toLowerCase()] = settings;
    proxiesByUser.set(key, list);
  }
  for (const u of rows.users) {
    const ref = `user ${String(u.username ?? `#${String(u.id)}`)}`;
    mapRow(out, ref, () => toRow(out, ref, { ...u, proxies: proxiesByUser.get(String(u.id)) ?? {} } as MarzbanUser));
  }
  return out;
}

function fromApiJson(text: string, opts: { secret?: string | null }): Parsed {
  const out = emptyParsed();
  out.marzbanSecret = opts.secret ?? null;
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    out.errors.push({ ref: "file", reason: `Not valid JSON: ${(err as Error).message}` });
    return out;
  }
  const users = Array.isArray(doc) ? doc : (doc as { users?: unknown })?.users;
  if (!Array.isArray(users)) {
    out.errors.push({ ref: "file", reason: 'Expected the JSON of Marzban\'s GET /api/users ({"users": [...]}) or a list of users' });
    return out;
  }
  users.forEach((u: unknown, i) => {
    const rec = (u ?? {}) as MarzbanUser;
    const ref = typeof rec.username === "string" ? `user ${rec.username}` : `users[${i}]`;
    mapRow(out, ref, () => {
      if (typeof u !== "object" || u === null) throw new RowError("user", "is not an object");
      return toRow(out, ref, { ...rec, proxies: (rec.proxies ?? {}) as MarzbanUser["proxies"] });
    });
  });
  return out;
}

const RESETS: Record<string, ResetStrategy> = { no_reset: "never", day: "daily", week: "weekly", month: "monthly" };

/** A Marzban time: unix seconds, or an ISO/SQL datetime (UTC, as Marzban stores naive datetimes). */
function marzbanTime(field: string, v: unknown): Date | null {
  if (v === null || v === undefined || v === "" || v === 0 || v === "0") return null;
  if (typeof v === "number" || (typeof v === "string" && /^\d+$/.test(v))) {
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < 0 || n > 253402300799) throw new RowError(field, `is not a valid time (${String(v)})`);
    return new Date(n * 1000);
  }
  if (typeof v === "string") {
    const iso = v.includes("T") ? v : v.replace(" ", "T");
    const d = new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(iso) ? iso : `${iso}Z`);
    if (!Number.isNaN(d.getTime())) return d;
  }
  throw new RowError(field, `is not a valid time (${JSON.stringify(v).slice(0, 40)})`);
}

function toRow(out: Parsed, ref: string, u: MarzbanUser): ImportRow {
  const username = textOrNull(u.username);
  if (!username) throw new RowError("username", "is missing");
  const status = String(u.status ?? "active").toLowerCase();
  if (!["active", "disabled", "limited", "expired", "on_hold"].includes(status)) throw new RowError("status", `is unknown: ${JSON.stringify(u.status)}`);
  const strategyName = String(u.data_limit_reset_strategy ?? "no_reset").toLowerCase();
  const strategy = RESETS[strategyName];
  if (!strategy) {
    if (strategyName === "year") throw new RowError("data_limit_reset_strategy", "is year: Routeboard resets daily, weekly or monthly only; change it in Marzban (or the file) and import again");
    throw new RowError("data_limit_reset_strategy", `is unknown: ${JSON.stringify(u.data_limit_reset_strategy)}`);
  }
  const createdAt = marzbanTime("created_at", u.created_at) ?? null;
  const resetDay = strategy === "weekly" ? (((createdAt?.getUTCDay() ?? 1) + 6) % 7) + 1 : strategy === "monthly" ? (createdAt?.getUTCDate() ?? 1) : null;
  let holdDays: number | null = null;
  let expiresAt = marzbanTime("expire", u.expire);
  if (status === "on_hold") {
    const seconds = bytes("on_hold_expire_duration", u.on_hold_expire_duration, true);
    if (!seconds) throw new RowError("on_hold_expire_duration", "is missing for an on_hold user");
    holdDays = Math.max(1, Math.ceil((seconds * 1000) / DAY_MS));
    expiresAt = null;
  }
  const vless = u.proxies.vless;
  const vmess = u.proxies.vmess;
  const trojan = u.proxies.trojan;
  const vlessUuid = uuidOrNull("proxies.vless.id", vless?.id) ?? uuidOrNull("proxies.vmess.id", vmess?.id);
  const vmessId = uuidOrNull("proxies.vmess.id", vmess?.id);
  if (vless?.id && vmessId && vmessId !== vlessUuid) out.warnings.push({ ref, field: "proxies.vmess.id", reason: "VMess id differs from the VLESS id: the VLESS id is kept for both" });
  if (u.proxies.shadowsocks) out.warnings.push({ ref, field: "proxies.shadowsocks.password", reason: "Shadowsocks password not kept: the user's Shadowsocks entry gets a new one" });
  const trojanPassword = textOrNull(trojan?.password);
  const legacyUrl = textOrNull(u.subscription_url);
  const limit = bytes("data_limit", u.data_limit, true);
  return {
    ref,
    name: username,
    vlessUuid,
    trojanPassword,
    enabled: status !== "disabled",
    expiresAt,
    holdDays,
    trafficLimitBytes: limit === 0 ? null : limit,
    upBytes: 0,
    downBytes: bytes("used_traffic", u.used_traffic, false) ?? 0,
    resetStrategy: strategy,
    resetDay,
    note: textOrNull(u.note),
    legacyKey: legacyUrl ? (/\/sub\/([^/?#]+)/.exec(legacyUrl)?.[1] ?? null) : null,
    legacyUrl,
    marzbanUsername: username,
    notBefore: marzbanTime("sub_revoked_at", u.sub_revoked_at),
  };
}
