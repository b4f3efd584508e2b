/**
 * 3x-ui (github.com/MHSanaei/3x-ui at 02002dc, internal/database/model/model.go and
 * internal/xray/client_traffic.go) to import rows: its database x-ui.db (tables `inbounds`,
 * whose `settings` JSON lists the `clients`, and `client_traffics`, up/down per email), or
 * the JSON of its API `GET /panel/api/inbounds/list` ({"obj": [inbounds with clientStats]}).
 *
 * A 3x-ui subscription (/sub/<subId>) lists every client with that subId, across inbounds:
 * those clients are one Routeboard subscriber (its traffic the sum of theirs; the VLESS or
 * VMess id and the Trojan password kept; limit, expiry and reset from the first of them).
 * A client without a subId is a subscriber of its own. Clients of other protocols
 * (WireGuard, Hysteria, ...) are skipped with a warning.
 *
 * Mapping: enable false on every client → disabled. totalGB is bytes (0 = no limit).
 * expiryTime is unix ms: 0 = never; negative = that long after the first use (hold days, up).
 * trafficReset never/daily/weekly/monthly → the same (weekly on Monday, monthly on
 * trafficResetDay or the 1st); hourly is a row error. `reset` (renew the expiry every N days)
 * is not kept: a warning names the client. comment → note.
 */
import { DAY_MS, RowError, bytes, emptyParsed, mapRow, textOrNull, uuidOrNull, type ImportRow, type Parsed } from "./rows";
import { allRows, isSqlite, tableExists, withSqlite } from "./sqlite";
import type { ResetStrategy } from "@/server/usage/limits";

type Rec = Record<string, unknown>;

interface Inbound {
  id: unknown;
  protocol: unknown;
  settings: unknown;
  remark?: unknown;
}

interface Traffic {
  up: number;
  down: number;
}

export async function parseThreeXui(bytesIn: Uint8Array): Promise<Parsed> {
  const out = emptyParsed();
  let inbounds: Inbound[];
  const traffic = new Map<string, Traffic>();
  if (isSqlite(bytesIn)) {
    const read = await withSqlite(bytesIn, (db) => {
      if (!tableExists(db, "inbounds")) return null;
      return { inbounds: allRows(db, "select id, protocol, settings, remark from inbounds order by id"), traffic: tableExists(db, "client_traffics") ? allRows(db, "select email, up, down from client_traffics") : [] };
    });
    if (!read) {
      out.errors.push({ ref: "file", reason: "A SQLite database without 3x-ui's inbounds table: expected x-ui.db" });
      return out;
    }
    inbounds = read.inbounds as unknown as Inbound[];
    for (const t of read.traffic) traffic.set(String(t.email), { up: Number(t.up ?? 0), down: Number(t.down ?? 0) });
  } else {
    let doc: unknown;
    try {
      doc = JSON.parse(Buffer.from(bytesIn).toString("utf8").replace(/^\uFEFF/, ""));
    } catch (err) {
      out.errors.push({ ref: "file", reason: `Not x-ui.db and not valid JSON: ${(err as Error).message}` });
      return out;
    }
    const list = Array.isArray(doc) ? doc : (doc as Rec)?.obj;
    if (!Array.isArray(list)) {
      out.errors.push({ ref: "file", reason: 'Expected x-ui.db or the JSON of 3x-ui\'s GET /panel/api/inbounds/list ({"obj": [...]})' });
      return out;
    }
    inbounds = list as Inbound[];
    for (const ib of list as Rec[]) for (const t of (ib.clientStats as Rec[] | undefined) ?? []) traffic.set(String(t.email), { up: Number(t.up ?? 0), down: Number(t.down ?? 0) });
  }

  // subId (or email when none) → the clients of one subscription, in inbound order.
  const groups = new Map<string, Array<{ client: Rec; protocol: string; inboundId: string }>>();
  for (const ib of inbounds) {
    const protocol = String(ib.protocol ?? "");
    let settings: Rec;
    try {
      settings = (typeof ib.settings === "string" ? JSON.parse(ib.settings) : ib.settings) as Rec;
    } catch {
      out.errors.push({ ref: `inbound ${String(ib.id)}`, field: "settings", reason: "settings is not JSON" });
      continue;
    }
    const clients = (settings?.clients ?? []) as unknown;
    if (!Array.isArray(clients)) continue;
    if (!["vless", "vmess", "trojan", "shadowsocks"].includes(protocol)) {
      // WireGuard lists its users as peers.
      const users = clients.length + (Array.isArray(settings?.peers) ? settings.peers.length : 0);
      if (users > 0) out.warnings.push({ ref: `inbound ${String(ib.id)}`, reason: `${users} ${protocol} user(s) skipped: only VLESS, VMess, Trojan and Shadowsocks clients are imported` });
      continue;
    }
    for (const c of clients as Rec[]) {
      const key = textOrNull(c?.subId) ? `sub:${String(c.subId)}` : `email:${String(c?.email ?? "")}`;
      const list = groups.get(key) ?? [];
      list.push({ client: c ?? {}, protocol, inboundId: String(ib.id) });
      groups.set(key, list);
    }
  }
  for (const [key, clients] of groups) {
    const first = clients[0]!.client;
    const ref = `client ${String(first.email ?? key)}`;
    mapRow(out, ref, () => toRow(out, ref, clients, traffic));
  }
  return out;
}

