/** Each source's reader against its fixture (the panel's real schema) and the edge cases of its format. */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { FIXTURE_UUIDS, MARZBAN_SECRET, MARZBAN_TOKEN_AT_S } from "@/scripts/import-fixtures";
import { parseCsv, readCsv } from "./csv";
import { marzbanToken, verifyMarzbanToken } from "./legacy";
import { parseMarzban } from "./marzban";
import { parseRemnawave } from "./remnawave";
import { dumpRows, DumpError } from "./sql-dump";
import { parseThreeXui } from "./threexui";

const fixture = (name: string) => new Uint8Array(readFileSync(path.join(__dirname, "fixtures", name)));
const text = (s: string) => new Uint8Array(Buffer.from(s, "utf8"));
const GIB = 1024 ** 3;

describe("Marzban", () => {
  const expectFixtureUsers = (p: Awaited<ReturnType<typeof parseMarzban>>) => {
    expect(p.errors).toEqual([]);
    const by = Object.fromEntries(p.rows.map((r) => [r.name, r]));
    expect(Object.keys(by)).toEqual(["anna", "boris", "clara", "dmitri", "elena"]);
    expect(by.anna).toMatchObject({
      vlessUuid: FIXTURE_UUIDS.anna,
      trojanPassword: "anna-Trojan-pass-7",
      enabled: true,
      expiresAt: new Date("2030-01-01T00:00:00Z"),
      trafficLimitBytes: 10 * GIB,
      upBytes: 0,
      downBytes: GIB,
      resetStrategy: "monthly",
      resetDay: 15,
      note: "VIP, pays yearly",
      marzbanUsername: "anna",
    });
    // VMess-only: its id is the UUID; disabled stays disabled.
    expect(by.boris).toMatchObject({ vlessUuid: FIXTURE_UUIDS.boris, enabled: false, trafficLimitBytes: null, resetStrategy: "never" });
    expect(by.clara).toMatchObject({ holdDays: 30, expiresAt: null, enabled: true });
    // Limited and expired stay enabled: their limit and expiry block them.
    expect(by.dmitri).toMatchObject({ enabled: true, resetStrategy: "weekly", resetDay: 1, note: 'it\'s a "quote" and a back\\slash' });
    expect(by.elena).toMatchObject({ enabled: true, expiresAt: new Date("2024-01-01T00:00:00Z"), trafficLimitBytes: null, resetStrategy: "daily" });
    expect(p.warnings).toEqual([expect.objectContaining({ ref: "user dmitri", field: "proxies.shadowsocks.password" })]);
  };

  it("reads its SQLite database, with the signing secret", async () => {
    const p = await parseMarzban(fixture("marzban.sqlite3"));
    expectFixtureUsers(p);
    expect(p.marzbanSecret).toBe(MARZBAN_SECRET);
    // Revoked links: tokens signed before this are refused (the API's JSON does not carry it).
    expect(p.rows[3]!.notBefore).toEqual(new Date("2024-06-01T00:00:00Z"));
  });

  it("reads a MySQL dump's rows, with the signing secret", async () => {
    const p = await parseMarzban(fixture("marzban-dump.sql"));
    expectFixtureUsers(p);
    expect(p.marzbanSecret).toBe(MARZBAN_SECRET);
    expect(p.rows[3]!.notBefore).toEqual(new Date("2024-06-01T00:00:00Z"));
  });

  it("reads the API's user JSON, keeping the token of subscription_url", async () => {
    const p = await parseMarzban(fixture("marzban-users.json"));
    expectFixtureUsers(p);
    expect(p.marzbanSecret).toBeNull();
    expect(p.rows[0]!.legacyKey).toBe(marzbanToken("anna", MARZBAN_SECRET, MARZBAN_TOKEN_AT_S));
  });

  it("names every bad row and why: unknown status, year reset, bad UUID, huge numbers, missing fields", async () => {
    const users = [
      { username: "ok", status: "active", proxies: { vless: { id: FIXTURE_UUIDS.anna } } },
      { username: "s", status: "frozen", proxies: {} },
      { username: "y", status: "active", data_limit_reset_strategy: "year", proxies: {} },
      { username: "u", status: "active", proxies: { vless: { id: "not-a-uuid" } } },
      { username: "h", status: "active", used_traffic: "99999999999999999999", proxies: {} },
      { username: "n", status: "active", data_limit: -5, proxies: {} },
      { status: "active", proxies: {} },
      { username: "o", status: "on_hold", proxies: {} },
      7,
    ];
    const p = await parseMarzban(text(JSON.stringify({ users })));
    expect(p.rows.map((r) => r.name)).toEqual(["ok"]);
    expect(p.errors.map((e) => [e.ref, e.field])).toEqual([
      ["user s", "status"],
      ["user y", "data_limit_reset_strategy"],
      ["user u", "proxies.vless.id"],
      ["user h", "used_traffic"],
      ["user n", "data_limit"],
      ["users[6]", "username"],
      ["user o", "on_hold_expire_duration"],
      ["users[8]", "user"],
    ]);
    expect(p.errors[1]!.reason).toMatch(/year: Routeboard resets daily, weekly or monthly only/);
  });

  it("refuses a file that is none of its forms", async () => {
    const p = await parseMarzban(text("hello"));
    expect(p.rows).toEqual([]);
    expect(p.errors[0]!.reason).toMatch(/Not a Marzban export/);
  });

  it("verifies its subscription tokens as Marzban does, and only with its secret", () => {
    const token = marzbanToken("anna", MARZBAN_SECRET, 1_700_000_000);
    expect(verifyMarzbanToken(token, MARZBAN_SECRET)).toEqual({ username: "anna", createdAtS: 1_700_000_000 });
    expect(verifyMarzbanToken(token, "another secret")).toBeNull();
    expect(verifyMarzbanToken(token.slice(0, -1) + (token.endsWith("A") ? "B" : "A"), MARZBAN_SECRET)).toBeNull();
    expect(verifyMarzbanToken("short", MARZBAN_SECRET)).toBeNull();
  });
});

