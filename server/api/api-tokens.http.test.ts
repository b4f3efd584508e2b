/**
 * API tokens over real HTTP on /api/trpc: each scope against each kind of procedure, the
 * scope every procedure of the router declares, bearer requests and the origin check,
 * expiry and revocation, the audit actor, bad input, and the throttle on wrong tokens.
 */
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { apiTokens, auditLog, clusters, loginThrottle, operators } from "@/db/schema";
import type { ApiScope } from "@/core/api-tokens";
import { FREE_ATTEMPTS } from "@/server/auth/throttle";
import { createApiToken, newApiToken } from "@/server/accounts/api-tokens";
import { startTestApp, type TestApp } from "./http-testing";
import { appRouter } from "./root";
import type { ProcedureMeta } from "./trpc";

process.env.DATA_DIR ??= mkdtempSync(path.join(os.tmpdir(), "rb-api-tokens-"));

let app: TestApp;
let ownerCookie: string;
let owner: { operatorId: string; username: string };
let clusterId: string;

type Answer = { status: number; retryAfter: string | null; body: { result?: { data?: { json?: unknown } }; error?: { json?: { message?: string; data?: { code?: string; fieldErrors?: Record<string, string> | null } } } } };

/** One tRPC call over HTTP with superjson input, as a client library would send it. */
async function call(type: "query" | "mutation", procedure: string, input: unknown, headers: Record<string, string>): Promise<Answer> {
  const { default: superjson } = await import("superjson");
  const encoded = input === undefined ? undefined : JSON.stringify(superjson.serialize(input));
  const h = { "content-type": "application/json", ...headers };
  const res =
    type === "query"
      ? await fetch(`${app.url}/api/trpc/${procedure}${encoded ? `?input=${encodeURIComponent(encoded)}` : ""}`, { headers: h })
      : await fetch(`${app.url}/api/trpc/${procedure}`, { method: "POST", headers: h, body: encoded });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as Answer["body"] };
}
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const message = (a: Answer) => a.body.error?.json?.message ?? "";

async function token(scopes: ApiScope[], name = `t-${Math.random().toString(36).slice(2, 10)}`, expiresAt?: Date | null) {
  return (await createApiToken(app.database.db, owner, { name, scopes, expiresAt })).token;
}

beforeAll(async () => {
  app = await startTestApp({ devtools: false });
  ownerCookie = await app.cookie("owner");
  const [op] = await app.database.db.select().from(operators).where(eq(operators.username, "http-owner"));
  owner = { operatorId: op!.id, username: op!.username };
  const created = await call("mutation", "clusters.create", { name: "Tokens" }, { cookie: ownerCookie });
  clusterId = (created.body.result?.data?.json as { id: string }).id;
}, 60_000);
afterAll(async () => app?.close());

describe("each scope against each kind of procedure", () => {
  const kinds = {
    read: { type: "query", path: "clusters.list", input: () => undefined },
    "subscribers write": { type: "mutation", path: "subscribers.create", input: () => ({ clusterId, name: `s-${Math.random().toString(36).slice(2, 8)}` }) },
    "topology write": { type: "mutation", path: "servers.create", input: () => ({ clusterId, name: `srv-${Math.random().toString(36).slice(2, 8)}`, address: "198.51.100.7" }) },
    "owner only: team": { type: "query", path: "operators.list", input: () => undefined },
    "owner only: roles": { type: "mutation", path: "operators.setRole", input: () => ({ operatorId: owner.operatorId, role: "owner" }) },
    "owner only: API tokens": { type: "mutation", path: "apiTokens.create", input: () => ({ name: "minted", scopes: ["read"] }) },
    "owner only: token list": { type: "query", path: "apiTokens.list", input: () => undefined },
    "owner only: own password": { type: "mutation", path: "auth.changePassword", input: () => ({ currentPassword: "x", newPassword: "granite-willow-beacon-58" }) },
  } as const;
  type Kind = keyof typeof kinds;
  const allowed: Record<string, Kind[]> = {
    read: ["read"],
    "subscribers:write": ["subscribers write"],
    "topology:write": ["topology write"],
    "read + subscribers:write + topology:write": ["read", "subscribers write", "topology write"],
  };
  const scopesOf = (label: string) => label.split(" + ") as ApiScope[];
  const cases = Object.keys(allowed).flatMap((label) => (Object.keys(kinds) as Kind[]).map((kind) => [label, kind] as const));

  it.each(cases)("a token with %s calling a %s procedure", async (label, kind) => {
    const k = kinds[kind];
    const a = await call(k.type, k.path, k.input(), bearer(await token(scopesOf(label))));
    if (allowed[label]!.includes(kind)) {
      expect(a.status, message(a)).toBe(200);
      return;
    }
    expect(a.status, message(a)).toBe(403);
    expect(a.body.error?.json?.data?.code).toBe("FORBIDDEN");
    if (kind.startsWith("owner only")) expect(message(a)).toMatch(/^Owner only: API tokens cannot/);
    else expect(message(a)).toBe(`${k.path} needs the ${{ read: "read", "subscribers write": "subscribers:write", "topology write": "topology:write" }[kind as "read"]} scope: this token has ${scopesOf(label).join(", ")}`);
  });
});