function toRow(out: Parsed, ref: string, clients: Array<{ client: Rec; protocol: string }>, traffic: Map<string, Traffic>): ImportRow {
  const first = clients[0]!.client;
  const name = textOrNull(first.email);
  if (!name) throw new RowError("email", "is missing");
  let vlessUuid: string | null = null;
  let trojanPassword: string | null = null;
  let up = 0;
  let down = 0;
  for (const { client, protocol } of clients) {
    if (protocol === "vless" || protocol === "vmess") {
      const id = uuidOrNull("id", client.id);
      if (vlessUuid && id && id !== vlessUuid) out.warnings.push({ ref, field: "id", reason: `${String(client.email)} has another id than ${name}: ${name}'s is kept for both` });
      vlessUuid ??= id;
    } else if (protocol === "trojan") trojanPassword ??= textOrNull(client.password);
    else if (protocol === "shadowsocks") out.warnings.push({ ref, field: "password", reason: "Shadowsocks password not kept: the Shadowsocks entry gets a new one" });
    const t = traffic.get(String(client.email));
    if (t) {
      up += bytes("up", t.up, false) ?? 0;
      down += bytes("down", t.down, false) ?? 0;
    }
  }
  const expiry = Number(first.expiryTime ?? 0);
  if (!Number.isSafeInteger(expiry)) throw new RowError("expiryTime", `is not a time in ms (${String(first.expiryTime)})`);
  const reset = String(first.trafficReset ?? "never") || "never";
  let resetStrategy: ResetStrategy;
  let resetDay: number | null = null;
  if (reset === "never" || reset === "daily") resetStrategy = reset;
  else if (reset === "weekly") [resetStrategy, resetDay] = ["weekly", 1];
  else if (reset === "monthly") {
    resetStrategy = "monthly";
    const d = Number(first.trafficResetDay ?? 1) || 1;
    if (!Number.isInteger(d) || d < 1 || d > 31) throw new RowError("trafficResetDay", `must be 1–31 (got ${String(first.trafficResetDay)})`);
    resetDay = d;
  } else throw new RowError("trafficReset", `is ${JSON.stringify(reset)}: Routeboard resets daily, weekly or monthly only`);
  if (Number(first.reset ?? 0) > 0) out.warnings.push({ ref, field: "reset", reason: `auto-renew every ${String(first.reset)} days is not kept: extend the expiry in Routeboard` });
  const limit = bytes("totalGB", first.totalGB, true);
  return {
    ref,
    name,
    vlessUuid,
    trojanPassword,
    enabled: clients.some((c) => c.client.enable !== false && c.client.enable !== 0),
    expiresAt: expiry > 0 ? new Date(expiry) : null,
    holdDays: expiry < 0 ? Math.max(1, Math.ceil(-expiry / DAY_MS)) : null,
    trafficLimitBytes: limit === 0 ? null : limit,
    upBytes: up,
    downBytes: down,
    resetStrategy,
    resetDay,
    note: textOrNull(first.comment),
    legacyKey: textOrNull(first.subId),
  };
}
