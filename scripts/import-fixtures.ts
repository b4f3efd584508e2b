/**
 * npm run import:fixtures — writes server/import/fixtures/: each panel's export as that panel
 * writes it, built from its real schema (the versions below), for the import tests and e2e.
 *
 * - Marzban v0.8.4 (github.com/Gozargah/Marzban, app/db/models.py: users, proxies, jwt;
 *   app/models/user.py UserResponse; app/utils/jwt.py create_subscription_token):
 *   marzban.sqlite3, marzban-dump.sql (mysqldump rows), marzban-users.json (GET /api/users).
 * - Remnawave backend 3.3.2 (github.com/remnawave/backend 347e6de, libs/contract/models/
 *   users.schema.ts, extended-users.schema.ts; commands/users/get-users.command.ts):
 *   remnawave-users.json.
 * - 3x-ui (github.com/MHSanaei/3x-ui 02002dc, internal/database/model/model.go Inbound and
 *   Client, internal/xray/client_traffic.go ClientTraffic; gorm's snake_case columns): x-ui.db.
 * - users.csv: Routeboard's own CSV columns (server/import/csv.ts).
 *
 * Deterministic: the same files every run (fixed UUIDs, secrets and times), so they are
 * committed and a change shows in the diff.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import initSqlJs from "sql.js";
import { marzbanToken } from "../server/import/legacy";

export const FIXTURE_DIR = path.resolve(import.meta.dirname, "../server/import/fixtures");
export const MARZBAN_SECRET = "4f1a0c9e7b2d4e6f8a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e1f3a5b7c9d1e3f";
/** The moment the fixtures' Marzban tokens were "shown" (any signed time works). */
export const MARZBAN_TOKEN_AT_S = 1_735_689_600;
const GIB = 1024 ** 3;
const EXPIRE_2030_S = 1_893_456_000; // 2030-01-01T00:00:00Z
const EXPIRED_2024_S = 1_704_067_200; // 2024-01-01T00:00:00Z

export const FIXTURE_UUIDS = {
  anna: "3b241101-e2bb-4255-8caf-4136c566a962",
  boris: "9d5a8e30-4c1f-4a7e-9e0b-6f2d1c3b4a51",
  clara: "c0a8e1f2-1111-4d2c-8a3b-0e9f8d7c6b5a",
  dmitri: "d4e5f6a7-2222-4b8c-9d0e-1f2a3b4c5d6e",
  elena: "e1e2e3e4-3333-4f5a-8b6c-7d8e9f0a1b2c",
  frank: "f7a8b9c0-4444-4d1e-8f2a-3b4c5d6e7f80",
  grace: "a1b2c3d4-5555-4e6f-9a0b-1c2d3e4f5a6b",
  heidi: "b2c3d4e5-6666-4f70-8b1c-2d3e4f5a6b7c",
  ivan: "c3d4e5f6-7777-4a81-9c2d-3e4f5a6b7c8d",
  judy: "d4e5f6a7-8888-4b92-8d3e-4f5a6b7c8d9e",
  kate: "e5f6a7b8-9999-4ca3-9e4f-5a6b7c8d9eaf",
  leo: "f6a7b8c9-aaaa-4db4-8f50-6b7c8d9eafb0",
};

interface MarzbanFixtureUser {
  id: number;
  username: string;
  status: string;
  used_traffic: number;
  data_limit: number | null;
  data_limit_reset_strategy: string;
  expire: number | null;
  note: string | null;
  on_hold_expire_duration: number | null;
  sub_revoked_at: string | null;
  created_at: string;
  proxies: Array<{ type: "VLESS" | "VMess" | "Trojan" | "Shadowsocks"; settings: Record<string, unknown> }>;
}

