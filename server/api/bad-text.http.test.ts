/**
 * Issue 21, point 7, over real HTTP: strings holding U+0000 or a lone surrogate are refused
 * with a 400 naming the field, by every tRPC procedure (search, alert URL and secret, …) and
 * by the agent report (its six free-text fields), and nothing is stored.
 */
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alertTargets, serverAgentState, servers } from "@/db/schema";
import { newAgentToken } from "@/server/auth/tokens";
import { findBadText } from "@/core/text-safety";
import { startTestApp, trpcHttp, type TestApp } from "./http-testing";

process.env.DATA_DIR ??= mkdtempSync(path.join(os.tmpdir(), "rb-bad-text-"));

const NUL = "a\u0000b";
const LONE_HIGH = "x\uD800y";
const LONE_LOW = "\uDC00";

describe("findBadText", () => {
  it("finds NUL and lone surrogates in values and keys, with the path; pairs and ordinary text pass", () => {
    expect(findBadText({ a: [1, { b: NUL }] })).toEqual({ path: "a.1.b", reason: "contains a NUL byte (U+0000)" });
    expect(findBadText({ a: LONE_HIGH })?.reason).toBe("contains a lone surrogate (not a Unicode character)");
    expect(findBadText([LONE_LOW])?.path).toBe("0");
    expect(findBadText(NUL)).toEqual({ path: "", reason: "contains a NUL byte (U+0000)" });
    expect(findBadText({ ok: "x", ["k\u0000"]: 1 })).toEqual({ path: "", reason: "a key contains a NUL byte (U+0000)" });
    expect(findBadText(new Map([["m", new Set([NUL])]]))?.path).toBe("m.0");
    // A surrogate pair is one character (an emoji), not a lone surrogate.
    expect(findBadText({ a: "🇺🇸 ok \uD83D\uDE00", d: new Date(0), n: null, x: 1 })).toBeNull();
    // The first bad field in order.
    expect(findBadText({ first: NUL, second: LONE_LOW })?.path).toBe("first");
  });
});

describe("over HTTP", () => {
  let app: TestApp;
  let cookie: string;
  let clusterId: string;

  beforeAll(async () => {
    app = await startTestApp({ devtools: false });
    cookie = await app.cookie("owner");
    const created = await trpcHttp(app, cookie, "mutation", "clusters.create", { name: "Text" });
    clusterId = (created.body.result?.data?.json as { id: string }).id;
  }, 60_000);
  afterAll(async () => app?.close());

  it("a field named like a prototype key is refused with a 400 naming it, not a 500", async () => {
    // (A "__proto__" key never reaches the procedures: the input arrives without it.)
    for (const key of ["constructor", "prototype"]) {
      // Written by hand: superjson (trpcHttp's encoder) refuses to send such a key at all.
      const body = `{"json":{"name":"Proto","${key}":"x\\ud800y"}}`;
      const res = await fetch(`${app.url}/api/trpc/clusters.create`, { method: "POST", headers: { "content-type": "application/json", cookie }, body });
      expect(res.status, key).toBe(400);
      const answer = (await res.json()) as { error: { json: { message: string } } };
      expect(answer.error.json.message).toBe(`${key}: contains a lone surrogate (not a Unicode character)`);
    }
  });

  it("the subscribers search: 400 naming the field, for NUL and for lone surrogates", async () => {
    for (const [procedure, bad] of [
      ["subscribers.page", NUL],
      ["subscribers.page", LONE_HIGH],
      ["subscribers.list", NUL],
      ["subscribers.list", LONE_LOW],
    ] as const) {
      const r = await trpcHttp(app, cookie, "query", procedure, { clusterId, search: bad });
      expect(r.status, `${procedure} ${JSON.stringify(bad)}`).toBe(400);
      expect(r.body.error?.json?.message).toMatch(/^search: contains a (NUL byte|lone surrogate)/);
      expect(Object.keys(r.body.error?.json?.data?.fieldErrors ?? {})).toEqual(["search"]);
    }
  });

  it("an alert target's URL and secret: 400 naming the field, nothing stored", async () => {
    const base = { name: "hook", kind: "webhook", url: "https://example.invalid/hook", secret: "s".repeat(20), events: ["server.down"] };
    for (const [field, value] of [
      ["url", `https://example.invalid/${NUL}`],
      ["secret", `super-secret-value-${NUL}`],
      ["secret", `super-secret-value-${LONE_HIGH}`],
      ["name", `hook${LONE_LOW}`],
    ] as const) {
      const r = await trpcHttp(app, cookie, "mutation", "alerts.create", { ...base, [field]: value });
      expect(r.status, field).toBe(400);
      expect(r.body.error?.json?.message, field).toMatch(new RegExp(`^${field}: contains a`));
      expect(r.body.error?.json?.data?.fieldErrors?.[field], field).toMatch(/^Contains a/);
    }
    expect(await app.database.db.select().from(alertTargets)).toEqual([]);
  });

  it("a bad key or a bad string deep in an input names where it is", async () => {
    const r = await trpcHttp(app, cookie, "mutation", "subscribers.bulk", {
      clusterId,
      selection: { matching: { search: NUL } },
      action: { kind: "delete" },
    });
    expect(r.status).toBe(400);
    expect(r.body.error?.json?.message).toBe("selection.matching.search: contains a NUL byte (U+0000)");
  });

  it("the agent report's free-text fields: 400 naming the field, nothing stored", async () => {
    const base = { listenerAlive: true, serviceRunning: true, usersOnline: 0, rxBps: 0, txBps: 0, cpu: 1, memory: 1, neighbours: [] };
    const inboundId = "00000000-0000-4000-8000-000000000001";
    const cases: Array<[string, Record<string, unknown>]> = [
      ["users.0.email", { instance: "instance-1", seq: 1, users: [{ email: NUL, up: 1, down: 1 }] }],
      ["unservedInbounds.0.reason", { unservedInbounds: [{ inboundId, reason: LONE_HIGH }] }],
      ["configVersion", { configVersion: NUL }],
      ["configError", { configError: `bad${LONE_LOW}` }],
      ["core.version", { core: { kind: "v2ray", version: NUL } }],
      ["agentVersion", { agentVersion: LONE_HIGH }],
    ];
    for (const [field, extra] of cases) {
      // A server per case: each agent may send a few reports in a burst, no more.
      const agent = newAgentToken();
      await app.database.db.insert(servers).values({ clusterId, name: `agent-${field}`, address: "127.0.0.1", agentTokenHash: agent.hash });
      const res = await fetch(`${app.url}/api/agent/report`, {
        method: "POST",
        headers: { authorization: `Bearer ${agent.token}`, "content-type": "application/json" },
        body: JSON.stringify({ ...base, ...extra }),
      });
      expect(res.status, field).toBe(400);
      expect(((await res.json()) as { error: string }).error, field).toMatch(new RegExp(`^${field.replace(/\./g, "\\.")}: contains a`));
    }
    expect(await app.database.db.select().from(serverAgentState)).toEqual([]);
  });
});
