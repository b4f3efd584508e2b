/**
 * Accounts (issue 11): the setup code, password strength, changing one's own password, and
 * the owner changing roles and resetting passwords. Procedures called directly on PGlite.
 */
import { existsSync, mkdtempSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { TRPCError } from "@trpc/server";
import { and, eq, isNull } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditLog, operators, sessions } from "@/db/schema";
import { openTestDatabase, type TestDatabase } from "@/db/testing";
import { createCaller } from "@/server/api/root";
import { operatorContext } from "@/server/api/testing";
import type { Context } from "@/server/api/trpc";
import { hashPassword } from "@/server/auth/password";
import { createSession, findSession } from "@/server/auth/sessions";
import { ensureSetupCode } from "@/server/auth/setup-code";
import { passwordWeakness } from "@/server/auth/strength";
import { bootstrap } from "@/server/bootstrap";
import { parseEnv } from "@/server/env";

process.env.DATA_DIR ??= mkdtempSync(path.join(os.tmpdir(), "rb-accounts-"));
const STRONG = "harbour-otter-lantern-42";

async function failure(p: Promise<unknown>) {
  try {
    await p;
  } catch (err) {
    if (!(err instanceof TRPCError)) throw err;
    const cause = err.cause as { issues?: Array<{ path: PropertyKey[]; message: string }> } | undefined;
    return { code: err.code, message: err.message, fields: Object.fromEntries((cause?.issues ?? []).map((i) => [i.path.join("."), i.message])) };
  }
  throw new Error("expected a failure");
}

function anonymous(db: TestDatabase["db"], address = "127.0.0.1"): Context {
  return { db, operator: null, clientAddress: address, userAgent: "vitest", secureCookies: false, setCookie: () => {} };
}

describe("password strength", () => {
  it.each(["password", "password1", "qwertyuiop", "12345678", "letmein!"])("refuses %s", (p) => {
    expect(passwordWeakness(p)).toMatch(/common passwords|too easy to guess/);
  });
  it("says that a common password is common", () => {
    expect(passwordWeakness("password")).toBe("This password is on the list of common passwords: choose another");
  });
  it("refuses a password made of the username", () => {
    expect(passwordWeakness("founder2026", ["founder"])).not.toBeNull();
  });
  it.each([STRONG, "correct horse battery staple", "e2e-admin-password"])("accepts %s", (p) => {
    expect(passwordWeakness(p)).toBeNull();
  });
});

describe("first-run setup", () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await openTestDatabase("pglite");
  });
  afterAll(async () => t?.dispose());

  it("needs the setup code, refuses a weak password inline, then creates the owner once", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "rb-setup-code-"));
    const code = await ensureSetupCode(t.db, dir);
    expect(code).toMatch(/^[A-Z2-9]{4}(-[A-Z2-9]{4}){3}$/);
    expect(await ensureSetupCode(t.db, dir)).toBe(code); // stable across restarts and instances
    const caller = createCaller(anonymous(t.db));
    const wrong = await failure(caller.auth.setup({ username: "founder", password: STRONG, setupCode: "AAAA-BBBB-CCCC-DDDD" }));
    expect(wrong.code).toBe("FORBIDDEN");
    expect(wrong.fields.setupCode).toMatch(/^Wrong setup code/);
    const missing = await failure(caller.auth.setup({ username: "founder", password: STRONG, setupCode: "" }));
    expect(missing.fields.setupCode).toBe("Setup code is required");
    const weak = await failure(caller.auth.setup({ username: "founder", password: "password", setupCode: code }));
    expect(weak.fields.password).toMatch(/common passwords/);
    expect(await t.db.select().from(operators)).toHaveLength(0);
    // Case and dashes do not matter.
    const ok = await caller.auth.setup({ username: "founder", password: STRONG, setupCode: code.toLowerCase().replace(/-/g, " ") });
    expect(ok.role).toBe("owner");
    const again = await failure(caller.auth.setup({ username: "second", password: STRONG, setupCode: code }));
    expect(again.code).toBe("CONFLICT");
  });

  it("start-up makes a code (file mode 0600) only while there is no operator", async () => {
    const t2 = await openTestDatabase("pglite");
    try {
      const dir = mkdtempSync(path.join(os.tmpdir(), "rb-boot-"));
      const fresh = await bootstrap(t2.db, parseEnv({ DATA_DIR: dir, ROUTEBOARD_DEMO: "0" }));
      expect(fresh.needsSetup).toBe(true);
      expect(fresh.setupCode).toMatch(/^[A-Z2-9]{4}(-[A-Z2-9]{4}){3}$/);
      expect(statSync(path.join(dir, "setup-code")).mode & 0o777).toBe(0o600);
      // ADMIN_USERNAME/ADMIN_PASSWORD skip setup: the code goes away.
      const unattended = await bootstrap(t2.db, parseEnv({ DATA_DIR: dir, ROUTEBOARD_DEMO: "0", ADMIN_USERNAME: "root", ADMIN_PASSWORD: "e2e-admin-password" }));
      expect(unattended).toMatchObject({ needsSetup: false, setupCode: null });
      expect(existsSync(path.join(dir, "setup-code"))).toBe(false);
    } finally {
      await t2.dispose();
    }
  });

  it("throttles wrong setup codes per address", async () => {
    const t2 = await openTestDatabase("pglite");
    try {
      await ensureSetupCode(t2.db, mkdtempSync(path.join(os.tmpdir(), "rb-setup-code-")));
      const caller = createCaller(anonymous(t2.db, "198.51.100.77"));
      const codes = [];
      for (let i = 0; i < 6; i++) codes.push((await failure(caller.auth.setup({ username: "x", password: STRONG, setupCode: `WRONG-${i}` }))).code);
      expect(codes.at(-1)).toBe("TOO_MANY_REQUESTS");
    } finally {
      await t2.dispose();
    }
  });
});