export const MARZBAN_USERS: MarzbanFixtureUser[] = [
  {
    id: 1,
    username: "anna",
    status: "active",
    used_traffic: 1 * GIB,
    data_limit: 10 * GIB,
    data_limit_reset_strategy: "month",
    expire: EXPIRE_2030_S,
    note: "VIP, pays yearly",
    on_hold_expire_duration: null,
    sub_revoked_at: null,
    created_at: "2024-03-15 10:20:30.123456",
    proxies: [
      { type: "VLESS", settings: { id: FIXTURE_UUIDS.anna, flow: "" } },
      { type: "Trojan", settings: { password: "anna-Trojan-pass-7", flow: "" } },
    ],
  },
  {
    id: 2,
    username: "boris",
    status: "disabled",
    used_traffic: 0,
    data_limit: null,
    data_limit_reset_strategy: "no_reset",
    expire: null,
    note: null,
    on_hold_expire_duration: null,
    sub_revoked_at: null,
    created_at: "2024-04-01 00:00:00",
    proxies: [{ type: "VMess", settings: { id: FIXTURE_UUIDS.boris } }],
  },
  {
    id: 3,
    username: "clara",
    status: "on_hold",
    used_traffic: 0,
    data_limit: 50 * GIB,
    data_limit_reset_strategy: "no_reset",
    expire: null,
    note: "trial",
    on_hold_expire_duration: 30 * 86400,
    sub_revoked_at: null,
    created_at: "2024-05-01 08:00:00",
    proxies: [{ type: "VLESS", settings: { id: FIXTURE_UUIDS.clara, flow: "xtls-rprx-vision" } }],
  },
  {
    id: 4,
    username: "dmitri",
    status: "limited",
    used_traffic: 5 * GIB,
    data_limit: 5 * GIB,
    data_limit_reset_strategy: "week",
    expire: EXPIRE_2030_S,
    note: "it's a \"quote\" and a back\\slash",
    on_hold_expire_duration: null,
    sub_revoked_at: "2024-06-01 00:00:00",
    created_at: "2024-05-06 12:00:00",
    proxies: [
      { type: "VLESS", settings: { id: FIXTURE_UUIDS.dmitri, flow: "" } },
      { type: "Shadowsocks", settings: { password: "dmitri-ss", method: "chacha20-ietf-poly1305" } },
    ],
  },
  {
    id: 5,
    username: "elena",
    status: "expired",
    used_traffic: 123456789,
    data_limit: 0,
    data_limit_reset_strategy: "day",
    expire: EXPIRED_2024_S,
    note: null,
    on_hold_expire_duration: null,
    sub_revoked_at: null,
    created_at: "2023-12-01 00:00:00",
    proxies: [{ type: "VLESS", settings: { id: FIXTURE_UUIDS.elena, flow: "" } }],
  },
];

const marzbanUsersSql = `CREATE TABLE users ( -- Marzban v0.8.4 app/db/models.py User (SQLAlchemy on SQLite: enums stored by name)
	id INTEGER NOT NULL,
	username VARCHAR(34),
	status VARCHAR(8) NOT NULL,
	used_traffic BIGINT,
	data_limit BIGINT,
	data_limit_reset_strategy VARCHAR(8) NOT NULL,
	expire INTEGER,
	admin_id INTEGER,
	sub_revoked_at DATETIME,
	sub_updated_at DATETIME,
	sub_last_user_agent VARCHAR(512),
	created_at DATETIME,
	note VARCHAR(500),
	online_at DATETIME,
	on_hold_expire_duration BIGINT,
	on_hold_timeout DATETIME,
	auto_delete_in_days INTEGER,
	edit_at DATETIME,
	last_status_change DATETIME,
	PRIMARY KEY (id)
)`;
const marzbanProxiesSql = `CREATE TABLE proxies ( -- Marzban v0.8.4 app/db/models.py Proxy
	id INTEGER NOT NULL,
	user_id INTEGER,
	type VARCHAR(11) NOT NULL,
	settings JSON NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(user_id) REFERENCES users (id)
)`;
const marzbanJwtSql = `CREATE TABLE jwt ( -- Marzban v0.8.4 app/db/models.py JWT
	id INTEGER NOT NULL,
	secret_key VARCHAR(64) NOT NULL,
	PRIMARY KEY (id)
)`;

function proxyRows() {
  let id = 0;
  return MARZBAN_USERS.flatMap((u) => u.proxies.map((p) => ({ id: ++id, user_id: u.id, type: p.type, settings: JSON.stringify(p.settings) })));
}