describe("MySQL dump rows", () => {
  it("reads quoting and escapes: doubled quotes, backslashes, NULL, numbers, hex, multi-row", () => {
    const dump = "INSERT INTO `t` (`a`,`b`,`c`) VALUES ('it''s','a\\\\b\\'c\\nd',NULL),(0x6869,-12,'x,y)z');\nINSERT INTO `other` VALUES (1);";
    expect(dumpRows(dump, "t")).toEqual([
      { a: "it's", b: "a\\b'c\nd", c: null },
      { a: "hi", b: -12, c: "x,y)z" },
    ]);
  });
  it("takes column names from CREATE TABLE when the INSERT has none", () => {
    const dump = "CREATE TABLE `t` (\n  `id` int NOT NULL,\n  `name` varchar(3),\n  PRIMARY KEY (`id`)\n);\nINSERT INTO `t` VALUES (1,'a'),(2,'b');";
    expect(dumpRows(dump, "t")).toEqual([
      { id: 1, name: "a" },
      { id: 2, name: "b" },
    ]);
  });
  it("keeps integers beyond 2^53 as text, and fails on an unterminated string", () => {
    expect(dumpRows("INSERT INTO t (a) VALUES (123456789012345678901);", "t")).toEqual([{ a: "123456789012345678901" }]);
    expect(() => dumpRows("INSERT INTO t (a) VALUES ('abc", "t")).toThrow(DumpError);
  });
});

describe("Remnawave", () => {
  it("reads GET /api/users", () => {
    const p = parseRemnawave(fixture("remnawave-users.json"));
    expect(p.errors).toEqual([]);
    expect(p.rows.map((r) => [r.name, r.enabled])).toEqual([
      ["frank", true],
      ["grace", false],
      ["heidi", true],
    ]);
    expect(p.rows[0]).toMatchObject({
      vlessUuid: FIXTURE_UUIDS.frank,
      trojanPassword: "frankTrojanPassw0rd",
      trafficLimitBytes: 100 * GIB,
      downBytes: 2 * GIB,
      resetStrategy: "monthly",
      resetDay: 17,
      legacyKey: "fRaNkShOrTuUiD01",
      legacyUrl: "https://sub.example.test/fRaNkShOrTuUiD01",
      note: "from Remnawave",
    });
    expect(p.rows[1]).toMatchObject({ trafficLimitBytes: null, resetStrategy: "never" });
    expect(p.rows[2]).toMatchObject({ resetStrategy: "weekly", resetDay: 1 });
    expect(p.warnings.map((w) => w.field)).toEqual(["ssPassword", "ssPassword", "ssPassword"]);
  });
  it("names bad rows", () => {
    const p = parseRemnawave(text(JSON.stringify([{ username: "a", status: "ACTIVE", trafficLimitStrategy: "YEAR" }, { username: "b", status: "ACTIVE", expireAt: "soon" }])));
    expect(p.errors.map((e) => [e.ref, e.field])).toEqual([
      ["user a", "trafficLimitStrategy"],
      ["user b", "expireAt"],
    ]);
  });
});

