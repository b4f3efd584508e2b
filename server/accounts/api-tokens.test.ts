/**
 * API tokens in the domain: the token's shape, hashed storage, creation rules, and who a
 * bearer token is (good, wrong, unknown, expired, revoked, throttled), on every test database.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { apiTokens, auditLog, loginThrottle, operators } from "@/db/schema";
import { openTestDatabase, testDbKinds, type TestDatabase } from "@/db/testing";
import { API_TOKEN_DEFAULT_DAYS, API_TOKEN_PATTERN } from "@/core/api-tokens";
import { FREE_ATTEMPTS } from "@/server/auth/throttle";
import { apiTokenExpirySchema, apiScopesSchema, apiTokenNameSchema } from "@/core/validation";
import { authenticateApiToken, createApiToken, hashApiSecret, listApiTokens, newApiToken, parseApiToken, revokeApiToken } from "./api-tokens";

describe("the token's shape", () => {
  it("is rbt_, a 16-hex-digit id and a 256-bit secret; only the secret's SHA-256 is kept", () => {
    const a = newApiToken();
    const b = newApiToken();
    expect(a.token).toMatch(API_TOKEN_PATTERN);
    expect(a.token).toBe(`rbt_${a.id}_${a.secret}`);
    expect(Buffer.from(a.secret, "base64url")).toHaveLength(32);
    expect(a.secretHash).toBe(hashApiSecret(a.secret));
    expect(a.secretHash).toMatch(/^[0-9a-f]{64}$/);
    expect(a.secretHash).not.toContain(a.secret);
    expect(a.id).not.toBe(b.id);
    expect(a.secret).not.toBe(b.secret);
  });

  it("parses only its own shape", () => {
    const { token, id, secret } = newApiToken();
    expect(parseApiToken(token)).toEqual({ id, secret });
    for (const bad of ["", "rbt_", `rba_${id}_${secret}`, `rbt_${id.toUpperCase()}_${secret}`, `rbt_${id}_${secret}x`, `rbt_${id}${secret}`, `${token} `, `rbt_${id.slice(1)}_${secret}`]) {
      expect(parseApiToken(bad), bad).toBeNull();
    }
  });
});

describe("input rules", () => {
  it("names: 1–40 letters, digits, dots, dashes or _", () => {
    expect(apiTokenNameSchema.parse("  shop-bot ")).toBe("shop-bot");
    expect(apiTokenNameSchema.parse("a".repeat(40))).toHaveLength(40);
    expect(apiTokenNameSchema.safeParse(" ").error?.issues.map((i) => i.message)).toEqual(["Name is required"]);
    for (const bad of ["", "   ", "a".repeat(41), "shop bot", "-bot", "bo\nt", "bot:1", "токен"]) expect(apiTokenNameSchema.safeParse(bad).success, bad).toBe(false);
  });

  it("scopes: known ones, at least one", () => {
    expect(apiScopesSchema.parse(["read", "topology:write"])).toEqual(["read", "topology:write"]);
    expect(apiScopesSchema.safeParse([]).error?.issues[0]?.message).toBe("Choose at least one scope");
    expect(apiScopesSchema.safeParse(["read", "admin"]).error?.issues[0]?.message).toMatch(/^Unknown scope: use read, subscribers:write, topology:write/);
    expect(apiScopesSchema.safeParse("read").success).toBe(false);
  });

  it("expiry: absent (default), null (never), or a future date within 10 years", () => {
    expect(apiTokenExpirySchema.parse(undefined)).toBeUndefined();
    expect(apiTokenExpirySchema.parse(null)).toBeNull();
    const soon = new Date(Date.now() + 3600_000);
    expect(apiTokenExpirySchema.parse(soon)).toEqual(soon);
    expect(apiTokenExpirySchema.parse(soon.toISOString())).toEqual(soon);
    expect(apiTokenExpirySchema.safeParse(new Date(Date.now() - 1000)).error?.issues[0]?.message).toBe("Expiry must be in the future");
    expect(apiTokenExpirySchema.safeParse(new Date(Date.now() + 11 * 366 * 86_400_000)).error?.issues[0]?.message).toMatch(/within 10 years/);
    expect(apiTokenExpirySchema.safeParse("someday").success).toBe(false);
  });
});

describe.each(testDbKinds())("API tokens on %s", (kind) => {
  let t: TestDatabase;
  let owner: { operatorId: string; username: string };
  let admin: { operatorId: string; username: string };
  const now = new Date("2026-06-01T12:00:00Z");

  beforeAll(async () => {
    t = await openTestDatabase(kind);
    const [o, a] = await t.db
      .insert(operators)
      .values([
        { username: "olga", passwordHash: "x", role: "owner" },
        { username: "adam", passwordHash: "x", role: "admin" },
      ])
      .returning();
    owner = { operatorId: o!.id, username: o!.username };
    admin = { operatorId: a!.id, username: a!.username };
  });
  afterAll(async () => t?.dispose());
  beforeEach(async () => {
    await t.db.delete(apiTokens);
    await t.db.delete(loginThrottle);
  });

  it("stores the SHA-256 of the secret and never the secret: no column of any table holds it", async () => {
    const created = await createApiToken(t.db, admin, { name: "shop-bot", scopes: ["read"] }, now);
    const { secret } = parseApiToken(created.token)!;
    const [row] = await t.db.select().from(apiTokens);
    expect(row!.secretHash).toBe(hashApiSecret(secret));
    const dump = await t.db.execute(sql`select string_agg(row_to_json(x)::text, ' ') as all from (select * from api_tokens) x`);
    const audit = await t.db.select().from(auditLog);
    const text = JSON.stringify(dump) + JSON.stringify(audit);
    expect(text).not.toContain(secret);
    expect(text).not.toContain(created.token);
    expect(text).toContain(row!.secretHash);
  });

  it(`expires after ${API_TOKEN_DEFAULT_DAYS} days unless told: a date, or never`, async () => {
    const a = await createApiToken(t.db, admin, { name: "default", scopes: ["read"] }, now);
    expect(a.expiresAt).toEqual(new Date(now.getTime() + API_TOKEN_DEFAULT_DAYS * 86_400_000));
    const b = await createApiToken(t.db, admin, { name: "never", scopes: ["read"], expiresAt: null }, now);
    expect(b.expiresAt).toBeNull();
    const when = new Date("2026-07-01T00:00:00Z");
    const c = await createApiToken(t.db, admin, { name: "dated", scopes: ["read"], expiresAt: when }, now);
    expect(c.expiresAt).toEqual(when);
    await expect(createApiToken(t.db, admin, { name: "past", scopes: ["read"], expiresAt: now }, now)).rejects.toMatchObject({ code: "BAD_REQUEST", message: "Expiry must be in the future" });
    expect(await t.db.select().from(apiTokens)).toHaveLength(3);
  });

  it("lists scopes once, in their own order; refuses none", async () => {
    const a = await createApiToken(t.db, admin, { name: "dup", scopes: ["topology:write", "read", "topology:write"] }, now);
    expect(a.scopes).toEqual(["read", "topology:write"]);
    await expect(createApiToken(t.db, admin, { name: "none", scopes: [] }, now)).rejects.toMatchObject({ code: "BAD_REQUEST" });
  });

  it("refuses a second live token of the same name (any case), allows it once the first is revoked", async () => {
    const a = await createApiToken(t.db, admin, { name: "Shop", scopes: ["read"] }, now);
    await expect(createApiToken(t.db, owner, { name: "shop", scopes: ["read"] }, now)).rejects.toMatchObject({ code: "CONFLICT", message: expect.stringContaining("already exists") });
    await revokeApiToken(t.db, owner, a.id, now);
    await createApiToken(t.db, owner, { name: "shop", scopes: ["read"] }, now);
  });

  it("records creation and revocation in the audit log, without the secret", async () => {
    const before = (await t.db.select().from(auditLog)).length;
    const a = await createApiToken(t.db, admin, { name: "audited", scopes: ["subscribers:write"] }, now);
    await revokeApiToken(t.db, owner, a.id, now);
    await revokeApiToken(t.db, owner, a.id, now); // twice: recorded once
    const rows = (await t.db.select().from(auditLog).orderBy(auditLog.id)).slice(before);
    expect(rows.map((r) => [r.operatorName, r.action])).toEqual([
      ["adam", "api-token.create"],
      ["olga", "api-token.revoke"],
    ]);
    expect(rows[0]!.summary).toContain("audited (subscribers:write, expires 2026-08-30)");
    await expect(revokeApiToken(t.db, owner, "0123456789abcdef", now)).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("authenticates a good token as token:<name> with its creator's current role", async () => {
    const a = await createApiToken(t.db, admin, { name: "shop-bot", scopes: ["read", "subscribers:write"] }, now);
    const r = await authenticateApiToken(t.db, a.token, "10.0.0.1", now);
    expect(r).toMatchObject({ ok: true, operator: { operatorId: admin.operatorId, username: "token:shop-bot", role: "admin" }, token: { id: a.id, name: "shop-bot", scopes: ["read", "subscribers:write"] } });
    const [row] = await t.db.select().from(apiTokens);
    expect(row!.lastUsedAt).toEqual(now);
    // Last use is written at most once a minute, not on every call.
    await authenticateApiToken(t.db, a.token, "10.0.0.1", new Date(now.getTime() + 30_000));
    expect((await t.db.select().from(apiTokens))[0]!.lastUsedAt).toEqual(now);
    const later = new Date(now.getTime() + 61_000);
    await authenticateApiToken(t.db, a.token, "10.0.0.1", later);
    expect((await t.db.select().from(apiTokens))[0]!.lastUsedAt).toEqual(later);
    // A creator demoted to viewer leaves their tokens read-only (the role is read per request).
    await t.db.update(operators).set({ role: "viewer" }).where(sql`id = ${admin.operatorId}`);
    try {
      expect(await authenticateApiToken(t.db, a.token, "10.0.0.1", later)).toMatchObject({ ok: true, operator: { role: "viewer" } });
    } finally {
      await t.db.update(operators).set({ role: "admin" }).where(sql`id = ${admin.operatorId}`);
    }
  });

  it("refuses wrong, unknown, malformed, expired and revoked tokens with 401", async () => {
    const a = await createApiToken(t.db, admin, { name: "a", scopes: ["read"], expiresAt: new Date(now.getTime() + 60_000) }, now);
    const b = await createApiToken(t.db, admin, { name: "b", scopes: ["read"] }, now);
    const { id, secret } = parseApiToken(a.token)!;
    const other = newApiToken();
    const refusal = async (token: string, at = now) => {
      const r = await authenticateApiToken(t.db, token, "10.0.0.2", at);
      expect(r.ok, token).toBe(false);
      return !r.ok ? { code: r.error.code, message: r.error.message } : null;
    };
    expect(await refusal(`rbt_${id}_${other.secret}`)).toEqual({ code: "UNAUTHORIZED", message: "Unknown or wrong API token" });
    expect(await refusal(`rbt_${other.id}_${secret}`)).toEqual({ code: "UNAUTHORIZED", message: "Unknown or wrong API token" });
    expect(await refusal("")).toEqual({ code: "UNAUTHORIZED", message: "Unknown or wrong API token" });
    expect(await refusal("x".repeat(5000))).toEqual({ code: "UNAUTHORIZED", message: "Unknown or wrong API token" });
    expect(await refusal(a.token, new Date(now.getTime() + 60_000))).toEqual({ code: "UNAUTHORIZED", message: `This API token expired on ${new Date(now.getTime() + 60_000).toISOString()}` });
    await revokeApiToken(t.db, owner, b.id, now);
    expect(await refusal(b.token)).toEqual({ code: "UNAUTHORIZED", message: "This API token was revoked" });
    expect((await authenticateApiToken(t.db, a.token, "10.0.0.3", now)).ok).toBe(true);
  });

  it(`throttles an address after ${FREE_ATTEMPTS.token} bad tokens, never a good one (issue 21, point 9), with doubling waits`, async () => {
    const good = await createApiToken(t.db, admin, { name: "good", scopes: ["read"] }, now);
    const bad = newApiToken().token;
    for (let i = 0; i < FREE_ATTEMPTS.token; i++) {
      const r = await authenticateApiToken(t.db, bad, "10.9.9.9", now);
      expect(!r.ok && r.error.code).toBe("UNAUTHORIZED");
    }
    const blocked = await authenticateApiToken(t.db, bad, "10.9.9.9", now);
    expect(!blocked.ok && blocked.error.code).toBe("TOO_MANY_REQUESTS");
    expect(!blocked.ok && (blocked.error.cause as { retryAfter?: number }).retryAfter).toBe(2);
    // A valid token from the same address is accepted: those failures are not its own.
    expect((await authenticateApiToken(t.db, good.token, "10.9.9.9", now)).ok).toBe(true);
    // Other addresses are not held back.
    const elsewhere = await authenticateApiToken(t.db, bad, "10.9.9.8", now);
    expect(!elsewhere.ok && elsewhere.error.code).toBe("UNAUTHORIZED");
    // After the wait, the next failure doubles it.
    const later = new Date(now.getTime() + 2500);
    await authenticateApiToken(t.db, bad, "10.9.9.9", later);
    const again = await authenticateApiToken(t.db, bad, "10.9.9.9", later);
    expect(!again.ok && (again.error.cause as { retryAfter?: number }).retryAfter).toBe(4);
  });

  it("lists tokens without secrets or hashes, with their creator and status; a removed creator's tokens go with them", async () => {
    const [temp] = await t.db.insert(operators).values({ username: "temp", passwordHash: "x", role: "admin" }).returning();
    const a = await createApiToken(t.db, admin, { name: "live", scopes: ["read"] }, now);
    const b = await createApiToken(t.db, { operatorId: temp!.id, username: "temp" }, { name: "temps", scopes: ["read"] }, now);
    await revokeApiToken(t.db, owner, a.id, now);
    const list = await listApiTokens(t.db, now);
    expect(list.map((x) => [x.name, x.createdBy, x.status])).toEqual([
      ["temps", "temp", "active"],
      ["live", "adam", "revoked"],
    ]);
    expect(JSON.stringify(list)).not.toMatch(/secret|rbt_/i);
    expect((await listApiTokens(t.db, new Date(now.getTime() + 100 * 86_400_000))).find((x) => x.name === "temps")?.status).toBe("expired");
    await t.db.delete(operators).where(sql`id = ${temp!.id}`);
    expect((await authenticateApiToken(t.db, b.token, "10.0.0.4", now)).ok).toBe(false);
    expect((await listApiTokens(t.db, now)).map((x) => x.name)).toEqual(["live"]);
  });
});