async function marzbanSqlite(SQL: Awaited<ReturnType<typeof initSqlJs>>): Promise<Uint8Array> {
  const db = new SQL.Database();
  db.run(marzbanUsersSql);
  db.run(marzbanProxiesSql);
  db.run(marzbanJwtSql);
  for (const u of MARZBAN_USERS) {
    db.run(
      "insert into users (id, username, status, used_traffic, data_limit, data_limit_reset_strategy, expire, admin_id, sub_revoked_at, created_at, note, on_hold_expire_duration) values (?,?,?,?,?,?,?,?,?,?,?,?)",
      [u.id, u.username, u.status, u.used_traffic, u.data_limit, u.data_limit_reset_strategy, u.expire, 1, u.sub_revoked_at, u.created_at, u.note, u.on_hold_expire_duration],
    );
  }
  for (const p of proxyRows()) db.run("insert into proxies (id, user_id, type, settings) values (?,?,?,?)", [p.id, p.user_id, p.type, p.settings]);
  db.run("insert into jwt (id, secret_key) values (1, ?)", [MARZBAN_SECRET]);
  const out = db.export();
  db.close();
  return out;
}

/** MySQL's quoting of a literal, as mysqldump writes it. */
function myLit(v: string | number | null): string {
  if (v === null) return "NULL";
  if (typeof v === "number") return String(v);
  return `'${v.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\0/g, "\\0")}'`;
}

function marzbanDump(): string {
  const users = MARZBAN_USERS.map((u) =>
    [u.id, u.username, u.status, u.used_traffic, u.data_limit, u.data_limit_reset_strategy, u.expire, 1, u.sub_revoked_at, null, null, u.created_at, u.note, null, u.on_hold_expire_duration, null, null, null, null].map(myLit).join(","),
  );
  const proxies = proxyRows().map((p) => [p.id, p.user_id, p.type, p.settings].map(myLit).join(","));
  return `-- Fixture: Marzban v0.8.4 (github.com/Gozargah/Marzban, app/db/models.py) on MySQL 8, as mysqldump writes it.
-- Generated by scripts/import-fixtures.ts.
/*!40101 SET NAMES utf8mb4 */;
DROP TABLE IF EXISTS \`users\`;
CREATE TABLE \`users\` (
  \`id\` int NOT NULL AUTO_INCREMENT,
  \`username\` varchar(34) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL,
  \`status\` enum('active','disabled','limited','expired','on_hold') NOT NULL,
  \`used_traffic\` bigint DEFAULT NULL,
  \`data_limit\` bigint DEFAULT NULL,
  \`data_limit_reset_strategy\` enum('no_reset','day','week','month','year') NOT NULL,
  \`expire\` int DEFAULT NULL,
  \`admin_id\` int DEFAULT NULL,
  \`sub_revoked_at\` datetime DEFAULT NULL,
  \`sub_updated_at\` datetime DEFAULT NULL,
  \`sub_last_user_agent\` varchar(512) DEFAULT NULL,
  \`created_at\` datetime DEFAULT NULL,
  \`note\` varchar(500) DEFAULT NULL,
  \`online_at\` datetime DEFAULT NULL,
  \`on_hold_expire_duration\` bigint DEFAULT NULL,
  \`on_hold_timeout\` datetime DEFAULT NULL,
  \`auto_delete_in_days\` int DEFAULT NULL,
  \`edit_at\` datetime DEFAULT NULL,
  \`last_status_change\` datetime DEFAULT NULL,
  PRIMARY KEY (\`id\`),
  UNIQUE KEY \`ix_users_username\` (\`username\`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
LOCK TABLES \`users\` WRITE;
INSERT INTO \`users\` VALUES (${users.join("),(")});
UNLOCK TABLES;
DROP TABLE IF EXISTS \`proxies\`;
CREATE TABLE \`proxies\` (
  \`id\` int NOT NULL AUTO_INCREMENT,
  \`user_id\` int DEFAULT NULL,
  \`type\` enum('VMess','VLESS','Trojan','Shadowsocks') NOT NULL,
  \`settings\` json NOT NULL,
  PRIMARY KEY (\`id\`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO \`proxies\` (\`id\`, \`user_id\`, \`type\`, \`settings\`) VALUES (${proxies.join("),(")});
CREATE TABLE \`jwt\` (
  \`id\` int NOT NULL AUTO_INCREMENT,
  \`secret_key\` varchar(64) NOT NULL,
  PRIMARY KEY (\`id\`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO \`jwt\` VALUES (1,${myLit(MARZBAN_SECRET)});
`;
}

