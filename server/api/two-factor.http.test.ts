/**
 * A second factor for operators (issue 27, point 5) through the real listener, with real
 * cookies: enrolment confirmed by a code, no session until the code step passes, replays
 * refused, recovery codes once each, the throttle, the owner's requirement and reset, and the
 * audit entries.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, eq } from "drizzle-orm";
import superjson from "superjson";
import { auditLog, loginThrottle, operators } from "@/db/schema";
import { hashPassword } from "@/server/auth/password";
import { totpCode, totpStep } from "@/server/auth/totp";
import { startTestApp, type TestApp } from "./http-testing";
import { TWO_FACTOR_SETUP_MESSAGE } from "./trpc";

const PASSWORD = "correct horse battery staple";

describe("two-factor authentication over HTTP", () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({ devtools: false });
    const passwordHash = await hashPassword(PASSWORD);
    await app.database.db.insert(operators).values([
      { username: "olivia", passwordHash, role: "owner" },
      { username: "ada", passwordHash, role: "admin" },
      { username: "vic", passwordHash, role: "viewer" },
    ]);
  });
  afterAll(async () => {
    await app?.close();
  });

  /** One call; `cookie` is the session cookie, the answer's new session cookie comes back. */
  async function call(type: "query" | "mutation", path: string, input: unknown, cookie?: string) {
    const encoded = input === undefined ? undefined : JSON.stringify(superjson.serialize(input));
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (cookie) headers.cookie = cookie;
    const res =
      type === "query"
        ? await fetch(`${app.url}/api/trpc/${path}${encoded ? `?input=${encodeURIComponent(encoded)}` : ""}`, { headers })
        : await fetch(`${app.url}/api/trpc/${path}`, { method: "POST", headers, body: encoded ?? "{}" });
    const body = (await res.json()) as { result?: { data?: { json?: unknown } }; error?: { json?: { message?: string; data?: { fieldErrors?: Record<string, string> | null } } } };
    const session = res.headers.getSetCookie().find((c) => c.startsWith("rb_session=") && !c.startsWith("rb_session=;"));
    return { status: res.status, data: body.result?.data?.json as Record<string, unknown> & { challenge?: string | null }, error: body.error?.json, session: session?.split(";")[0] };
  }
  const audit = async (action: string) => (await app.database.db.select().from(auditLog).where(eq(auditLog.action, action))).map((a) => a.summary);
  const clearThrottle = () => app.database.db.delete(loginThrottle);

  let adaSecret = "";
  let adaRecovery: string[] = [];
  let lastStep = 0;

  it("enrols only once a code from the new secret is confirmed, and hands out ten recovery codes", async () => {
    // A session opened elsewhere with the password alone, before the second factor.
    const other = (await call("mutation", "auth.login", { username: "ada", password: PASSWORD })).session!;
    const login = await call("mutation", "auth.login", { username: "ada", password: PASSWORD });
    expect(login.data.challenge).toBeNull();
    const cookie = login.session!;
    const begun = await call("mutation", "twoFactor.begin", undefined, cookie);
    adaSecret = begun.data.secret as string;
    expect(adaSecret).toMatch(/^[A-Z2-7]{32}$/);
    expect(begun.data.uri).toBe(`otpauth://totp/Routeboard:ada?secret=${adaSecret}&issuer=Routeboard&algorithm=SHA1&digits=6&period=30`);
    // Not in effect yet: a login still needs no code.
    expect((await call("query", "twoFactor.status", undefined, cookie)).data).toMatchObject({ enabled: false });
    expect((await call("mutation", "auth.login", { username: "ada", password: PASSWORD })).data.challenge).toBeNull();

    const wrong = await call("mutation", "twoFactor.confirm", { code: "000000" === totpCode(adaSecret, { nowMs: Date.now() }) ? "111111" : "000000" }, cookie);
    expect(wrong.status).toBe(400);
    expect(wrong.error?.data?.fieldErrors?.code).toMatch(/Wrong code/);
    lastStep = totpStep(Date.now());
    const ok = await call("mutation", "twoFactor.confirm", { code: totpCode(adaSecret, { step: lastStep }) }, cookie);
    expect(ok.status).toBe(200);
    adaRecovery = ok.data.recoveryCodes as string[];
    expect(adaRecovery).toHaveLength(10);
    expect((await call("query", "twoFactor.status", undefined, cookie)).data).toMatchObject({ enabled: true, recoveryCodesLeft: 10, required: false });
    expect(await audit("operator.2fa.enrol")).toEqual(["ada turned on two-factor authentication (10 recovery codes)"]);
    // The session that confirmed stays; the one that never passed a code is ended.
    expect((await call("query", "clusters.list", undefined, cookie)).status).toBe(200);
    expect((await call("query", "clusters.list", undefined, other)).status).toBe(401);
    // Nothing secret in the log or in the answer's shape beyond what was asked.
    const [row] = await app.database.db.select().from(operators).where(eq(operators.username, "ada"));
    expect(row!.totpPendingSecret).toBeNull();
    expect(row!.totpSecret).toBe(adaSecret);
  });

  it("grants no session after the password until the code passes; a wrong, replayed or forged code is refused", async () => {
    const first = await call("mutation", "auth.login", { username: "ada", password: PASSWORD });
    expect(first.status).toBe(200);
    expect(first.session).toBeUndefined();
    const challenge = first.data.challenge!;
    expect(challenge).toMatch(/\./);

    const wrong = await call("mutation", "auth.loginCode", { challenge, code: "123456" === totpCode(adaSecret, { nowMs: Date.now() }) ? "654321" : "123456" });
    expect(wrong.status).toBe(401);
    expect(wrong.error?.data?.fieldErrors?.code).toMatch(/Wrong code/);
    expect(wrong.session).toBeUndefined();
    // The code confirmed at enrolment was used: refused for the rest of its window.
    expect((await call("mutation", "auth.loginCode", { challenge, code: totpCode(adaSecret, { step: lastStep }) })).status).toBe(401);
    const forged = challenge.replace(/.$/, (c) => (c === "A" ? "B" : "A"));
    expect((await call("mutation", "auth.loginCode", { challenge: forged, code: totpCode(adaSecret, { step: lastStep + 1 }) })).error?.message).toMatch(/expired: enter your password again/);

    const next = totpCode(adaSecret, { step: lastStep + 1 });
    const ok = await call("mutation", "auth.loginCode", { challenge, code: next });
    expect(ok.status).toBe(200);
    expect(ok.session).toBeDefined();
    expect((await call("query", "auth.me", undefined, ok.session)).data).toEqual({ username: "ada", role: "admin" });
    // The same code again, even with a fresh password step: a replay.
    const again = await call("mutation", "auth.login", { username: "ada", password: PASSWORD });
    expect((await call("mutation", "auth.loginCode", { challenge: again.data.challenge, code: next })).status).toBe(401);
    await clearThrottle();
  });

  it("takes each recovery code once, and audits its use", async () => {
    const challenge = (await call("mutation", "auth.login", { username: "ada", password: PASSWORD })).data.challenge!;
    const typed = adaRecovery[3]!.toUpperCase().replace("-", " ");
    const ok = await call("mutation", "auth.loginCode", { challenge, code: typed });
    expect(ok.status).toBe(200);
    expect(ok.session).toBeDefined();
    expect((await call("mutation", "auth.loginCode", { challenge, code: adaRecovery[3] })).status).toBe(401);
    expect(await audit("operator.2fa.recovery")).toEqual(["ada logged in with a recovery code; 9 left"]);
    expect((await call("query", "twoFactor.status", undefined, ok.session)).data).toMatchObject({ recoveryCodesLeft: 9 });
    await clearThrottle();
  });

  it("throttles codes like passwords, and a right password does not clear the code failures", async () => {
    let challenge = (await call("mutation", "auth.login", { username: "ada", password: PASSWORD })).data.challenge!;
    const right = totpCode(adaSecret, { nowMs: Date.now() });
    const wrongCode = right === "999999" ? "999998" : "999999";
    for (let i = 0; i < 5; i++) expect((await call("mutation", "auth.loginCode", { challenge, code: wrongCode })).status).toBe(401);
    challenge = (await call("mutation", "auth.login", { username: "ada", password: PASSWORD })).data.challenge!;
    const held = await call("mutation", "auth.loginCode", { challenge, code: wrongCode });
    expect(held.status).toBe(429);
    expect(held.error?.message).toMatch(/Too many wrong codes: try again in \d+ s/);
    await clearThrottle();
  });

  it("lets the owner require it: operators without it can only enrol; the owner must have it first", async () => {
    const owner = (await call("mutation", "auth.login", { username: "olivia", password: PASSWORD })).session!;
    const early = await call("mutation", "operators.setTwoFactorRequired", { required: true }, owner);
    expect(early.status).toBe(400);
    expect(early.error?.message).toMatch(/for yourself first/);
    const secret = (await call("mutation", "twoFactor.begin", undefined, owner)).data.secret as string;
    expect((await call("mutation", "twoFactor.confirm", { code: totpCode(secret, { nowMs: Date.now() }) }, owner)).status).toBe(200);
    // A viewer's session is open before the requirement, and closed to everything but enrolment after it.
    const vic = (await call("mutation", "auth.login", { username: "vic", password: PASSWORD })).session!;
    expect((await call("mutation", "operators.setTwoFactorRequired", { required: true }, owner)).status).toBe(200);
    expect(await audit("settings.2fa.required")).toEqual(["Required two-factor authentication for every operator"]);

    const refused = await call("query", "clusters.list", undefined, vic);
    expect(refused.status).toBe(403);
    expect(refused.error?.message).toBe(TWO_FACTOR_SETUP_MESSAGE);
    expect((await call("query", "auth.status", undefined, vic)).data).toMatchObject({ operator: { username: "vic" }, mustEnrolTwoFactor: true });
    const vicSecret = (await call("mutation", "twoFactor.begin", undefined, vic)).data.secret as string;
    expect((await call("mutation", "twoFactor.confirm", { code: totpCode(vicSecret, { nowMs: Date.now() }) }, vic)).status).toBe(200);
    expect((await call("query", "clusters.list", undefined, vic)).status).toBe(200);
    expect((await call("query", "auth.status", undefined, vic)).data).toMatchObject({ mustEnrolTwoFactor: false });
    // Ada has one: not held back. Nobody can turn theirs off while it is required.
    const ada = (await call("mutation", "auth.loginCode", { challenge: (await call("mutation", "auth.login", { username: "ada", password: PASSWORD })).data.challenge, code: adaRecovery[0] })).session!;
    expect((await call("query", "clusters.list", undefined, ada)).status).toBe(200);
    expect((await call("mutation", "twoFactor.disable", { code: adaRecovery[1] }, ada)).status).toBe(403);

    // The owner resets Vic's: Vic logs in with the password alone, and must enrol again.
    expect((await call("mutation", "operators.resetTwoFactor", { operatorId: (await app.database.db.select().from(operators).where(eq(operators.username, "vic")))[0]!.id }, ada)).status).toBe(403);
    const [vicRow] = await app.database.db.select().from(operators).where(eq(operators.username, "vic"));
    expect((await call("query", "clusters.list", undefined, vic)).status).toBe(200);
    expect((await call("mutation", "operators.resetTwoFactor", { operatorId: vicRow!.id }, owner)).status).toBe(200);
    // A reset follows a lost phone: every session of Vic's ends.
    expect((await call("query", "clusters.list", undefined, vic)).status).toBe(401);
    expect(await audit("operator.2fa.reset")).toEqual(["Reset the two-factor authentication of vic"]);
    const vicAgain = await call("mutation", "auth.login", { username: "vic", password: PASSWORD });
    expect(vicAgain.data.challenge).toBeNull();
    expect((await call("query", "clusters.list", undefined, vicAgain.session)).status).toBe(403);
    const list = (await call("query", "operators.list", undefined, owner)).data as unknown as Array<{ username: string; twoFactor: boolean }>;
    expect(Object.fromEntries(list.map((o) => [o.username, o.twoFactor]))).toEqual({ olivia: true, ada: true, vic: false });

    // No longer required: Ada turns hers off with a code; the log says so.
    expect((await call("mutation", "operators.setTwoFactorRequired", { required: false }, owner)).status).toBe(200);
    const off = await call("mutation", "twoFactor.disable", { code: adaRecovery[1] }, ada);
    expect(off.status).toBe(200);
    expect(await audit("operator.2fa.disable")).toEqual(["ada turned off two-factor authentication"]);
    expect((await call("mutation", "auth.login", { username: "ada", password: PASSWORD })).data.challenge).toBeNull();
    const [entry] = await app.database.db.select().from(auditLog).where(and(eq(auditLog.action, "operator.2fa.enrol"), eq(auditLog.operatorName, "olivia")));
    expect(entry).toBeDefined();
  });

  it("is closed to API tokens", async () => {
    const { createCaller } = await import("./root");
    const { operatorContext, failure } = await import("./testing");
    const [ada] = await app.database.db.select().from(operators).where(eq(operators.username, "ada"));
    const token = createCaller({ ...operatorContext(app.database.db, ada!.id, "ada", "admin"), apiToken: { id: "tok", name: "ci", scopes: ["read", "topology:write", "subscribers:write"] } });
    expect((await failure(token.twoFactor.begin())).code).toBe("FORBIDDEN");
    expect((await failure(token.twoFactor.status())).code).toBe("FORBIDDEN");
  });
});