describe("the scope each procedure declares", () => {
  const procedures = Object.entries((appRouter as unknown as { _def: { procedures: Record<string, { _def: { type: string; meta?: ProcedureMeta } }> } })._def.procedures);
  const scopeOf = (p: string) => procedures.find(([name]) => name === p)![1]._def.meta?.scope;

  it("every query needs read, except the team's, the tokens' and an operator's own second factor (owner only) and the alert targets' (closed to tokens)", () => {
    for (const [name, proc] of procedures) {
      // auth.status is public: it answers anyone, signed in or not.
      if (proc._def.type === "mutation" || name === "auth.status") continue;
      // Alert targets hold webhook URLs and bot tokens: admin procedures with no scope, which no token opens.
      const expected = /^(operators|apiTokens|twoFactor)\./.test(name) ? "owner" : /^alerts\./.test(name) ? undefined : "read";
      expect(proc._def.meta?.scope, name).toBe(expected);
    }
  });

  it("subscriber writes need subscribers:write; cluster, server, inbound, route, topology and probe writes need topology:write", () => {
    const mutations = procedures.filter(([, p]) => p._def.type === "mutation").map(([n]) => n);
    for (const name of mutations.filter((n) => n.startsWith("subscribers."))) expect(scopeOf(name), name).toBe("subscribers:write");
    // Discarding a server's reported usage is the owner's alone (issue 21): no token may.
    const ownerOnly = new Set(["monitoring.discardReportedUsage"]);
    for (const name of ownerOnly) expect(scopeOf(name), name).toBe("owner");
    // Opening private destinations to subscribers (issue 21), deleting the demo cluster (issue 25) and any cluster (issue 27)
    // are for a signed-in admin: no scope, so no token opens them.
    const closedToTokens = new Set(["clusters.setAllowedPrivateDestinations", "clusters.deleteDemo", "clusters.delete"]);
    for (const name of closedToTokens) expect(scopeOf(name), name).toBeUndefined();
    for (const name of mutations.filter((n) => /^(clusters|servers|inbounds|routes|topology|monitoring)\./.test(n) && !ownerOnly.has(n) && !closedToTokens.has(n))) expect(scopeOf(name), name).toBe("topology:write");
    expect(mutations.filter((n) => n.startsWith("subscribers.")).length).toBeGreaterThan(3);
  });

  it("no mutation is open to a read-only token, and the team, tokens and passwords are open to none", () => {
    for (const [name, proc] of procedures) {
      if (proc._def.type === "mutation") expect(proc._def.meta?.scope, name).not.toBe("read");
      if (/^(operators|apiTokens|twoFactor)\.|^auth\.(changePassword|logout)$/.test(name)) expect(proc._def.meta?.scope, name).toBe("owner");
    }
  });
});