function marzbanApiJson(): string {
  const proxyKey = { VLESS: "vless", VMess: "vmess", Trojan: "trojan", Shadowsocks: "shadowsocks" } as const;
  const users = MARZBAN_USERS.map((u) => ({
    proxies: Object.fromEntries(u.proxies.map((p) => [proxyKey[p.type], p.settings])),
    expire: u.expire,
    data_limit: u.data_limit,
    data_limit_reset_strategy: u.data_limit_reset_strategy,
    inbounds: {},
    note: u.note,
    sub_updated_at: null,
    sub_last_user_agent: null,
    online_at: null,
    on_hold_expire_duration: u.on_hold_expire_duration,
    on_hold_timeout: null,
    auto_delete_in_days: null,
    username: u.username,
    status: u.status,
    used_traffic: u.used_traffic,
    lifetime_used_traffic: u.used_traffic,
    created_at: u.created_at.replace(" ", "T"),
    links: [],
    subscription_url: `/sub/${marzbanToken(u.username, MARZBAN_SECRET, MARZBAN_TOKEN_AT_S)}`,
    excluded_inbounds: {},
    admin: { username: "admin", is_sudo: true, telegram_id: null, discord_webhook: null },
  }));
  return JSON.stringify({ _fixture: "Marzban v0.8.4 GET /api/users (app/models/user.py UsersResponse), generated by scripts/import-fixtures.ts", users, total: users.length }, null, 2) + "\n";
}

export const REMNAWAVE_SUB_HOST = "sub.example.test";

function remnawaveJson(): string {
  const base = { telegramId: null, email: null, tag: null, hwidDeviceLimit: null, externalSquadUuid: null, lastTriggeredThreshold: 0, subRevokedAt: null, lastTrafficResetAt: null, activeInternalSquads: [] };
  const user = (id: number, uuid: string, username: string, shortUuid: string, rest: Record<string, unknown>) => ({
    id,
    uuid,
    shortUuid,
    username,
    ...base,
    subscriptionUrl: `https://${REMNAWAVE_SUB_HOST}/${shortUuid}`,
    createdAt: "2025-01-17T09:00:00.000Z",
    updatedAt: "2025-06-01T09:00:00.000Z",
    ...rest,
  });
  const users = [
    user(1, "0b9a4c2e-0000-4000-8000-000000000001", "frank", "fRaNkShOrTuUiD01", {
      status: "ACTIVE",
      trafficLimitBytes: 100 * GIB,
      trafficLimitStrategy: "MONTH_ROLLING",
      expireAt: "2030-01-01T00:00:00.000Z",
      description: "from Remnawave",
      trojanPassword: "frankTrojanPassw0rd",
      vlessUuid: FIXTURE_UUIDS.frank,
      ssPassword: "frankSsPassw0rd",
      userTraffic: { usedTrafficBytes: 2 * GIB, lifetimeUsedTrafficBytes: 20 * GIB, onlineAt: null, firstConnectedAt: null, lastConnectedNodeUuid: null },
    }),
    user(2, "0b9a4c2e-0000-4000-8000-000000000002", "grace", "gRaCeShOrTuUiD02", {
      status: "DISABLED",
      trafficLimitBytes: 0,
      trafficLimitStrategy: "NO_RESET",
      expireAt: "2099-12-31T00:00:00.000Z",
      description: null,
      trojanPassword: "graceTrojanPassw0rd",
      vlessUuid: FIXTURE_UUIDS.grace,
      ssPassword: "graceSs",
      userTraffic: { usedTrafficBytes: 0, lifetimeUsedTrafficBytes: 0, onlineAt: null, firstConnectedAt: null, lastConnectedNodeUuid: null },
    }),
    user(3, "0b9a4c2e-0000-4000-8000-000000000003", "heidi", "hEiDiShOrTuUiD03", {
      status: "LIMITED",
      trafficLimitBytes: 1 * GIB,
      trafficLimitStrategy: "WEEK",
      expireAt: "2030-06-01T00:00:00.000Z",
      description: "over her limit",
      trojanPassword: "heidiTrojanPassw0rd",
      vlessUuid: FIXTURE_UUIDS.heidi,
      ssPassword: "heidiSs",
      userTraffic: { usedTrafficBytes: 1 * GIB, lifetimeUsedTrafficBytes: 3 * GIB, onlineAt: null, firstConnectedAt: null, lastConnectedNodeUuid: null },
    }),
  ];
  return (
    JSON.stringify(
      { _fixture: "Remnawave backend 3.3.2 GET /api/users (libs/contract/commands/users/get-users.command.ts ResponseSchema), generated by scripts/import-fixtures.ts", response: { users, total: users.length } },
      null,
      2,
    ) + "\n"
  );
}