describe("3x-ui", () => {
  it("reads x-ui.db: one subscriber per subId, traffic summed, other protocols skipped", async () => {
    const p = await parseThreeXui(fixture("x-ui.db"));
    expect(p.errors).toEqual([]);
    const by = Object.fromEntries(p.rows.map((r) => [r.name, r]));
    expect(Object.keys(by)).toEqual(["ivan", "judy", "kate"]);
    expect(by.ivan).toMatchObject({
      vlessUuid: FIXTURE_UUIDS.ivan,
      trojanPassword: "ivan-Trojan-8443",
      upBytes: 110 * 1024 ** 2,
      downBytes: 990 * 1024 ** 2,
      trafficLimitBytes: 20 * GIB,
      expiresAt: new Date("2030-01-01T00:00:00Z"),
      resetStrategy: "monthly",
      resetDay: 5,
      note: "from 3x-ui",
      legacyKey: "ivansub7k2m9q4x",
    });
    expect(by.judy).toMatchObject({ enabled: false, holdDays: 7, expiresAt: null });
    expect(by.kate).toMatchObject({ upBytes: 5, downBytes: 7, trafficLimitBytes: null });
    expect(p.warnings.map((w) => w.ref)).toEqual(["inbound 3", "client kate"]);
  });
  it("reads the API's inbound list JSON", async () => {
    const obj = [
      {
        id: 1,
        protocol: "vmess",
        settings: JSON.stringify({ clients: [{ id: FIXTURE_UUIDS.kate, email: "k", enable: true, expiryTime: 0, totalGB: 0, subId: "", trafficReset: "hourly" }, { id: FIXTURE_UUIDS.leo, email: "l", enable: true, expiryTime: 0, totalGB: 0, subId: "" }] }),
        clientStats: [{ email: "l", up: 1, down: 2 }],
      },
    ];
    const p = await parseThreeXui(text(JSON.stringify({ success: true, obj })));
    expect(p.rows).toEqual([expect.objectContaining({ name: "l", upBytes: 1, downBytes: 2, vlessUuid: FIXTURE_UUIDS.leo })]);
    expect(p.errors).toEqual([expect.objectContaining({ ref: "client k", field: "trafficReset" })]);
  });
});

describe("CSV", () => {
  it("reads RFC 4180: quotes, doubled quotes, line breaks in a field, BOM, CRLF, comment lines", () => {
    expect(readCsv('\uFEFFa,b\r\n"x, ""y""","1\n2"\r\n')).toEqual([
      ["a", "b"],
      ['x, "y"', "1\n2"],
    ]);
    const p = parseCsv(fixture("users.csv"));
    expect(p.errors).toEqual([]);
    expect(p.rows[0]).toMatchObject({
      name: "leo",
      vlessUuid: FIXTURE_UUIDS.leo,
      trojanPassword: "leo-trojan-pw",
      trafficLimitBytes: 25 * GIB,
      upBytes: 1000,
      downBytes: 2000,
      resetStrategy: "monthly",
      resetDay: 15,
      note: 'Leo, the "first" CSV user',
      legacyKey: "leoOldToken001",
    });
    expect(p.rows[1]).toMatchObject({ name: "mia", enabled: false, holdDays: 10, note: "two\nlines", vlessUuid: null });
  });
  it("refuses unknown columns and a missing name column", () => {
    expect(parseCsv(text("name,colour\nx,red\n")).errors[0]!.reason).toMatch(/Unknown column\(s\): colour/);
    expect(parseCsv(text("uuid\n\n")).errors[0]!.reason).toMatch(/no name column/);
  });
  it("names each bad line by its line number in the file", () => {
    const p = parseCsv(text('name,enabled,expires_at,traffic_limit_bytes,reset_strategy\n"a\nb",yes,,,\nc,maybe,,,\nd,,tomorrow,,\ne,,,-1,\nf,,,,yearly\ng,1\n'));
    expect(p.rows.map((r) => r.name)).toEqual(["a\nb"]);
    expect(p.errors.map((e) => [e.ref, e.field])).toEqual([
      ["line 4", "enabled"],
      ["line 5", "expires_at"],
      ["line 6", "traffic_limit_bytes"],
      ["line 7", "reset_strategy"],
      ["line 8", "row"],
    ]);
  });
  it("fails on an unclosed quote", () => {
    expect(parseCsv(text('name\n"abc\n')).errors[0]!.reason).toMatch(/not closed/);
  });
});