describe("the agent's routes take agent tokens only", () => {
  it("an API token of every scope, an owner's and a viewer's session and a subscriber's token get 401 from the config (deltas and compression asked) and the report, and nothing is read or written", async () => {
    const every = await token(["read", "subscribers:write", "topology:write", "backup"]);
    const viewerCookie = await app.cookie("viewer");
    const created = await call("mutation", "subscribers.create", { clusterId, name: `edge-${Math.random().toString(36).slice(2, 8)}` }, { cookie: ownerCookie });
    const subscriberToken = (created.body.result?.data?.json as { token: string }).token;
    expect(subscriberToken).toEqual(expect.any(String));
    for (const headers of [bearer(every), { cookie: ownerCookie }, { cookie: viewerCookie }, bearer(subscriberToken)]) {
      const config = await fetch(`${app.url}/api/agent/config?delta=1&scheme=2&wait=1`, { headers: { ...headers, "if-none-match": '"AbC_1-x"', "accept-encoding": "br, gzip" } });
      expect(config.status).toBe(401);
      expect(config.headers.get("content-encoding")).toBeNull();
      expect(await config.json()).toEqual({ error: expect.stringMatching(/agent token|bearer token/) });
      // A well-formed report claiming a link's worth of traffic: refused before it is read.
      const claim = { listenerAlive: true, serviceRunning: true, usersOnline: 1, rxBps: 1e10, txBps: 1e10, cpu: 1, memory: 1, neighbours: [] };
      for (const body of ["{}", JSON.stringify(claim)]) {
        const report = await fetch(`${app.url}/api/agent/report`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body });
        expect(report.status).toBe(401);
      }
      // A heartbeat, bare or claiming a load past any link (which would raise an alert from an agent): 401.
      for (const body of [undefined, JSON.stringify({ load: { usersOnline: 1, rxBps: 1e15, txBps: 1e15 } })]) {
        const beat = await fetch(`${app.url}/api/agent/heartbeat`, { method: "POST", headers: { ...headers, ...(body ? { "content-type": "application/json" } : {}) }, body });
        expect(beat.status).toBe(401);
      }
    }
    // And the other way: an agent token opens no procedure, not even the health it feeds.
    const server = await call("mutation", "servers.create", { clusterId, name: `edge-${Math.random().toString(36).slice(2, 8)}`, address: "192.0.2.80" }, { cookie: ownerCookie });
    const agentToken = (server.body.result?.data?.json as { agentToken: string }).agentToken;
    expect(agentToken).toEqual(expect.any(String));
    const health = await call("query", "monitoring.health", { clusterId }, bearer(agentToken));
    expect(health.status).toBe(401);
    expect(message(health)).toBe("Unknown or wrong API token");
  });
});