const xuiInboundsSql = `CREATE TABLE \`inbounds\` ( -- 3x-ui 02002dc internal/database/model/model.go Inbound (gorm, SQLite)
	\`id\` integer PRIMARY KEY AUTOINCREMENT,
	\`user_id\` integer,
	\`up\` integer,
	\`down\` integer,
	\`total\` integer,
	\`remark\` text,
	\`sub_sort_index\` integer DEFAULT 1,
	\`enable\` numeric,
	\`expiry_time\` integer,
	\`traffic_reset\` text DEFAULT "never",
	\`traffic_reset_day\` integer DEFAULT 1,
	\`last_traffic_reset_time\` integer DEFAULT 0,
	\`listen\` text,
	\`port\` integer,
	\`protocol\` text,
	\`settings\` text,
	\`stream_settings\` text,
	\`tag\` text,
	\`sniffing\` text,
	\`node_id\` integer,
	\`share_addr_strategy\` text DEFAULT "node",
	\`share_addr\` text,
	\`disable_flow\` numeric DEFAULT false,
	\`origin_node_guid\` text,
	CONSTRAINT \`uni_inbounds_tag\` UNIQUE (\`tag\`)
)`;
const xuiTrafficSql = `CREATE TABLE \`client_traffics\` ( -- 3x-ui 02002dc internal/xray/client_traffic.go ClientTraffic
	\`id\` integer PRIMARY KEY AUTOINCREMENT,
	\`inbound_id\` integer,
	\`enable\` numeric,
	\`email\` text,
	\`up\` integer,
	\`down\` integer,
	\`expiry_time\` integer,
	\`total\` integer,
	\`reset\` integer DEFAULT 0,
	\`reset_day\` integer DEFAULT 0,
	\`reset_max\` integer DEFAULT 0,
	\`reset_count\` integer DEFAULT 0,
	\`last_online\` integer DEFAULT 0,
	\`last_sub_fetch\` integer DEFAULT 0,
	CONSTRAINT \`uni_client_traffics_email\` UNIQUE (\`email\`)
)`;

export const XUI_SUB_IDS = { ivan: "ivansub7k2m9q4x", judy: "judysub3p8w1z6c", kate: "katesub5n0r2t7v" };

function xuiClient(rest: Record<string, unknown>) {
  return { limitIp: 0, totalGB: 0, expiryTime: 0, enable: true, tgId: 0, subId: "", comment: "", reset: 0, created_at: 1735689600000, updated_at: 1735689600000, ...rest };
}

