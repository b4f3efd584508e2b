/**
 * Remnawave (github.com/remnawave/backend 3.3.2, libs/contract/models/users.schema.ts and
 * extended-users.schema.ts) to import rows: the JSON of `GET /api/users`
 * ({"response": {"users": [...], "total"}}), or a list of those users.
 *
 * Mapping: status DISABLED → disabled; ACTIVE, LIMITED and EXPIRED → enabled (their limit and
 * expiry block them as before). trafficLimitBytes 0 = no limit. trafficLimitStrategy NO_RESET /
 * DAY / WEEK / MONTH → never / daily / weekly (Monday) / monthly (the 1st); MONTH_ROLLING
 * (a month from the user's creation) → monthly on the day of the month of createdAt.
 * userTraffic.usedTrafficBytes (usedTrafficBytes in 1.x) is one total, counted as download.
 * vlessUuid and trojanPassword are kept; ssPassword is not (a warning names the user).
 * The old subscription URL is subscriptionUrl (https://<SUB_PUBLIC_DOMAIN>/<shortUuid>).
 */
import { RowError, bytes, emptyParsed, mapRow, textOrNull, uuidOrNull, type ImportRow, type Parsed } from "./rows";
import type { ResetStrategy } from "@/server/usage/limits";

type Rec = Record<string, unknown>;

export function parseRemnawave(bytesIn: Uint8Array): Parsed {
  const out = emptyParsed();
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(bytesIn).toString("utf8").replace(/^\uFEFF/, ""));
  } catch (err) {
    out.errors.push({ ref: "file", reason: `Not valid JSON: ${(err as Error).message}` });
    return out;
  }
  const users = Array.isArray(doc) ? doc : ((doc as Rec)?.response as Rec | undefined)?.users ?? (doc as Rec)?.users;
  if (!Array.isArray(users)) {
    out.errors.push({ ref: "file", reason: 'Expected the JSON of Remnawave\'s GET /api/users ({"response": {"users": [...]}}) or a list of users' });
    return out;
  }
  users.forEach((u: unknown, i) => {
    const rec = (typeof u === "object" && u !== null ? u : {}) as Rec;
    const ref = typeof rec.username === "string" ? `user ${rec.username}` : `users[${i}]`;
    mapRow(out, ref, () => {
      if (typeof u !== "object" || u === null) throw new RowError("user", "is not an object");
      return toRow(out, ref, rec);
    });
  });
  return out;
}

function time(field: string, v: unknown): Date | null {
  if (v === null || v === undefined || v === "") return null;
  const d = typeof v === "string" ? new Date(v) : null;
  if (!d || Number.isNaN(d.getTime())) throw new RowError(field, `is not an ISO date-time (${JSON.stringify(v).slice(0, 40)})`);
  return d;
}

function toRow(out: Parsed, ref: string, u: Rec): ImportRow {
  const username = textOrNull(u.username);
  if (!username) throw new RowError("username", "is missing");
  const status = String(u.status ?? "ACTIVE").toUpperCase();
  if (!["ACTIVE", "DISABLED", "LIMITED", "EXPIRED"].includes(status)) throw new RowError("status", `is unknown: ${JSON.stringify(u.status)}`);
  const createdAt = time("createdAt", u.createdAt);
  const strategyName = String(u.trafficLimitStrategy ?? "NO_RESET").toUpperCase();
  let resetStrategy: ResetStrategy;
  let resetDay: number | null = null;
  if (strategyName === "NO_RESET") resetStrategy = "never";
  else if (strategyName === "DAY") resetStrategy = "daily";
  else if (strategyName === "WEEK") [resetStrategy, resetDay] = ["weekly", 1];
  else if (strategyName === "MONTH") [resetStrategy, resetDay] = ["monthly", 1];
  else if (strategyName === "MONTH_ROLLING") [resetStrategy, resetDay] = ["monthly", createdAt?.getUTCDate() ?? 1];
  else throw new RowError("trafficLimitStrategy", `is unknown: ${JSON.stringify(u.trafficLimitStrategy)}`);
  if (textOrNull(u.ssPassword)) out.warnings.push({ ref, field: "ssPassword", reason: "Shadowsocks password not kept: the user's Shadowsocks entry gets a new one" });
  const traffic = (u.userTraffic ?? {}) as Rec;
  const limit = bytes("trafficLimitBytes", u.trafficLimitBytes, true);
  return {
    ref,
    name: username,
    vlessUuid: uuidOrNull("vlessUuid", u.vlessUuid),
    trojanPassword: textOrNull(u.trojanPassword),
    enabled: status !== "DISABLED",
    expiresAt: time("expireAt", u.expireAt),
    holdDays: null,
    trafficLimitBytes: limit === 0 ? null : limit,
    upBytes: 0,
    downBytes: bytes("usedTrafficBytes", traffic.usedTrafficBytes ?? u.usedTrafficBytes, false) ?? 0,
    resetStrategy,
    resetDay,
    note: textOrNull(u.description),
    legacyKey: textOrNull(u.shortUuid),
    legacyUrl: textOrNull(u.subscriptionUrl),
  };
}