describe("bearer requests", () => {
  it("skip the browser origin check, which still guards cookies", async () => {
    const crossSite = { origin: "https://evil.example", "sec-fetch-site": "cross-site" };
    const name = () => `x-${Math.random().toString(36).slice(2, 8)}`;
    const withToken = await call("mutation", "subscribers.create", { clusterId, name: name() }, { ...bearer(await token(["subscribers:write"])), ...crossSite });
    expect(withToken.status, message(withToken)).toBe(200);
    const withCookie = await call("mutation", "subscribers.create", { clusterId, name: name() }, { cookie: ownerCookie, ...crossSite });
    expect(withCookie.status).toBe(403);
    expect(message(withCookie)).toMatch(/Cross-site request refused/);
  });

  it("are the token and nothing else: a wrong token next to a good cookie is 401, even on public procedures", async () => {
    const wrong = newApiToken().token;
    for (const [type, procedure] of [
      ["query", "clusters.list"],
      ["query", "auth.status"],
    ] as const) {
      const a = await call(type, procedure, undefined, { ...bearer(wrong), cookie: ownerCookie });
      expect(a.status, procedure).toBe(401);
      expect(message(a)).toBe("Unknown or wrong API token");
    }
    for (const header of ["Bearer", "Bearer ", "bearer  nope", `Bearer ${wrong} extra`]) {
      expect((await call("query", "clusters.list", undefined, { authorization: header, cookie: ownerCookie })).status, header).toBe(401);
    }
    // Another scheme is not a token: the cookie is used.
    expect((await call("query", "clusters.list", undefined, { authorization: "Basic Zm9vOmJhcg==", cookie: ownerCookie })).status).toBe(200);
  });

  it("are refused with 401 once the token expired or was revoked", async () => {
    const t = await token(["read"], "short-lived", new Date(Date.now() + 60_000));
    expect((await call("query", "clusters.list", undefined, bearer(t))).status).toBe(200);
    // Its expiry passes (moved into the past in the database rather than waited for).
    await app.database.db.update(apiTokens).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(apiTokens.name, "short-lived"));
    const expired = await call("query", "clusters.list", undefined, bearer(t));
    expect(expired.status).toBe(401);
    expect(message(expired)).toMatch(/^This API token expired on /);

    const created = await call("mutation", "apiTokens.create", { name: "to-revoke", scopes: ["read"] }, { cookie: ownerCookie });
    const { id, token: secret } = created.body.result?.data?.json as { id: string; token: string };
    expect((await call("query", "clusters.list", undefined, bearer(secret))).status).toBe(200);
    expect((await call("mutation", "apiTokens.revoke", { tokenId: id }, { cookie: ownerCookie })).status).toBe(200);
    const revoked = await call("query", "clusters.list", undefined, bearer(secret));
    expect(revoked.status).toBe(401);
    expect(message(revoked)).toBe("This API token was revoked");
    await app.database.db.delete(loginThrottle);
  });

  it("do no more than their creator may now: a creator demoted to viewer leaves a read-only token", async () => {
    const [op] = await app.database.db.insert(operators).values({ username: "soon-viewer", passwordHash: "x", role: "admin" }).returning();
    const t = (await createApiToken(app.database.db, { operatorId: op!.id, username: op!.username }, { name: "demoted-bot", scopes: ["read", "subscribers:write"] })).token;
    const create = () => call("mutation", "subscribers.create", { clusterId, name: `d-${Math.random().toString(36).slice(2, 8)}` }, bearer(t));
    expect((await create()).status).toBe(200);
    await app.database.db.update(operators).set({ role: "viewer" }).where(eq(operators.id, op!.id));
    const refused = await create();
    expect(refused.status).toBe(403);
    expect(message(refused)).toBe("The operator who created this token is a viewer now: it can only read");
    expect((await call("query", "clusters.list", undefined, bearer(t))).status).toBe(200);
  });

  it("write to the audit log under the token's name", async () => {
    const t = await token(["read", "subscribers:write"], "shop-bot");
    const created = await call("mutation", "subscribers.create", { clusterId, name: "audited-by-token" }, bearer(t));
    expect(created.status).toBe(200);
    const rows = await app.database.db.select().from(auditLog).where(eq(auditLog.action, "subscriber.create"));
    expect(rows.find((r) => r.summary.includes("audited-by-token"))).toMatchObject({ operatorName: "token:shop-bot", operatorId: owner.operatorId, clusterId });
    // And the audit page's query shows it (read through the same token).
    const page = await call("query", "audit.list", { clusterId }, bearer(t));
    expect((page.body.result?.data?.json as { items: Array<{ operatorName: string; summary: string }> }).items.find((i) => i.summary.includes("audited-by-token"))?.operatorName).toBe("token:shop-bot");
  });
});