async function xuiDb(SQL: Awaited<ReturnType<typeof initSqlJs>>): Promise<Uint8Array> {
  const db = new SQL.Database();
  db.run(xuiInboundsSql);
  db.run(xuiTrafficSql);
  const inbounds = [
    {
      id: 1,
      remark: "VLESS-443",
      port: 443,
      protocol: "vless",
      settings: {
        clients: [
          xuiClient({ id: FIXTURE_UUIDS.ivan, flow: "", email: "ivan", totalGB: 20 * GIB, expiryTime: EXPIRE_2030_S * 1000, subId: XUI_SUB_IDS.ivan, comment: "from 3x-ui", trafficReset: "monthly", trafficResetDay: 5 }),
          xuiClient({ id: FIXTURE_UUIDS.judy, flow: "", email: "judy", expiryTime: -7 * 86_400_000, enable: false, subId: XUI_SUB_IDS.judy }),
          xuiClient({ id: FIXTURE_UUIDS.kate, flow: "", email: "kate", totalGB: 0, subId: XUI_SUB_IDS.kate, reset: 30 }),
        ],
        decryption: "none",
        fallbacks: [],
      },
    },
    {
      id: 2,
      remark: "Trojan-8443",
      port: 8443,
      protocol: "trojan",
      settings: { clients: [xuiClient({ password: "ivan-Trojan-8443", email: "ivan-trojan", totalGB: 20 * GIB, expiryTime: EXPIRE_2030_S * 1000, subId: XUI_SUB_IDS.ivan })], fallbacks: [] },
    },
    {
      id: 3,
      remark: "WG",
      port: 51820,
      protocol: "wireguard",
      settings: { mtu: 1420, secretKey: "x", peers: [{ privateKey: "y", publicKey: "z", allowedIPs: ["10.0.0.2/32"], keepAlive: 0 }], clients: [] },
    },
  ];
  for (const ib of inbounds) {
    db.run("insert into inbounds (id, user_id, up, down, total, remark, enable, expiry_time, listen, port, protocol, settings, stream_settings, tag, sniffing) values (?,1,0,0,0,?,1,0,'',?,?,?,'{}',?,'{}')", [
      ib.id,
      ib.remark,
      ib.port,
      ib.protocol,
      JSON.stringify(ib.settings, null, 2),
      `inbound-${ib.port}`,
    ]);
  }
  const traffic: Array<[number, string, number, number, number, boolean]> = [
    [1, "ivan", 100 * 1024 ** 2, 900 * 1024 ** 2, EXPIRE_2030_S * 1000, true],
    [2, "ivan-trojan", 10 * 1024 ** 2, 90 * 1024 ** 2, EXPIRE_2030_S * 1000, true],
    [1, "judy", 0, 0, -7 * 86_400_000, false],
    [1, "kate", 5, 7, 0, true],
  ];
  for (const [inboundId, email, up, down, expiry, enable] of traffic) {
    db.run("insert into client_traffics (inbound_id, enable, email, up, down, expiry_time, total) values (?,?,?,?,?,?,0)", [inboundId, enable ? 1 : 0, email, up, down, expiry]);
  }
  const out = db.export();
  db.close();
  return out;
}

function csv(): string {
  return [
    "# Fixture: Routeboard's import CSV (server/import/csv.ts), generated by scripts/import-fixtures.ts",
    "name,uuid,trojan_password,enabled,expires_at,hold_days,traffic_limit_gb,used_up_bytes,used_down_bytes,reset_strategy,reset_day,note,sub_token",
    `leo,${FIXTURE_UUIDS.leo},leo-trojan-pw,true,2030-01-01T00:00:00Z,,25,1000,2000,monthly,15,"Leo, the ""first"" CSV user",leoOldToken001`,
    `mia,,,false,,10,,0,0,never,,"two
lines",miaOldToken002`,
    "",
  ].join("\r\n");
}

async function main() {
  mkdirSync(FIXTURE_DIR, { recursive: true });
  const SQL = await initSqlJs();
  writeFileSync(path.join(FIXTURE_DIR, "marzban.sqlite3"), await marzbanSqlite(SQL));
  writeFileSync(path.join(FIXTURE_DIR, "marzban-dump.sql"), marzbanDump());
  writeFileSync(path.join(FIXTURE_DIR, "marzban-users.json"), marzbanApiJson());
  writeFileSync(path.join(FIXTURE_DIR, "remnawave-users.json"), remnawaveJson());
  writeFileSync(path.join(FIXTURE_DIR, "x-ui.db"), await xuiDb(SQL));
  writeFileSync(path.join(FIXTURE_DIR, "users.csv"), csv());
  process.stdout.write(`fixtures written to ${FIXTURE_DIR}\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) await main();