describe("operators' passwords and roles", () => {
  let t: TestDatabase;
  let ownerId: string;
  let adaId: string;
  let owner: ReturnType<typeof createCaller>;
  let ownerSession: string;

  beforeAll(async () => {
    t = await openTestDatabase("pglite");
    const hash = await hashPassword(STRONG);
    const [o, a] = await t.db
      .insert(operators)
      .values([
        { username: "olivia", passwordHash: hash, role: "owner" },
        { username: "ada", passwordHash: hash, role: "admin" },
      ])
      .returning();
    ownerId = o!.id;
    adaId = a!.id;
    const s = await createSession(t.db, ownerId, "vitest");
    ownerSession = (await findSession(t.db, s.token))!.sessionId;
    owner = createCaller({ ...operatorContext(t.db, ownerId, "olivia", "owner"), operator: { sessionId: ownerSession, operatorId: ownerId, username: "olivia", role: "owner", twoFactor: false } });
  });
  afterAll(async () => t?.dispose());

  const liveSessions = async (operatorId: string) =>
    (await t.db.select().from(sessions).where(and(eq(sessions.operatorId, operatorId), isNull(sessions.revokedAt)))).map((s) => s.id);

  it("refuses weak passwords for new operators, inline", async () => {
    const f = await failure(owner.operators.create({ username: "vic", password: "password", role: "viewer" }));
    expect(f.fields.password).toMatch(/common passwords/);
  });

  it("an operator changes their own password: needs the current one, ends their other sessions only", async () => {
    const mine = await createSession(t.db, adaId, "laptop");
    const other = await createSession(t.db, adaId, "phone");
    const mineId = (await findSession(t.db, mine.token))!.sessionId;
    const ada = createCaller({ ...operatorContext(t.db, adaId, "ada", "admin"), operator: { sessionId: mineId, operatorId: adaId, username: "ada", role: "admin", twoFactor: false } });
    const wrong = await failure(ada.auth.changePassword({ currentPassword: "not-it", newPassword: "quiet-meadow-copper-77" }));
    expect(wrong.fields.currentPassword).toBe("Current password is wrong");
    const weak = await failure(ada.auth.changePassword({ currentPassword: STRONG, newPassword: "password1" }));
    expect(weak.fields.newPassword).toMatch(/too easy to guess|common passwords/);
    await ada.auth.changePassword({ currentPassword: STRONG, newPassword: "quiet-meadow-copper-77" });
    expect(await findSession(t.db, mine.token)).not.toBeNull();
    expect(await findSession(t.db, other.token)).toBeNull();
    const caller = createCaller(anonymous(t.db));
    expect((await caller.auth.login({ username: "ada", password: "quiet-meadow-copper-77" })).username).toBe("ada");
    const [entry] = await t.db.select().from(auditLog).where(eq(auditLog.action, "operator.password.change"));
    expect(JSON.stringify(entry)).not.toContain("quiet-meadow");
  });

  it("guesses from elsewhere never refuse the operator on a browser they used before; the guessers keep their backoff (issue 21, point 9)", async () => {
    const hash = await hashPassword(STRONG);
    await t.db.insert(operators).values({ username: "locksmith", passwordHash: hash, role: "viewer" });
    // The operator logs in once: the browser gets a device cookie.
    const cookies: string[] = [];
    const browser = createCaller({ ...anonymous(t.db, "198.51.100.40"), setCookie: (c) => cookies.push(c) });
    await browser.auth.login({ username: "locksmith", password: STRONG });
    const device = /rb_device=([^;]+)/.exec(cookies.find((c) => c.startsWith("rb_device=")) ?? "")?.[1];
    expect(device).toBeDefined();
    expect(cookies.find((c) => c.startsWith("rb_device="))).toMatch(/; Path=\/api\/trpc; HttpOnly; SameSite=Strict; Expires=/);
    // Somebody guesses from several addresses, without that cookie.
    const codes: string[] = [];
    for (let i = 0; i < 6; i++) codes.push((await failure(createCaller(anonymous(t.db, `203.0.113.${40 + i}`)).auth.login({ username: "locksmith", password: `guess-${i}-nope` }))).code);
    expect(codes).toEqual(["UNAUTHORIZED", "UNAUTHORIZED", "UNAUTHORIZED", "UNAUTHORIZED", "UNAUTHORIZED", "TOO_MANY_REQUESTS"]);
    // The operator's browser, with the right password: logged in, even from a guesser's address.
    const again = createCaller({ ...anonymous(t.db, "203.0.113.40"), deviceCookie: device });
    expect((await again.auth.login({ username: "locksmith", password: STRONG })).username).toBe("locksmith");
    // The cookie is for this username only.
    expect((await failure(createCaller({ ...anonymous(t.db, "198.51.100.41"), deviceCookie: device }).auth.login({ username: "ada", password: "x-wrong-x-wrong" }))).code).toBe("UNAUTHORIZED");
    // Without it the right password waits, like the guesses (it cannot test guesses while held).
    expect((await failure(createCaller(anonymous(t.db, "198.51.100.42")).auth.login({ username: "locksmith", password: STRONG }))).code).toBe("TOO_MANY_REQUESTS");
  });

  it("the owner resets a password: the operator's sessions end, the audit log has no password", async () => {
    const s = await createSession(t.db, adaId, "laptop");
    await owner.operators.resetPassword({ operatorId: adaId, password: "velvet-canyon-signal-19" });
    expect(await findSession(t.db, s.token)).toBeNull();
    expect(await liveSessions(adaId)).toHaveLength(0);
    const weak = await failure(owner.operators.resetPassword({ operatorId: adaId, password: "password" }));
    expect(weak.fields.password).toBeDefined();
    const entries = await t.db.select().from(auditLog).where(eq(auditLog.action, "operator.password.reset"));
    expect(entries).toHaveLength(1);
    expect(entries[0]!.summary).toBe("Reset the password of ada; their sessions were ended");
    expect(JSON.stringify(entries)).not.toContain("velvet");
  });

  it("the owner changes roles, audited; the only owner cannot step down", async () => {
    expect((await owner.operators.setRole({ operatorId: adaId, role: "viewer" })).role).toBe("viewer");
    const [entry] = await t.db.select().from(auditLog).where(eq(auditLog.action, "operator.role"));
    expect(entry).toMatchObject({ summary: "Changed ada from admin to viewer", before: { role: "admin" }, after: { role: "viewer" } });
    const alone = await failure(owner.operators.setRole({ operatorId: ownerId, role: "admin" }));
    expect(alone.fields.role).toBe("You are the only owner: make someone else owner first");
    await owner.operators.setRole({ operatorId: adaId, role: "owner" });
    expect((await owner.operators.setRole({ operatorId: ownerId, role: "admin" })).role).toBe("admin");
  });

  it("only the owner manages roles and passwords", async () => {
    const [vic] = await t.db.insert(operators).values({ username: "vic2", passwordHash: "x", role: "admin" }).returning();
    const admin = createCaller(operatorContext(t.db, vic!.id, "vic2", "admin"));
    expect((await failure(admin.operators.setRole({ operatorId: vic!.id, role: "owner" }))).code).toBe("FORBIDDEN");
    expect((await failure(admin.operators.resetPassword({ operatorId: adaId, password: STRONG }))).code).toBe("FORBIDDEN");
  });
});