describe("managing tokens", () => {
  it("the owner and admins create, list and revoke; viewers cannot", async () => {
    const adminCookie = await app.cookie("admin");
    const viewerCookie = await app.cookie("viewer");
    const created = await call("mutation", "apiTokens.create", { name: "by-admin", scopes: ["read"], expiresAt: null }, { cookie: adminCookie });
    expect(created.status, message(created)).toBe(200);
    const list = await call("query", "apiTokens.list", undefined, { cookie: ownerCookie });
    expect((list.body.result?.data?.json as Array<{ name: string; createdBy: string; expiresAt: Date | null }>).find((x) => x.name === "by-admin")).toMatchObject({ createdBy: "http-admin", expiresAt: null });
    expect(JSON.stringify(list.body)).not.toContain((created.body.result?.data?.json as { token: string }).token);
    for (const [type, procedure, input] of [
      ["query", "apiTokens.list", undefined],
      ["mutation", "apiTokens.create", { name: "by-viewer", scopes: ["read"] }],
    ] as const) {
      const a = await call(type, procedure, input, { cookie: viewerCookie });
      expect(a.status, procedure).toBe(403);
      expect(message(a)).toBe("Only the owner and admins manage API tokens");
    }
  });

  it("bad input gets a 400 naming the field, and creates nothing", async () => {
    const before = await call("query", "apiTokens.list", undefined, { cookie: ownerCookie });
    const cases: Array<[unknown, string, RegExp]> = [
      [{ name: "bot", scopes: ["read", "admin"] }, "scopes.1", /^scopes\.1: Unknown scope: use read, subscribers:write, topology:write/],
      [{ name: "bot", scopes: [] }, "scopes", /^scopes: Choose at least one scope/],
      [{ name: "bot", scopes: ["read"], expiresAt: new Date(Date.now() - 60_000) }, "expiresAt", /^expiresAt: Expiry must be in the future/],
      [{ name: "   ", scopes: ["read"] }, "name", /^name: Name is required/],
      [{ name: "shop bot", scopes: ["read"] }, "name", /^name: Name: 1–40 letters/],
    ];
    for (const [input, field, pattern] of cases) {
      const a = await call("mutation", "apiTokens.create", input, { cookie: ownerCookie });
      expect(a.status, JSON.stringify(input)).toBe(400);
      expect(message(a)).toMatch(pattern);
      expect(Object.keys(a.body.error?.json?.data?.fieldErrors ?? {})).toContain(field);
    }
    const after = await call("query", "apiTokens.list", undefined, { cookie: ownerCookie });
    expect(after.body).toEqual(before.body);
  });
});

describe("throttling", () => {
  it(`wrong tokens from one address get 401 ${FREE_ATTEMPTS.token} times, then 429 with Retry-After; a valid token is still accepted (issue 21, point 9)`, async () => {
    await app.database.db.delete(loginThrottle);
    const good = await token(["read"]);
    const statuses: number[] = [];
    for (let i = 0; i < FREE_ATTEMPTS.token + 2; i++) statuses.push((await call("query", "clusters.list", undefined, bearer(newApiToken().token))).status);
    expect(statuses).toEqual([...Array(FREE_ATTEMPTS.token).fill(401), 429, 429]);
    const blocked = await call("query", "clusters.list", undefined, bearer(newApiToken().token));
    expect(Number(blocked.retryAfter)).toBeGreaterThan(0);
    expect(message(blocked)).toMatch(/^Too many wrong API tokens from this address: try again in \d+ s$/);
    // The valid token is never refused because of failures that are not its own.
    expect((await call("query", "clusters.list", undefined, bearer(good))).status).toBe(200);
    // Sessions are not held back by the token throttle.
    expect((await call("query", "clusters.list", undefined, { cookie: ownerCookie })).status).toBe(200);
    // Wrong tokens keep their backoff.
    expect((await call("query", "clusters.list", undefined, bearer(newApiToken().token))).status).toBe(429);
    expect((await app.database.db.select().from(clusters)).length).toBeGreaterThan(0);
  });

  it("wrong secrets for a real token's id are held back, the valid token is not, and its success clears them", async () => {
    await app.database.db.delete(loginThrottle);
    const good = await token(["read"]);
    const [, id] = /^rbt_([0-9a-f]+)_/.exec(good)!;
    const wrong = `rbt_${id}_${newApiToken().secret}`;
    const statuses: number[] = [];
    for (let i = 0; i < FREE_ATTEMPTS.token + 1; i++) statuses.push((await call("query", "clusters.list", undefined, bearer(wrong))).status);
    expect(statuses).toEqual([...Array(FREE_ATTEMPTS.token).fill(401), 429]);
    expect((await call("query", "clusters.list", undefined, bearer(good))).status).toBe(200);
    expect(await app.database.db.select().from(loginThrottle)).toEqual([]);
    expect((await call("query", "clusters.list", undefined, bearer(wrong))).status).toBe(401);
  });
});
